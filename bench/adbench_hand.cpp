// ADBench hand tracking (HT): the residuals between N observed 3-D points and a skinned hand
// mesh posed by 26 parameters (../shared/adbench/README.md; the model as ADBench's reference
// hand_objective), and their dense Jacobian, computed four ways:
//   fluxion_tensor — fx::Tensor ops batched over bones, vertices and points; the Jacobian by
//                    forward mode, one fx::jvp per pose parameter (26), plus two for the
//                    surface coordinates in the complicated variant;
//   fluxion_scalar — generic templated model code run once on fx::Dual<double, 26> (28 in the
//                    complicated variant): every column in one pass;
//   torch          — the same batched program in libtorch (f64, unfused per-op code), its
//                    Jacobian by libtorch's forward-mode AD (dual tensors), one pass per column;
//   manual         — the derivative by the chain rule, by hand (ADBench's "Manual").
// Two variants: "simple" (each point corresponds to a mesh vertex: 3N × 26) and "complicated"
// (each point lies on a triangle at barycentric coordinates us, which are parameters too: the
// Jacobian is ADBench's compact 3N × 28, the two us columns first, as its point's own pair).
// All four agree to max |a - b| / max |b| <= 1e-8 (checked and printed), and before timing
// the manual Jacobian is checked against central differences, also at a pose with zero global
// rotation (ADBench's identity branch). Timing is ADBench's (bench/adbench_timing.hpp),
// objective and Jacobian separately, preparation untimed, one thread; implementations take
// their samples in turn, and a ratio is the median of the per-round ratios.
//
//   ./build/bench/adbench_hand [--dir ../shared/adbench/hand]
//       [--sets simple/hand1,complicated/hand1,...] [--impls fluxion_tensor,fluxion_scalar,...]
//       [--min-time 0.5] [--samples 10] [--budget 5]
//   hand_simple_hand1_fluxion_scalar_jacobian_s=...  hand_simple_hand1_ratio_vs_manual=...
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <fluxion/ad/dual.hpp>
#include <fluxion/ad/forward.hpp>
#include <fluxion/data/adbench.hpp>
#include <fluxion/ops.hpp>

#ifdef FLUXION_HAVE_TORCH
#include <torch/csrc/autograd/forward_grad.h>
#include <torch/torch.h>
#endif

#include "adbench_timing.hpp"

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {
using fx::bench::max_rel_err;
using Hand = fx::data::HandInput;

constexpr int kTheta = 26;  // global rotation (3), translation (3), 5 fingers × 4 angles
constexpr int kUs = 2;      // surface coordinates per point (complicated variant)

// Columns of the Jacobian: 26, or 2 + 26 with the point's own us first.
int columns(const Hand& h) { return h.complicated() ? kUs + kTheta : kTheta; }

// ---- ADBench's model, generic over the scalar type ---------------------------------------------
// Which pose parameters turn each bone (ADBench's to_pose_params): finger f's first bone
// (2 + 4f) takes two angles, about x and z, its next two one each (about x), its tip none; the
// wrist and forearm none. -1: none.
struct BonePose {
  int x = -1, z = -1;
};

std::vector<BonePose> bone_poses(const Hand& h) {
  FX_CHECK(h.theta.size() == size_t(kTheta) && h.bones() >= 22, "adbench_hand: the model needs ",
           kTheta, " pose parameters and 22 bones, got ", h.theta.size(), " and ", h.bones());
  std::vector<BonePose> p(size_t(h.bones()));
  int t = 6;
  for (int f = 0; f < 5; ++f) {
    const size_t b = size_t(2 + 4 * f);
    p[b].x = t++;
    p[b].z = t++;
    p[b + 1].x = t++;
    p[b + 2].x = t++;
  }
  return p;
}

// c = a b for row-major 4 × 4 matrices of any scalar types.
template <class A, class B, class C>
void mul4(const A* a, const B* b, C* c) {
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      C s = a[4 * i] * b[j];
      for (int k = 1; k < 4; ++k) s = s + a[4 * i + k] * b[4 * k + j];
      c[4 * i + j] = s;
    }
}

// ADBench's euler_angles_to_rotation_matrix: Rz(z) Ry(y) Rx(x), embedded in a 4 × 4 transform.
template <class T>
void euler_transform(const T& x, const T& y, const T& z, T* H) {
  using std::cos, std::sin;
  const T cx = cos(x), sx = sin(x), cy = cos(y), sy = sin(y), cz = cos(z), sz = sin(z);
  const T Rz[9] = {cz, -sz, T(0), sz, cz, T(0), T(0), T(0), T(1)};
  const T Ry[9] = {cy, T(0), -sy, T(0), T(1), T(0), sy, T(0), cy};
  const T Rx[9] = {T(1), T(0), T(0), T(0), cx, -sx, T(0), sx, cx};
  T Rzy[9];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      Rzy[3 * i + j] = Rz[3 * i] * Ry[j] + Rz[3 * i + 1] * Ry[3 + j] + Rz[3 * i + 2] * Ry[6 + j];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) H[4 * i + j] = T(i == 3 && j == 3 ? 1 : 0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      H[4 * i + j] = Rzy[3 * i] * Rx[j] + Rzy[3 * i + 1] * Rx[3 + j] + Rzy[3 * i + 2] * Rx[6 + j];
}

// ADBench's angle_axis_to_rotation_matrix (row-major 3 × 3); identity below |w| = 1e-4.
template <class T>
void angle_axis_rotation(const T* w, T* R) {
  using std::cos, std::sin, std::sqrt;
  const T n = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
  if (n < 0.0001) {
    for (int i = 0; i < 9; ++i) R[i] = T(i % 4 == 0 ? 1 : 0);
    return;
  }
  const T x = w[0] / n, y = w[1] / n, z = w[2] / n, s = sin(n), c = cos(n);
  R[0] = x * x + (1 - x * x) * c;
  R[1] = x * y * (1 - c) - z * s;
  R[2] = x * z * (1 - c) + y * s;
  R[3] = x * y * (1 - c) + z * s;
  R[4] = y * y + (1 - y * y) * c;
  R[5] = y * z * (1 - c) - x * s;
  R[6] = x * z * (1 - c) - y * s;
  R[7] = z * y * (1 - c) + x * s;
  R[8] = z * z + (1 - z * z) * c;
}

// The posed, skinned, globally transformed vertices (vertices × 3, row-major).
template <class T>
void vertex_positions(const Hand& h, const std::vector<BonePose>& poses, const T* theta,
                      std::vector<T>& V) {
  const int nb = h.bones(), nv = h.vertices();
  std::vector<T> absolutes(size_t(16) * nb), transforms(size_t(16) * nb);
  for (int b = 0; b < nb; ++b) {
    const BonePose& p = poses[size_t(b)];
    T H[16], relative[16];
    euler_transform(p.x >= 0 ? theta[p.x] : T(0), T(0), p.z >= 0 ? theta[p.z] : T(0), H);
    mul4(&h.base_relatives[size_t(16) * b], H, relative);
    T* A = &absolutes[size_t(16) * b];
    const int parent = h.parents[size_t(b)];
    if (parent < 0) std::copy_n(relative, 16, A);
    else mul4(&absolutes[size_t(16) * parent], relative, A);
    mul4(A, &h.inverse_base_absolutes[size_t(16) * b], &transforms[size_t(16) * b]);
  }
  T R[9];
  angle_axis_rotation(theta, R);
  V.assign(size_t(3) * nv, T(0));
  for (int v = 0; v < nv; ++v) {
    const double* x = &h.base_positions[size_t(3) * v];
    T p[3] = {T(0), T(0), T(0)};
    for (int b = 0; b < nb; ++b) {
      const double w = h.weights[size_t(v) * nb + b];
      if (w == 0) continue;
      const T* M = &transforms[size_t(16) * b];
      for (int i = 0; i < 3; ++i)
        p[i] =
            p[i] + w * (M[4 * i] * x[0] + M[4 * i + 1] * x[1] + M[4 * i + 2] * x[2] + M[4 * i + 3]);
    }
    for (int i = 0; i < 3; ++i)
      V[size_t(3) * v + i] =
          R[3 * i] * p[0] + R[3 * i + 1] * p[1] + R[3 * i + 2] * p[2] + theta[3 + i];
  }
}

// Point i's residual (3 values): the observed point − its hand point. u: the point's surface
// coordinates (complicated variant), else unused.
template <class T>
void point_residual(const Hand& h, const std::vector<T>& V, int i, const T* u, T* err) {
  const double* pt = &h.points[size_t(3) * i];
  const size_t c = size_t(h.correspondences[size_t(i)]);
  if (!h.complicated()) {
    for (int k = 0; k < 3; ++k) err[k] = pt[k] - V[3 * c + k];
    return;
  }
  const int* tri = &h.triangles[3 * c];
  const T u2 = 1.0 - u[0] - u[1];
  for (int k = 0; k < 3; ++k)
    err[k] = pt[k] - (u[0] * V[size_t(3 * tri[0] + k)] + u[1] * V[size_t(3 * tri[1] + k)] +
                      u2 * V[size_t(3 * tri[2] + k)]);
}

void objective_scalar(const Hand& h, const std::vector<BonePose>& poses, std::vector<double>& V,
                      std::vector<double>& err) {
  vertex_positions(h, poses, h.theta.data(), V);
  err.resize(size_t(3) * h.npoints());
  for (int i = 0; i < h.npoints(); ++i)
    point_residual(h, V, i, h.complicated() ? &h.us[size_t(2) * i] : nullptr, &err[size_t(3) * i]);
}

// ---- (b) fluxion scalar AD: the generic code on fx::Dual ----------------------------------------
// The generic code instantiated on Dual, with everything it calls inlined (as in adbench_ba:
// without the flatten, GCC stops inlining Dual's operators in large callers).
template <int N>
[[gnu::flatten]] void jacobian_scalar(const Hand& h, const std::vector<BonePose>& poses,
                                      std::vector<double>& J) {
  using D = fx::Dual<double, N>;
  const int off = N - kTheta;  // the us columns come first
  std::vector<D> theta(kTheta), V;
  for (int k = 0; k < kTheta; ++k) {
    theta[size_t(k)] = D(h.theta[size_t(k)]);
    theta[size_t(k)].partial(off + k) = 1;
  }
  vertex_positions(h, poses, theta.data(), V);
  J.resize(size_t(3) * h.npoints() * N);
  for (int i = 0; i < h.npoints(); ++i) {
    D u[kUs], err[3];
    for (int k = 0; off && k < kUs; ++k) {  // each residual sees its own point's us only
      u[k] = D(h.us[size_t(2) * i + k]);
      u[k].partial(k) = 1;
    }
    point_residual(h, V, i, u, err);
    for (int r = 0; r < 3; ++r)
      std::copy_n(err[r].partials().begin(), N, &J[(size_t(3) * i + r) * N]);
  }
}

void jacobian_dual(const Hand& h, const std::vector<BonePose>& poses, std::vector<double>& J) {
  if (h.complicated()) jacobian_scalar<kUs + kTheta>(h, poses, J);
  else jacobian_scalar<kTheta>(h, poses, J);
}

// ---- (d) manual ---------------------------------------------------------------------------------
// V_v = R(ω) Σ_b w_vb (A_b B_b⁻¹ x_v)[0:3] + t, A_b = A_parent(b) · base_b · E(θ_b):
//   ∂V_v/∂t = I;  ∂V_v/∂ω_k = (∂R/∂ω_k) p_v (Rodrigues' derivative below, 0 in the identity
//   branch);  ∂V_v/∂θ_j = R Σ_b w_vb (∂A_b/∂θ_j B_b⁻¹ x_v)[0:3], where for the bone β that θ_j
//   turns ∂A_β = A_parent(β) · base_β · ∂E/∂θ_j and down its subtree ∂A_b = ∂A_parent(b) · rel_b.
// ∂E/∂x = Rz (∂Rx/∂x), ∂E/∂z = (∂Rz/∂z) Rx (Ry = I: ADBench's third angle is always 0).

// ∂R/∂ω_k for R = c I + (1 − c) u uᵀ + s [u]×, u = ω/n, n = |ω|:
//   u_k (−s I + s u uᵀ + c [u]×) + (1 − c)(a uᵀ + u aᵀ) + s [a]×,  a = ∂u/∂ω_k = (e_k − u_k u)/n.
void angle_axis_derivatives(const double* w, double dR[3][9]) {
  const double n = std::sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
  if (n < 0.0001) {
    for (int k = 0; k < 3; ++k) std::fill_n(dR[k], 9, 0.0);
    return;
  }
  const double u[3] = {w[0] / n, w[1] / n, w[2] / n}, s = std::sin(n), c = std::cos(n);
  auto cross = [](const double* v, int i, int j) {  // [v]× entry (i, j)
    const int k = 3 - i - j;
    if (i == j) return 0.0;
    const double sign = (j - i + 3) % 3 == 1 ? -1.0 : 1.0;
    return sign * v[k];
  };
  for (int k = 0; k < 3; ++k) {
    double a[3];
    for (int i = 0; i < 3; ++i) a[i] = ((i == k ? 1.0 : 0.0) - u[k] * u[i]) / n;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        dR[k][3 * i + j] = u[k] * (-s * (i == j) + s * u[i] * u[j] + c * cross(u, i, j)) +
                           (1 - c) * (a[i] * u[j] + u[i] * a[j]) + s * cross(a, i, j);
  }
}

// V (vertices × 3) and dV (vertices × 3 × 26).
void vertex_jacobian_manual(const Hand& h, const std::vector<BonePose>& poses,
                            std::vector<double>& V, std::vector<double>& dV) {
  const int nb = h.bones(), nv = h.vertices();
  const double* theta = h.theta.data();
  std::vector<double> rel(size_t(16) * nb), A(size_t(16) * nb), T(size_t(16) * nb);
  // Per pose parameter j (6..25): ∂E/∂θ_j embedded in a 4 × 4 with zero last row and column.
  std::vector<std::array<double, 16>> dE(kTheta);
  std::vector<int> bone_of(kTheta, -1);
  for (int b = 0; b < nb; ++b) {
    const BonePose& p = poses[size_t(b)];
    const double x = p.x >= 0 ? theta[p.x] : 0, z = p.z >= 0 ? theta[p.z] : 0;
    double H[16];
    euler_transform(x, 0.0, z, H);
    mul4(&h.base_relatives[size_t(16) * b], H, &rel[size_t(16) * b]);
    const int parent = h.parents[size_t(b)];
    if (parent < 0) std::copy_n(&rel[size_t(16) * b], 16, &A[size_t(16) * b]);
    else mul4(&A[size_t(16) * parent], &rel[size_t(16) * b], &A[size_t(16) * b]);
    mul4(&A[size_t(16) * b], &h.inverse_base_absolutes[size_t(16) * b], &T[size_t(16) * b]);
    const double cx = std::cos(x), sx = std::sin(x), cz = std::cos(z), sz = std::sin(z);
    // E = [[cz, −sz cx, sz sx], [sz, cz cx, −cz sx], [0, sx, cx]].
    if (p.x >= 0) {
      bone_of[size_t(p.x)] = b;
      dE[size_t(p.x)] = {0, sz * sx, sz * cx, 0, 0, -cz * sx, -cz * cx, 0,
                         0, cx,      -sx,     0, 0, 0,        0,        0};
    }
    if (p.z >= 0) {
      bone_of[size_t(p.z)] = b;
      dE[size_t(p.z)] = {-sz, -cz * cx, cz * sx, 0, cz, -sz * cx, sz * sx, 0,
                         0,   0,        0,       0, 0,  0,        0,       0};
    }
  }
  // ∂T_b/∂θ_j for every bone b in the subtree of θ_j's bone (zero elsewhere: flagged by `in`).
  std::vector<double> dT(size_t(16) * nb * kTheta, 0.0), dA(size_t(16) * nb);
  std::vector<char> in(size_t(nb) * kTheta, 0);
  for (int j = 6; j < kTheta; ++j) {
    const int beta = bone_of[size_t(j)];
    for (int b = beta; b < nb; ++b) {
      const int parent = h.parents[size_t(b)];
      double* dAb = &dA[size_t(16) * b];
      if (b == beta) {
        double local[16];
        mul4(&h.base_relatives[size_t(16) * b], dE[size_t(j)].data(), local);
        if (parent < 0) std::copy_n(local, 16, dAb);
        else mul4(&A[size_t(16) * parent], local, dAb);
      } else if (parent >= 0 && in[size_t(parent) * kTheta + j]) {
        mul4(&dA[size_t(16) * parent], &rel[size_t(16) * b], dAb);
      } else {
        continue;
      }
      in[size_t(b) * kTheta + j] = 1;
      mul4(dAb, &h.inverse_base_absolutes[size_t(16) * b], &dT[(size_t(b) * kTheta + j) * 16]);
    }
  }
  double R[9], dR[3][9];
  angle_axis_rotation(theta, R);
  angle_axis_derivatives(theta, dR);
  V.resize(size_t(3) * nv);
  dV.assign(size_t(3) * nv * kTheta, 0.0);
  for (int v = 0; v < nv; ++v) {
    const double* x = &h.base_positions[size_t(3) * v];
    auto apply = [x](const double* M, double* out, double w) {
      for (int i = 0; i < 3; ++i)
        out[i] += w * (M[4 * i] * x[0] + M[4 * i + 1] * x[1] + M[4 * i + 2] * x[2] + M[4 * i + 3]);
    };
    double p[3] = {0, 0, 0}, dp[kTheta][3] = {};
    for (int b = 0; b < nb; ++b) {
      const double w = h.weights[size_t(v) * nb + b];
      if (w == 0) continue;
      apply(&T[size_t(16) * b], p, w);
      for (int j = 6; j < kTheta; ++j)
        if (in[size_t(b) * kTheta + j]) apply(&dT[(size_t(b) * kTheta + j) * 16], dp[j], w);
    }
    double* dv = &dV[size_t(3) * v * kTheta];  // dv[i * 26 + j] = ∂V_v,i/∂θ_j
    for (int i = 0; i < 3; ++i) {
      V[size_t(3) * v + i] =
          R[3 * i] * p[0] + R[3 * i + 1] * p[1] + R[3 * i + 2] * p[2] + theta[3 + i];
      for (int k = 0; k < 3; ++k)
        dv[i * kTheta + k] =
            dR[k][3 * i] * p[0] + dR[k][3 * i + 1] * p[1] + dR[k][3 * i + 2] * p[2];
      dv[i * kTheta + 3 + i] = 1;
      for (int j = 6; j < kTheta; ++j)
        dv[i * kTheta + j] =
            R[3 * i] * dp[j][0] + R[3 * i + 1] * dp[j][1] + R[3 * i + 2] * dp[j][2];
    }
  }
}

// The residual rows from the vertex Jacobian: minus a vertex's rows (simple), or minus the
// barycentric combination, with ∂/∂u0 = −(V_a − V_c), ∂/∂u1 = −(V_b − V_c) (complicated).
void jacobian_manual(const Hand& h, const std::vector<BonePose>& poses, std::vector<double>& V,
                     std::vector<double>& dV, std::vector<double>& J) {
  vertex_jacobian_manual(h, poses, V, dV);
  const int nc = columns(h);
  J.resize(size_t(3) * h.npoints() * nc);
  for (int i = 0; i < h.npoints(); ++i) {
    const size_t c = size_t(h.correspondences[size_t(i)]);
    for (int k = 0; k < 3; ++k) {
      double* row = &J[(size_t(3) * i + k) * nc];
      if (!h.complicated()) {
        const double* d = &dV[(3 * c + k) * kTheta];
        for (int j = 0; j < kTheta; ++j) row[j] = -d[j];
        continue;
      }
      const int* tri = &h.triangles[3 * c];
      const double u0 = h.us[2 * size_t(i)], u1 = h.us[2 * size_t(i) + 1], u2 = 1.0 - u0 - u1;
      const size_t a = size_t(3 * tri[0] + k), b = size_t(3 * tri[1] + k),
                   e = size_t(3 * tri[2] + k);
      row[0] = -(V[a] - V[e]);
      row[1] = -(V[b] - V[e]);
      for (int j = 0; j < kTheta; ++j)
        row[kUs + j] =
            -(u0 * dV[a * kTheta + j] + u1 * dV[b * kTheta + j] + u2 * dV[e * kTheta + j]);
    }
  }
}

// ---- (a) fluxion tensors -----------------------------------------------------------------------
// The model batched: all bones' rotations at once, the bone chain as 22 small products, skinning
// as one (3·bones × 4) @ (4 × vertices) product weighted and summed over bones, the points as
// an index_select of the vertices. The global rotation's identity branch is chosen from the
// parameters' values before the program runs, as ADBench's code branches.
struct FxHand {
  fx::Tensor theta, us;           // (26,), (N, 2) or undefined
  fx::Tensor ex_index, ez_index;  // (bones,) i64 into theta with a 0 appended (index 26)
  fx::Tensor base_rel, inv_base;  // (bones, 4, 4)
  fx::Tensor rest;                // (4, vertices): homogeneous rest positions
  fx::Tensor weights;             // (bones, 1, vertices)
  fx::Tensor corner[3];           // (N,) i64: vertex (simple: corner[0]) or triangle corners
  fx::Tensor points;              // (N, 3)
  fx::Tensor zero1, eye3;         // (1,), (3, 3)
  std::vector<fx::Tensor> theta_seed, us_seed;  // tangents: unit vectors; every u0, every u1
  std::vector<int> parents;
  bool identity_rotation = false;
};

struct HostLayout {  // the index and matrix arrays both tensor programs are built from
  std::vector<int64_t> ex, ez, corner[3];
  std::vector<double> rest, weights;
};

HostLayout host_layout(const Hand& h, const std::vector<BonePose>& poses) {
  HostLayout L;
  const int nb = h.bones(), nv = h.vertices();
  for (const BonePose& p : poses) {
    L.ex.push_back(p.x >= 0 ? p.x : kTheta);
    L.ez.push_back(p.z >= 0 ? p.z : kTheta);
  }
  L.rest.assign(size_t(4) * nv, 1.0);
  for (int v = 0; v < nv; ++v)
    for (int i = 0; i < 3; ++i) L.rest[size_t(i) * nv + v] = h.base_positions[size_t(3) * v + i];
  L.weights.resize(size_t(nb) * nv);
  for (int v = 0; v < nv; ++v)
    for (int b = 0; b < nb; ++b) L.weights[size_t(b) * nv + v] = h.weights[size_t(v) * nb + b];
  for (int i = 0; i < h.npoints(); ++i) {
    const int c = h.correspondences[size_t(i)];
    for (int k = 0; k < (h.complicated() ? 3 : 1); ++k)
      L.corner[k].push_back(h.complicated() ? h.triangles[size_t(3 * c + k)] : c);
  }
  return L;
}

bool small_rotation(const Hand& h) {
  const double* w = h.theta.data();
  return std::sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]) < 0.0001;
}

FxHand fx_prepare(const Hand& h, const std::vector<BonePose>& poses) {
  const HostLayout L = host_layout(h, poses);
  const int64_t nb = h.bones(), nv = h.vertices(), n = h.npoints();
  FxHand t;
  t.theta = fx::from_vector(h.theta, {kTheta});
  if (h.complicated()) t.us = fx::from_vector(h.us, {n, kUs});
  t.ex_index = fx::from_vector(L.ex, {nb});
  t.ez_index = fx::from_vector(L.ez, {nb});
  t.base_rel = fx::from_vector(h.base_relatives, {nb, 4, 4});
  t.inv_base = fx::from_vector(h.inverse_base_absolutes, {nb, 4, 4});
  t.rest = fx::from_vector(L.rest, {4, nv});
  t.weights = fx::from_vector(L.weights, {nb, 1, nv});
  for (int k = 0; k < 3; ++k)
    if (!L.corner[k].empty()) t.corner[k] = fx::from_vector(L.corner[k], {n});
  t.points = fx::from_vector(h.points, {n, 3});
  t.zero1 = fx::zeros({1}, fx::f64);
  t.eye3 = fx::from_vector(std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1}, {3, 3});
  for (int k = 0; k < kTheta; ++k) {
    std::vector<double> e(kTheta, 0.0);
    e[size_t(k)] = 1;
    t.theta_seed.push_back(fx::from_vector(e, {kTheta}));
  }
  for (int k = 0; h.complicated() && k < kUs; ++k) {
    std::vector<double> e(h.us.size(), 0.0);
    for (size_t i = size_t(k); i < e.size(); i += kUs) e[i] = 1;
    t.us_seed.push_back(fx::from_vector(e, {n, kUs}));
  }
  t.parents = h.parents;
  t.identity_rotation = small_rotation(h);
  return t;
}

// Residuals (N, 3) for pose theta (26,) and, in the complicated variant, us (N, 2).
fx::Tensor objective_tensor(const FxHand& t, const fx::Tensor& theta, const fx::Tensor& us) {
  using fx::Tensor;
  const int64_t nb = int64_t(t.parents.size());
  const Tensor ext = fx::concat({theta, t.zero1}, 0);
  const Tensor ex = fx::index_select(ext, 0, t.ex_index), ez = fx::index_select(ext, 0, t.ez_index);
  const Tensor cx = fx::cos(ex), sx = fx::sin(ex), cz = fx::cos(ez), sz = fx::sin(ez);
  const Tensor zero = fx::zeros_like(ex), one = fx::ones_like(ex);
  // Rz(z) Rx(x) (Ry = I), embedded in 4 × 4: ADBench's product with its zero middle angle.
  const Tensor E = fx::reshape(fx::stack({cz, -sz * cx, sz * sx, zero, sz, cz * cx, -cz * sx, zero,
                                          zero, sx, cx, zero, zero, zero, zero, one},
                                         1),
                               {nb, 4, 4});
  const Tensor rel = fx::matmul(t.base_rel, E);
  std::vector<Tensor> absolute(static_cast<size_t>(nb));
  for (int64_t b = 0; b < nb; ++b) {
    const int parent = t.parents[size_t(b)];
    const Tensor r = fx::select(rel, 0, b);
    absolute[size_t(b)] = parent < 0 ? r : fx::matmul(absolute[size_t(parent)], r);
  }
  const Tensor T = fx::matmul(fx::stack(absolute, 0), t.inv_base);
  const Tensor T3 = fx::reshape(fx::slice(T, 1, 0, 3), {3 * nb, 4});
  const Tensor skinned = fx::sum(fx::reshape(fx::matmul(T3, t.rest), {nb, 3, -1}) * t.weights, 0);
  Tensor R = t.eye3;
  if (!t.identity_rotation) {
    const Tensor w = fx::slice(theta, 0, 0, 3);
    const Tensor n = fx::sqrt(fx::sum(w * w));
    const Tensor u = w / n;
    const Tensor x = fx::select(u, 0, 0), y = fx::select(u, 0, 1), z = fx::select(u, 0, 2);
    const Tensor s = fx::sin(n), c = fx::cos(n), omc = 1.0 - c;
    R = fx::reshape(fx::stack({x * x + (1.0 - x * x) * c, x * y * omc - z * s, x * z * omc + y * s,
                               x * y * omc + z * s, y * y + (1.0 - y * y) * c, y * z * omc - x * s,
                               x * z * omc - y * s, z * y * omc + x * s, z * z + (1.0 - z * z) * c},
                              0),
                    {3, 3});
  }
  const Tensor V = fx::transpose(
      fx::matmul(R, skinned) + fx::reshape(fx::slice(theta, 0, 3, 6), {3, 1}), 0, 1);  // (nv, 3)
  if (!us.defined()) return t.points - fx::index_select(V, 0, t.corner[0]);
  const Tensor u0 = fx::slice(us, 1, 0, 1), u1 = fx::slice(us, 1, 1, 2);
  return t.points -
         (u0 * fx::index_select(V, 0, t.corner[0]) + u1 * fx::index_select(V, 0, t.corner[1]) +
          (1.0 - u0 - u1) * fx::index_select(V, 0, t.corner[2]));
}

// One jvp per pose parameter; in the complicated variant two more, seeding every point's u0
// (then u1) at once: each residual row sees only its own point's pair, so that column is its
// row's ∂/∂u0 (∂/∂u1).
void jacobian_tensor(const Hand& h, const FxHand& t, std::vector<double>& J) {
  const int nc = columns(h), off = nc - kTheta;
  const size_t rows = size_t(3) * h.npoints();
  J.resize(rows * nc);
  auto put = [&](const fx::Tensor& d, int col) {
    const fx::Tensor c = fx::contiguous(d);
    const double* p = c.data<double>();
    for (size_t r = 0; r < rows; ++r) J[r * nc + size_t(col)] = p[r];
  };
  if (!h.complicated()) {
    auto f = [&t](const fx::Tensor& th) { return objective_tensor(t, th, fx::Tensor()); };
    for (int k = 0; k < kTheta; ++k) put(fx::jvp(f, t.theta, t.theta_seed[size_t(k)]).second, k);
    return;
  }
  auto f = [&t](const fx::Tensor& th, const fx::Tensor& us) { return objective_tensor(t, th, us); };
  const fx::Tensor no_us = fx::zeros_like(t.us), no_theta = fx::zeros_like(t.theta);
  for (int k = 0; k < kTheta; ++k)
    put(fx::jvp(f, std::tuple{t.theta, t.us}, std::tuple{t.theta_seed[size_t(k)], no_us}).second,
        off + k);
  for (int k = 0; k < kUs; ++k)
    put(fx::jvp(f, std::tuple{t.theta, t.us}, std::tuple{no_theta, t.us_seed[size_t(k)]}).second,
        k);
}

#ifdef FLUXION_HAVE_TORCH
// ---- (c) libtorch: the same batched program; Jacobian by forward-mode AD ------------------------
struct TorchHand {
  torch::Tensor theta, us, ex_index, ez_index, base_rel, inv_base, rest, weights, corner[3], points,
      zero1, eye3;
  std::vector<torch::Tensor> theta_seed, us_seed;  // as FxHand's
  std::vector<int> parents;
  bool identity_rotation = false;
};

torch::Tensor to_torch(const std::vector<double>& v, std::vector<int64_t> shape) {
  return torch::from_blob(const_cast<double*>(v.data()), shape, torch::kFloat64).clone();
}
torch::Tensor to_torch(const std::vector<int64_t>& v) {
  return torch::from_blob(const_cast<int64_t*>(v.data()), {int64_t(v.size())}, torch::kInt64)
      .clone();
}

TorchHand torch_prepare(const Hand& h, const std::vector<BonePose>& poses) {
  const HostLayout L = host_layout(h, poses);
  const int64_t nb = h.bones(), nv = h.vertices(), n = h.npoints();
  TorchHand t;
  t.theta = to_torch(h.theta, {kTheta});
  if (h.complicated()) t.us = to_torch(h.us, {n, kUs});
  t.ex_index = to_torch(L.ex);
  t.ez_index = to_torch(L.ez);
  t.base_rel = to_torch(h.base_relatives, {nb, 4, 4});
  t.inv_base = to_torch(h.inverse_base_absolutes, {nb, 4, 4});
  t.rest = to_torch(L.rest, {4, nv});
  t.weights = to_torch(L.weights, {nb, 1, nv});
  for (int k = 0; k < 3; ++k)
    if (!L.corner[k].empty()) t.corner[k] = to_torch(L.corner[k]);
  t.points = to_torch(h.points, {n, 3});
  t.zero1 = torch::zeros({1}, torch::kFloat64);
  t.eye3 = torch::eye(3, torch::kFloat64);
  for (int k = 0; k < kTheta; ++k) {
    t.theta_seed.push_back(torch::zeros({kTheta}, torch::kFloat64));
    t.theta_seed.back()[k] = 1.0;
  }
  for (int k = 0; h.complicated() && k < kUs; ++k) {
    t.us_seed.push_back(torch::zeros({n, kUs}, torch::kFloat64));
    t.us_seed.back().select(1, k).fill_(1.0);
  }
  t.parents = h.parents;
  t.identity_rotation = small_rotation(h);
  return t;
}

torch::Tensor objective_torch(const TorchHand& t, const torch::Tensor& theta,
                              const torch::Tensor& us) {
  using torch::Tensor;
  const int64_t nb = int64_t(t.parents.size());
  const Tensor ext = torch::cat({theta, t.zero1}, 0);
  const Tensor ex = ext.index_select(0, t.ex_index), ez = ext.index_select(0, t.ez_index);
  const Tensor cx = ex.cos(), sx = ex.sin(), cz = ez.cos(), sz = ez.sin();
  const Tensor zero = torch::zeros_like(ex), one = torch::ones_like(ex);
  const Tensor E = torch::stack({cz, -sz * cx, sz * sx, zero, sz, cz * cx, -cz * sx, zero, zero, sx,
                                 cx, zero, zero, zero, zero, one},
                                1)
                       .reshape({nb, 4, 4});
  const Tensor rel = torch::matmul(t.base_rel, E);
  std::vector<Tensor> absolute(static_cast<size_t>(nb));
  for (int64_t b = 0; b < nb; ++b) {
    const int parent = t.parents[size_t(b)];
    const Tensor r = rel.select(0, b);
    absolute[size_t(b)] = parent < 0 ? r : torch::matmul(absolute[size_t(parent)], r);
  }
  const Tensor T = torch::matmul(torch::stack(absolute, 0), t.inv_base);
  const Tensor T3 = T.slice(1, 0, 3).reshape({3 * nb, 4});
  const Tensor skinned = (torch::matmul(T3, t.rest).reshape({nb, 3, -1}) * t.weights).sum(0);
  Tensor R = t.eye3;
  if (!t.identity_rotation) {
    const Tensor w = theta.slice(0, 0, 3);
    const Tensor n = (w * w).sum().sqrt();
    const Tensor u = w / n;
    const Tensor x = u.select(0, 0), y = u.select(0, 1), z = u.select(0, 2);
    const Tensor s = n.sin(), c = n.cos(), omc = 1.0 - c;
    R = torch::stack({x * x + (1.0 - x * x) * c, x * y * omc - z * s, x * z * omc + y * s,
                      x * y * omc + z * s, y * y + (1.0 - y * y) * c, y * z * omc - x * s,
                      x * z * omc - y * s, z * y * omc + x * s, z * z + (1.0 - z * z) * c},
                     0)
            .reshape({3, 3});
  }
  const Tensor V =
      (torch::matmul(R, skinned) + theta.slice(0, 3, 6).reshape({3, 1})).transpose(0, 1);
  if (!us.defined()) return t.points - V.index_select(0, t.corner[0]);
  const Tensor u0 = us.slice(1, 0, 1), u1 = us.slice(1, 1, 2);
  return t.points - (u0 * V.index_select(0, t.corner[0]) + u1 * V.index_select(0, t.corner[1]) +
                     (1.0 - u0 - u1) * V.index_select(0, t.corner[2]));
}

// libtorch's forward-mode AD: inputs made dual at a fresh level, one pass per column, the
// same seeds as the fluxion tensor version.
void jacobian_torch(const Hand& h, const TorchHand& t, std::vector<double>& J) {
  using torch::autograd::ForwardADLevel;
  const int nc = columns(h), off = nc - kTheta;
  const size_t rows = size_t(3) * h.npoints();
  J.resize(rows * nc);
  const uint64_t level = ForwardADLevel::get_next_idx();
  auto pass = [&](const torch::Tensor& dtheta, const torch::Tensor& dus, int col) {
    const torch::Tensor th = at::_make_dual(t.theta, dtheta, int64_t(level));
    const torch::Tensor us = t.us.defined() ? at::_make_dual(t.us, dus, int64_t(level)) : t.us;
    const torch::Tensor d =
        std::get<1>(at::_unpack_dual(objective_torch(t, th, us), int64_t(level))).contiguous();
    const double* p = d.data_ptr<double>();
    for (size_t r = 0; r < rows; ++r) J[r * nc + size_t(col)] = p[r];
  };
  const torch::Tensor no_us = t.us.defined() ? torch::zeros_like(t.us) : torch::Tensor();
  const torch::Tensor no_theta = torch::zeros_like(t.theta);
  for (int k = 0; k < kTheta; ++k) pass(t.theta_seed[size_t(k)], no_us, off + k);
  for (size_t k = 0; k < t.us_seed.size(); ++k) pass(no_theta, t.us_seed[k], int(k));
  ForwardADLevel::release_idx(level);
}
#endif

// ---- checks -------------------------------------------------------------------------------------
// Central differences of the scalar objective against the manual Jacobian, every column.
double finite_difference_error(Hand h, const std::vector<BonePose>& poses,
                               const std::vector<double>& J) {
  const int nc = columns(h);
  std::vector<double> V, ep, em;
  double worst = 0;
  for (int col = 0; col < nc; ++col) {
    const bool is_u = col < nc - kTheta;
    // A us column perturbs every point's own coordinate at once (rows see only their own).
    auto shift = [&](double d) {
      if (!is_u) {
        h.theta[size_t(col - (nc - kTheta))] += d;
        return;
      }
      for (size_t i = size_t(col); i < h.us.size(); i += kUs) h.us[i] += d;
    };
    const double step = 1e-6;
    shift(step);
    objective_scalar(h, poses, V, ep);
    shift(-2 * step);
    objective_scalar(h, poses, V, em);
    shift(step);
    for (size_t r = 0; r < ep.size(); ++r) {
      const double fd = (ep[r] - em[r]) / (2 * step), an = J[r * size_t(nc) + size_t(col)];
      worst = std::max(worst, std::abs(fd - an) / std::max(1.0, std::abs(an)));
    }
  }
  return worst;
}

struct Impl {
  std::string name;
  std::function<void()> objective;
  std::function<void(std::vector<double>&)> jacobian;
  std::function<std::vector<double>()> residuals;
};

struct Prepared {
  const Hand& h;
  std::vector<BonePose> poses;
  std::vector<double> V, dV, err;
  FxHand t;
#ifdef FLUXION_HAVE_TORCH
  TorchHand tb;
#endif
  explicit Prepared(const Hand& h_)
      : h(h_),
        poses(bone_poses(h_)),
        t(fx_prepare(h_, poses))
#ifdef FLUXION_HAVE_TORCH
        ,
        tb(torch_prepare(h_, poses))
#endif
  {
  }
};

std::vector<Impl> implementations(Prepared& P) {
  const Hand& h = P.h;
  auto scalar_obj = [&P] { objective_scalar(P.h, P.poses, P.V, P.err); };
  auto scalar_res = [&P] {
    objective_scalar(P.h, P.poses, P.V, P.err);
    return P.err;
  };
  std::vector<Impl> v;
  v.push_back({"manual", scalar_obj,
               [&P](std::vector<double>& J) { jacobian_manual(P.h, P.poses, P.V, P.dV, J); },
               scalar_res});
  v.push_back({"fluxion_tensor", [&P] { (void)objective_tensor(P.t, P.t.theta, P.t.us); },
               [&P, &h](std::vector<double>& J) { jacobian_tensor(h, P.t, J); },
               [&P] { return fx::to_vector<double>(objective_tensor(P.t, P.t.theta, P.t.us)); }});
  v.push_back({"fluxion_scalar", scalar_obj,
               [&P](std::vector<double>& J) { jacobian_dual(P.h, P.poses, J); }, scalar_res});
#ifdef FLUXION_HAVE_TORCH
  v.push_back({"torch",
               [&P] {
                 torch::NoGradGuard no_grad;
                 (void)objective_torch(P.tb, P.tb.theta, P.tb.us);
               },
               [&P, &h](std::vector<double>& J) { jacobian_torch(h, P.tb, J); },
               [&P] {
                 torch::Tensor r = objective_torch(P.tb, P.tb.theta, P.tb.us).contiguous();
                 return std::vector<double>(r.data_ptr<double>(), r.data_ptr<double>() + r.numel());
               }});
#endif
  return v;
}

// max relative disagreement of every implementation's Jacobian and residuals with manual's.
double agreement(Prepared& P, const std::vector<Impl>& impls, std::vector<double>& Jref) {
  jacobian_manual(P.h, P.poses, P.V, P.dV, Jref);
  objective_scalar(P.h, P.poses, P.V, P.err);
  const std::vector<double> rref = P.err;
  double err = 0;
  std::vector<double> J;
  for (const Impl& im : impls) {
    im.jacobian(J);
    err = std::max({err, max_rel_err(J, Jref), max_rel_err(im.residuals(), rref)});
  }
  return err;
}

// "simple/hand1" -> the model folder and the instance file.
bool locate(const std::string& dir, const std::string& set, std::string& model, std::string& file) {
  const size_t slash = set.find('/');
  if (slash == std::string::npos) return false;
  const std::string folder = dir + "/" + set.substr(0, slash) + "_small";
  const std::string prefix = set.substr(slash + 1) + "_t26_c";
  if (!std::filesystem::is_directory(folder)) return false;
  for (const auto& e : std::filesystem::directory_iterator(folder)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) {
      model = folder + "/model/";
      file = e.path().string();
      return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  fx::bench::JacobianArgs args{FLUXION_ADBENCH_DIR "/hand",
                               {"simple/hand1", "simple/hand6", "simple/hand12",
                                "complicated/hand1", "complicated/hand6", "complicated/hand11"},
                               {"fluxion_tensor", "fluxion_scalar", "torch", "manual"},
                               {}};
  if (!fx::bench::parse_jacobian_args("adbench_hand", argc, argv, args)) return 2;
#ifndef FLUXION_HAVE_TORCH
  std::erase(args.impls, std::string("torch"));
#endif
  const std::string& dir = args.dir;
  const std::vector<std::string>& chosen = args.impls;
  omp_set_num_threads(1);
  if (openblas_set_num_threads) openblas_set_num_threads(1);
#ifdef FLUXION_HAVE_TORCH
  torch::set_num_threads(1);
#endif

  std::vector<std::pair<std::string, fx::data::HandInput>> inputs;
  for (const std::string& s : args.sets) {
    std::string model, file;
    if (!locate(dir, s, model, file)) {
      std::fprintf(stderr, "adbench_hand: no instance '%s' (want variant/handK) in %s\n", s.c_str(),
                   dir.c_str());
      return 2;
    }
    try {
      inputs.push_back({s, fx::data::read_hand(model, file)});
    } catch (const fx::Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
  }

  // Self-check on each set's model at its pose and at zero global rotation (the identity
  // branch): every implementation against manual, manual against central differences.
  std::vector<bool> checked(2, false);  // per variant: simple, complicated
  for (auto& [name, h0] : inputs) {
    if (checked[h0.complicated()]) continue;  // the variants share one model per folder
    checked[h0.complicated()] = true;
    for (bool zero_rotation : {false, true}) {
      Hand h = h0;
      if (zero_rotation) std::fill_n(h.theta.begin(), 3, 0.0);
      Prepared P(h);
      std::vector<Impl> impls = implementations(P);
      std::vector<double> man;
      const double err = agreement(P, impls, man);
      const double fd = finite_difference_error(h, P.poses, man);
      std::string tag = "hand_selfcheck_" + name.substr(0, name.find('/')) +
                        (zero_rotation ? "_zero_rotation" : "");
      std::printf("%s_max_rel_error=%.3e\n%s_fd_error=%.3e\n", tag.c_str(), err, tag.c_str(), fd);
      if (!(err <= 1e-8) || !(fd <= 1e-6)) {
        std::fprintf(stderr,
                     "adbench_hand: self-check failed on %s (agreement %.3e, finite "
                     "differences %.3e)\n",
                     name.c_str(), err, fd);
        return 1;
      }
      for (const std::string& c : chosen)
        if (std::none_of(impls.begin(), impls.end(),
                         [&](const Impl& im) { return im.name == c; })) {
          std::fprintf(stderr, "adbench_hand: unknown implementation '%s' in --impls\n", c.c_str());
          return 2;
        }
    }
  }

  std::printf("%-18s %7s", "set", "points");
  for (const std::string& c : chosen) std::printf(" %24s", (c + " obj/jac").c_str());
  std::printf(" %7s %7s %8s\n", "fx/man", "fx/tch", "rel err");
  bool all_ok = true;
  for (auto& [name, h] : inputs) {
    std::string tag = "hand_" + name;
    std::replace(tag.begin(), tag.end(), '/', '_');
    Prepared P(h);
    std::vector<Impl> all_impls = implementations(P), impls;
    for (const std::string& c : chosen)
      for (Impl& im : all_impls)
        if (im.name == c) impls.push_back(im);
    std::vector<double> Jref, J;
    const double err = agreement(P, impls, Jref);
    std::printf("%s_points=%d\n%s_columns=%d\n", tag.c_str(), h.npoints(), tag.c_str(), columns(h));
    std::vector<std::string> names;
    std::vector<std::function<void()>> objectives, jacobians;
    for (size_t i = 0; i < impls.size(); ++i) {
      names.push_back(impls[i].name);
      objectives.push_back(impls[i].objective);
      jacobians.push_back([&, i] { impls[i].jacobian(J); });
    }
    const fx::bench::Compared cmp =
        fx::bench::compare_implementations(tag, names, objectives, jacobians, args.to);
    const double ratio = cmp.fluxion_vs_manual, torch_ratio = cmp.fluxion_vs_torch;
    const bool ok = err <= 1e-8;
    all_ok = all_ok && ok;
    std::printf("%s_max_rel_error=%.3e\n%s_ratio_vs_manual=%.4f\n", tag.c_str(), err, tag.c_str(),
                ratio);
    if (!std::isnan(torch_ratio))
      std::printf("%s_ratio_fluxion_torch=%.4f\n", tag.c_str(), torch_ratio);
    std::printf("%-18s %7d", name.c_str(), h.npoints());
    for (size_t i = 0; i < impls.size(); ++i)
      std::printf("    %10.3e/%10.3e", cmp.objective_s[i], cmp.jacobian_s[i]);
    std::printf(" %7.2f %7.2f %8.1e%s\n", ratio, torch_ratio, err, ok ? "" : "  MISMATCH");
    std::fflush(stdout);
  }
  std::printf("hand_all_agree=%d\n", int(all_ok));
  return all_ok ? 0 : 1;
}
