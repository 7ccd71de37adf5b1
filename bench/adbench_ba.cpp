// ADBench bundle adjustment (BA): the reprojection and weight residuals of ADBench's BA problem
// (../shared/adbench/README.md; formulas exactly as ADBench's reference ba.h) and their sparse
// Jacobian in ADBench's CSR layout, computed four ways:
//   fluxion_tensor — fx::Tensor ops batched over all observations (one contiguous vector per
//                    camera/point/weight parameter), Jacobian by reverse mode: one recorded
//                    forward pass and two pullbacks (x and y rows) give all 15 columns at once;
//   fluxion_scalar — generic templated projection code run per observation on
//                    fx::Dual<double, 15> (forward mode, all 15 tangents in one chunk);
//   torch          — the same batched program in libtorch (f64, unfused per-op code), leaves
//                    requiring grad, two autograd passes of the summed x and y residuals;
//   manual         — the projection's derivative by the chain rule, by hand (ADBench's "Manual").
// All four produce identical CSR structure and values agreeing to max |a - b| / max |b| <= 1e-8
// (checked and printed). Before the ADBench files, a synthetic instance with zero-rotation cameras
// (ADBench's small-angle branch) checks all four against each other and the hand derivative
// against central differences. Timing is ADBench's (bench/adbench_timing.hpp): objective and
// Jacobian separately, preparation (reading, tensor conversion) untimed, one thread everywhere;
// the implementations take their samples in turn, and a ratio is the median of the per-round
// ratios (interleaved_time).
//
//   ./build/bench/adbench_ba [--dir ../shared/adbench/ba] [--sets ba1,ba2,...|all]
//       [--impls fluxion_tensor,fluxion_scalar,torch,manual] [--min-time 0.5] [--samples 10]
//       [--budget 5]
//   ba_ba1_fluxion_tensor_jacobian_s=...  ba_ba1_manual_jacobian_s=...
//   ba_ba1_max_rel_error=...  ba_ba1_ratio_vs_manual=...   (best fluxion ÷ manual)
// Two more implementations can be named in --impls (both slower, kept for comparison):
//   fluxion_tensor_forward — the tensor Jacobian by forward mode: 15 fx::jvp calls, one per local
//                            parameter, seeding only it (the others get no tangent, a symbolic
//                            zero), so only its downstream ops carry tangents;
//   fluxion_scalar_real    — the generic code on fx::Real (reverse mode), one short tape per
//                            observation swept back twice.
// Why these picks (one run on a shared 2-core machine, seconds per Jacobian, ba1 / ba5):
// tensor reverse 0.026 / 0.40 against tensor forward 0.18 / 1.95 — reverse records one forward
// pass and sweeps it twice, while forward mode re-evaluates the program 15 times and the
// rotation seeds carry tangents through nearly all of it; scalar Dual 0.021 / 0.11 against
// scalar Real 0.078 / 0.61 — 15 tangents ride along in registers, where Real writes a tape and
// sweeps it twice per observation. (Since Dual's tangents are combined a vector at a time, on
// another machine: Dual 0.0022 / 0.021, Real 0.014 / 0.10, manual 0.0019 / 0.019.)
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <fluxion/ad/dual.hpp>
#include <fluxion/ad/forward.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/data/adbench.hpp>
#include <fluxion/ops.hpp>

#ifdef FLUXION_HAVE_TORCH
#include <torch/torch.h>
#endif

#include "adbench_timing.hpp"

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {
using fx::bench::max_rel_err;
using Ba = fx::data::BaInput;

constexpr int kCam = Ba::kCamParams;  // 11
constexpr int kLocal = kCam + 3 + 1;  // 15 parameters per reprojection residual

// ---- ADBench's objective, generic over the scalar type ----------------------------------------
// Camera layout: rotation 0..2 (Rodrigues), centre 3..5, focal 6, principal point 7..8, radial
// distortion 9..10. The code follows ADBench's ba.h statement by statement so every
// implementation rounds the same way.
template <class T>
void rodrigues_rotate_point(const T* rot, const T* pt, T* out) {
  T sqtheta = rot[0] * rot[0] + rot[1] * rot[1] + rot[2] * rot[2];
  if (sqtheta != 0) {
    using std::cos, std::sin, std::sqrt;
    T theta = sqrt(sqtheta);
    T costheta = cos(theta), sintheta = sin(theta);
    T theta_inverse = 1.0 / theta;
    T w[3] = {rot[0] * theta_inverse, rot[1] * theta_inverse, rot[2] * theta_inverse};
    T w_cross_pt[3] = {w[1] * pt[2] - w[2] * pt[1], w[2] * pt[0] - w[0] * pt[2],
                       w[0] * pt[1] - w[1] * pt[0]};
    T tmp = (w[0] * pt[0] + w[1] * pt[1] + w[2] * pt[2]) * (1. - costheta);
    for (int i = 0; i < 3; ++i) out[i] = pt[i] * costheta + w_cross_pt[i] * sintheta + w[i] * tmp;
  } else {
    // ADBench's small-angle branch: R ≈ I + [rot]×.
    T rot_cross_pt[3] = {rot[1] * pt[2] - rot[2] * pt[1], rot[2] * pt[0] - rot[0] * pt[2],
                         rot[0] * pt[1] - rot[1] * pt[0]};
    for (int i = 0; i < 3; ++i) out[i] = pt[i] + rot_cross_pt[i];
  }
}

template <class T>
void project(const T* cam, const T* X, T* proj) {
  T Xo[3] = {X[0] - cam[3], X[1] - cam[4], X[2] - cam[5]};
  T Xcam[3];
  rodrigues_rotate_point(cam, Xo, Xcam);
  proj[0] = Xcam[0] / Xcam[2];
  proj[1] = Xcam[1] / Xcam[2];
  T rsq = proj[0] * proj[0] + proj[1] * proj[1];
  T L = 1. + cam[9] * rsq + cam[10] * rsq * rsq;
  proj[0] = proj[0] * L;
  proj[1] = proj[1] * L;
  proj[0] = proj[0] * cam[6] + cam[7];
  proj[1] = proj[1] * cam[6] + cam[8];
}

template <class T>
void reproj_error(const T* cam, const T* X, const T& w, const double* feat, T* err) {
  T proj[2];
  project(cam, X, proj);
  err[0] = w * (proj[0] - feat[0]);
  err[1] = w * (proj[1] - feat[1]);
}

// Residuals: 2p reprojection errors then p weight errors.
struct Residuals {
  std::vector<double> reproj, w_err;
};

void objective_scalar(const Ba& b, Residuals& r) {
  r.reproj.resize(size_t(2) * b.p);
  r.w_err.resize(size_t(b.p));
  for (int i = 0; i < b.p; ++i) {
    const double* cam = &b.cams[size_t(b.obs[2 * i]) * kCam];
    const double* X = &b.X[size_t(b.obs[2 * i + 1]) * 3];
    reproj_error(cam, X, b.w[i], &b.feats[size_t(2) * i], &r.reproj[size_t(2) * i]);
  }
  for (int i = 0; i < b.p; ++i) r.w_err[i] = 1 - b.w[i] * b.w[i];
}

// ---- the sparse Jacobian ------------------------------------------------------------------------
// ADBench's BASparseMat: rows 0..2p-1 are reprojection rows (observation i: rows 2i, 2i+1), each
// with 15 entries in column order [camera (11) | point (3) | weight (1)]; rows 2p..3p-1 are weight
// rows with one entry. Columns: 11n camera parameters, 3m point coordinates, p weights. So values
// lie at vals[30 i + 15 r + k] (row r of observation i, local parameter k) and vals[30 p + i].
struct Csr {
  int nrows = 0, ncols = 0;
  std::vector<int> rows, cols;
  std::vector<double> vals;
};

// Every implementation builds the structure inside its timed Jacobian, as ADBench's do.
void csr_structure(const Ba& b, Csr& J) {
  const size_t p = size_t(b.p);
  J.nrows = 3 * b.p;
  J.ncols = kCam * b.n + 3 * b.m + b.p;
  J.rows.resize(3 * p + 1);
  J.cols.resize(31 * p);
  J.vals.resize(31 * p);
  const int pt0 = kCam * b.n, w0 = pt0 + 3 * b.m;
  for (size_t i = 0; i < p; ++i) {
    int c = b.obs[2 * i], q = b.obs[2 * i + 1];
    for (int r = 0; r < 2; ++r) {
      J.rows[2 * i + r] = int(30 * i) + kLocal * r;
      int* col = &J.cols[30 * i + kLocal * r];
      for (int k = 0; k < kCam; ++k) col[k] = kCam * c + k;
      for (int k = 0; k < 3; ++k) col[kCam + k] = pt0 + 3 * q + k;
      col[kCam + 3] = w0 + int(i);
    }
  }
  for (size_t i = 0; i <= p; ++i) J.rows[2 * p + i] = int(30 * p + i);
  for (size_t i = 0; i < p; ++i) J.cols[30 * p + i] = w0 + int(i);
}

// ---- (d) manual ---------------------------------------------------------------------------------
// err = w (f · distort(π(R(rot) (X − C))) + x0 − feat), differentiated by hand:
//   dXcam/dXo = R, dXcam/drot (Rodrigues' derivative, or −[Xo]× in the small-angle branch),
//   dπ/dXcam = [[1/z, 0, −u/z], [0, 1/z, −v/z]],  d distort/dπ = L I + 2 (κ1 + 2 κ2 r²) π πᵀ.
// J: 2 × 15 row-major (row x then row y).
void manual_reproj_jacobian(const double* cam, const double* X, double w, const double* feat,
                            double* J) {
  const double* rot = cam;
  double Xo[3] = {X[0] - cam[3], X[1] - cam[4], X[2] - cam[5]};
  double Xc[3], R[3][3], dR[3][3];  // dXcam/dXo, dXcam/drot
  double sq = rot[0] * rot[0] + rot[1] * rot[1] + rot[2] * rot[2];
  if (sq != 0) {
    double th = std::sqrt(sq), c = std::cos(th), s = std::sin(th), inv = 1.0 / th;
    double om[3] = {rot[0] * inv, rot[1] * inv, rot[2] * inv};
    double cr[3] = {om[1] * Xo[2] - om[2] * Xo[1], om[2] * Xo[0] - om[0] * Xo[2],
                    om[0] * Xo[1] - om[1] * Xo[0]};
    double dot = om[0] * Xo[0] + om[1] * Xo[1] + om[2] * Xo[2];
    double tmp = dot * (1. - c);
    for (int i = 0; i < 3; ++i) Xc[i] = Xo[i] * c + cr[i] * s + om[i] * tmp;
    // R = c I + s [om]× + (1 − c) om omᵀ.
    const double om_x[3][3] = {{0, -om[2], om[1]}, {om[2], 0, -om[0]}, {-om[1], om[0], 0}};
    const double xo_x[3][3] = {{0, -Xo[2], Xo[1]}, {Xo[2], 0, -Xo[0]}, {-Xo[1], Xo[0], 0}};
    double g[3], M[3][3], Mom[3];
    for (int i = 0; i < 3; ++i) {
      // ∂Xcam/∂θ and ∂Xcam/∂om = −s [Xo]× + (1 − c)(dot I + om Xoᵀ).
      g[i] = -s * Xo[i] + c * cr[i] + s * dot * om[i];
      for (int j = 0; j < 3; ++j) {
        R[i][j] = (i == j ? c : 0) + s * om_x[i][j] + (1 - c) * om[i] * om[j];
        M[i][j] = -s * xo_x[i][j] + (1 - c) * ((i == j ? dot : 0) + om[i] * Xo[j]);
      }
    }
    for (int i = 0; i < 3; ++i) Mom[i] = M[i][0] * om[0] + M[i][1] * om[1] + M[i][2] * om[2];
    // θ = |rot|, om = rot/θ: dθ/drot = omᵀ, dom/drot = (I − om omᵀ)/θ.
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) dR[i][j] = g[i] * om[j] + (M[i][j] - Mom[i] * om[j]) * inv;
  } else {
    double cr[3] = {rot[1] * Xo[2] - rot[2] * Xo[1], rot[2] * Xo[0] - rot[0] * Xo[2],
                    rot[0] * Xo[1] - rot[1] * Xo[0]};
    for (int i = 0; i < 3; ++i) Xc[i] = Xo[i] + cr[i];
    const double r_x[3][3] = {{0, -rot[2], rot[1]}, {rot[2], 0, -rot[0]}, {-rot[1], rot[0], 0}};
    const double xo_x[3][3] = {{0, -Xo[2], Xo[1]}, {Xo[2], 0, -Xo[0]}, {-Xo[1], Xo[0], 0}};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        R[i][j] = (i == j ? 1 : 0) + r_x[i][j];
        dR[i][j] = -xo_x[i][j];
      }
  }
  double iz = 1.0 / Xc[2], u = Xc[0] * iz, v = Xc[1] * iz;
  double rsq = u * u + v * v;
  double k1 = cam[9], k2 = cam[10], f = cam[6];
  double L = 1. + k1 * rsq + k2 * rsq * rsq, dL = 2 * (k1 + 2 * k2 * rsq);
  double pd[2] = {u * L, v * L};
  double Dd[2][2] = {{L + dL * u * u, dL * u * v}, {dL * v * u, L + dL * v * v}};
  double Dp[2][3] = {{iz, 0, -u * iz}, {0, iz, -v * iz}};
  double A[2][3];  // d err / d Xcam = w f Dd Dp
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 3; ++j) A[r][j] = w * f * (Dd[r][0] * Dp[0][j] + Dd[r][1] * Dp[1][j]);
  const double puv[2] = {u, v};
  const double proj[2] = {pd[0] * f + cam[7], pd[1] * f + cam[8]};
  for (int r = 0; r < 2; ++r) {
    double* Jr = J + kLocal * r;
    for (int j = 0; j < 3; ++j) {
      double ar = A[r][0] * dR[0][j] + A[r][1] * dR[1][j] + A[r][2] * dR[2][j];
      double aR = A[r][0] * R[0][j] + A[r][1] * R[1][j] + A[r][2] * R[2][j];
      Jr[j] = ar;         // rotation
      Jr[3 + j] = -aR;    // centre
      Jr[kCam + j] = aR;  // point
    }
    Jr[6] = w * pd[r];
    Jr[7] = r == 0 ? w : 0;
    Jr[8] = r == 1 ? w : 0;
    Jr[9] = w * f * puv[r] * rsq;
    Jr[10] = w * f * puv[r] * rsq * rsq;
    Jr[14] = proj[r] - feat[r];
  }
}

void jacobian_manual(const Ba& b, Csr& J) {
  csr_structure(b, J);
  const size_t p = size_t(b.p);
  for (size_t i = 0; i < p; ++i) {
    manual_reproj_jacobian(&b.cams[size_t(b.obs[2 * i]) * kCam], &b.X[size_t(b.obs[2 * i + 1]) * 3],
                           b.w[i], &b.feats[2 * i], &J.vals[30 * i]);
  }
  for (size_t i = 0; i < p; ++i) J.vals[30 * p + i] = -2 * b.w[i];
}

// ---- (b) fluxion scalar AD: the generic code on fx::Dual<double, 15> --------------------------
using D15 = fx::Dual<double, kLocal>;

// The generic code instantiated on Dual, with everything it calls inlined. Without the flatten,
// GCC 12 stops inlining Dual's operators once the caller grows (~80 of them here), and each
// becomes a call passing 16 doubles through memory: 5-10x slower (measured on ba1).
[[gnu::flatten]] void reproj_error_dual(const D15* cam, const D15* X, const D15& w,
                                        const double* feat, D15* err) {
  reproj_error(cam, X, w, feat, err);
}

void jacobian_scalar(const Ba& b, Csr& J) {
  using D = D15;
  csr_structure(b, J);
  const size_t p = size_t(b.p);
  for (size_t i = 0; i < p; ++i) {
    const double* cam = &b.cams[size_t(b.obs[2 * i]) * kCam];
    const double* X = &b.X[size_t(b.obs[2 * i + 1]) * 3];
    D dcam[kCam], dX[3], dw(b.w[i]), err[2];
    for (int k = 0; k < kCam; ++k) {
      dcam[k] = D(cam[k]);
      dcam[k].partial(k) = 1;
    }
    for (int k = 0; k < 3; ++k) {
      dX[k] = D(X[k]);
      dX[k].partial(kCam + k) = 1;
    }
    dw.partial(kLocal - 1) = 1;
    reproj_error_dual(dcam, dX, dw, &b.feats[2 * i], err);
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k < kLocal; ++k) J.vals[30 * i + kLocal * r + k] = err[r].partial(k);
  }
  for (size_t i = 0; i < p; ++i) {
    fx::Dual<double> w(b.w[i], {1.0});
    J.vals[30 * p + i] = (1 - w * w).partial(0);
  }
}

// The same generic code on fx::Real (reverse mode): one short scalar tape per observation, swept
// back twice (x row, y row); each sweep gives the row's 15 partials.
void jacobian_scalar_reverse(const Ba& b, Csr& J) {
  csr_structure(b, J);
  const size_t p = size_t(b.p);
  for (size_t i = 0; i < p; ++i) {
    const double* cam = &b.cams[size_t(b.obs[2 * i]) * kCam];
    const double* X = &b.X[size_t(b.obs[2 * i + 1]) * 3];
    fx::ad::ScalarRecording rec;  // a fresh tape: sweeps cost this observation's ops only
    fx::Real rcam[kCam], rX[3], err[2];
    for (int k = 0; k < kCam; ++k) rcam[k] = rec.variable(cam[k]);
    for (int k = 0; k < 3; ++k) rX[k] = rec.variable(X[k]);
    fx::Real rw = rec.variable(b.w[i]);
    reproj_error(rcam, rX, rw, &b.feats[2 * i], err);
    for (int r = 0; r < 2; ++r) {
      const std::vector<double>& adj = rec.adjoints(err[r]);
      double* row = &J.vals[30 * i + kLocal * r];
      for (int k = 0; k < kCam; ++k) row[k] = adj[rcam[k].index()];
      for (int k = 0; k < 3; ++k) row[kCam + k] = adj[rX[k].index()];
      row[kLocal - 1] = adj[rw.index()];
    }
  }
  for (size_t i = 0; i < p; ++i) {
    fx::Dual<double> w(b.w[i], {1.0});
    J.vals[30 * p + i] = (1 - w * w).partial(0);
  }
}

// ---- (a) fluxion tensors and (c) libtorch: one batched program for both ----------------------
// v holds the 15 per-observation parameter vectors (p,) in local order (camera 0..10, point
// 11..13, weight 14). Returns (x residuals, y residuals). The Rodrigues branch becomes a select:
// when some camera has zero rotation (known from the data before timing), the rotation is
// computed with θ² replaced by 1 where it is 0, so the unselected branch and its derivatives stay
// finite, and the small-angle branch is selected there.
fx::Tensor nonzero_mask(const fx::Tensor& x) { return fx::ne(x, fx::zeros_like(x)); }
fx::Tensor select_where(const fx::Tensor& c, const fx::Tensor& a, const fx::Tensor& b) {
  return fx::where(c, a, b);
}
fx::Tensor select_where(const fx::Tensor& c, const fx::Tensor& a, double b) {
  return fx::where(c, a, b);
}
#ifdef FLUXION_HAVE_TORCH
torch::Tensor nonzero_mask(const torch::Tensor& x) { return x != 0; }
torch::Tensor select_where(const torch::Tensor& c, const torch::Tensor& a, const torch::Tensor& b) {
  return torch::where(c, a, b);
}
torch::Tensor select_where(const torch::Tensor& c, const torch::Tensor& a, double b) {
  return torch::where(c, a, torch::ones_like(a) * b);
}
#endif

template <class Tn>
std::pair<Tn, Tn> reproj_batched(const std::vector<Tn>& v, const Tn& featx, const Tn& featy,
                                 bool any_zero_rotation) {
  const Tn &r0 = v[0], &r1 = v[1], &r2 = v[2];
  Tn X0 = v[11] - v[3], X1 = v[12] - v[4], X2 = v[13] - v[5];
  Tn sqtheta = r0 * r0 + r1 * r1 + r2 * r2;
  Tn mask;
  if (any_zero_rotation) {
    mask = nonzero_mask(sqtheta);
    sqtheta = select_where(mask, sqtheta, 1.0);
  }
  Tn theta = sqrt(sqtheta);
  Tn costheta = cos(theta), sintheta = sin(theta);
  // ADBench multiplies by 1/θ; dividing is the same to an ulp and, in fluxion, one fast op
  // instead of fx::reciprocal (pow(x, -1) per element, ~30x slower than a division).
  Tn w0 = r0 / theta, w1 = r1 / theta, w2 = r2 / theta;
  Tn tmp = (w0 * X0 + w1 * X1 + w2 * X2) * (1. - costheta);
  Tn Xc0 = X0 * costheta + (w1 * X2 - w2 * X1) * sintheta + w0 * tmp;
  Tn Xc1 = X1 * costheta + (w2 * X0 - w0 * X2) * sintheta + w1 * tmp;
  Tn Xc2 = X2 * costheta + (w0 * X1 - w1 * X0) * sintheta + w2 * tmp;
  if (any_zero_rotation) {
    Xc0 = select_where(mask, Xc0, X0 + (r1 * X2 - r2 * X1));
    Xc1 = select_where(mask, Xc1, X1 + (r2 * X0 - r0 * X2));
    Xc2 = select_where(mask, Xc2, X2 + (r0 * X1 - r1 * X0));
  }
  Tn px = Xc0 / Xc2, py = Xc1 / Xc2;
  Tn rsq = px * px + py * py;
  Tn L = 1. + v[9] * rsq + v[10] * rsq * rsq;
  px = px * L;
  py = py * L;
  Tn projx = px * v[6] + v[7], projy = py * v[6] + v[8];
  return {v[14] * (projx - featx), v[14] * (projy - featy)};
}

struct FxBa {
  fx::Tensor cams, X, w;       // (n, 11), (m, 3), (p,): the parameters
  fx::Tensor cam_idx, pt_idx;  // (p,) i64
  fx::Tensor featx, featy;     // (p,)
  fx::Tensor seed_x, seed_y;   // (2p,) cotangents selecting the x or the y rows
  fx::Tensor ones;             // (p,)
  bool any_zero_rotation = false;
};

bool has_zero_rotation(const Ba& b) {
  for (int c = 0; c < b.n; ++c) {
    const double* r = &b.cams[size_t(c) * kCam];
    if (r[0] * r[0] + r[1] * r[1] + r[2] * r[2] == 0) return true;
  }
  return false;
}

FxBa fx_prepare(const Ba& b) {
  FxBa t;
  const int64_t n = b.n, m = b.m, p = b.p;
  t.cams = fx::from_vector(b.cams, {n, kCam});
  t.X = fx::from_vector(b.X, {m, 3});
  t.w = fx::from_vector(b.w, {p});
  const size_t np = static_cast<size_t>(p);
  std::vector<int64_t> ci(np), pi(np);
  std::vector<double> fxv(np), fyv(np);
  for (size_t i = 0; i < np; ++i) {
    ci[i] = b.obs[2 * i];
    pi[i] = b.obs[2 * i + 1];
    fxv[i] = b.feats[2 * i];
    fyv[i] = b.feats[2 * i + 1];
  }
  t.cam_idx = fx::from_vector(ci, {p});
  t.pt_idx = fx::from_vector(pi, {p});
  t.featx = fx::from_vector(fxv, {p});
  t.featy = fx::from_vector(fyv, {p});
  t.ones = fx::ones({p}, fx::f64);
  fx::Tensor zero = fx::zeros({p}, fx::f64);
  t.seed_x = fx::concat({t.ones, zero}, 0);
  t.seed_y = fx::concat({zero, t.ones}, 0);
  t.any_zero_rotation = has_zero_rotation(b);
  return t;
}

// Gathers each observation's camera and point into one contiguous (p,) vector per parameter, so
// every op of the batched program runs on contiguous vectors. These per-observation copies are
// the independent variables (as in ADBench: each observation's 2 × 15 block is taken with
// respect to its own copies), so the gather is not differentiated. It is a plain loop because
// fx::index_select falls to the reference backend at ~20 ns per element (measured): as an
// index_select of (11, n) and (3, n) it took longer than the whole Jacobian of manual.
std::vector<fx::Tensor> fx_gather(const Ba& b, const FxBa& t) {
  const size_t p = size_t(b.p);
  fx::Tensor G = fx::empty({kLocal - 1, b.p}, fx::f64);
  double* g = G.data<double>();
  const double *cams = t.cams.data<double>(), *Xs = t.X.data<double>();
  const int64_t *ci = t.cam_idx.data<int64_t>(), *pi = t.pt_idx.data<int64_t>();
  for (size_t i = 0; i < p; ++i) {
    const double* cam = cams + ci[i] * kCam;
    const double* X = Xs + pi[i] * 3;
    for (int k = 0; k < kCam; ++k) g[size_t(k) * p + i] = cam[k];
    for (int k = 0; k < 3; ++k) g[size_t(kCam + k) * p + i] = X[k];
  }
  std::vector<fx::Tensor> v;
  v.reserve(kLocal);
  for (int k = 0; k < kLocal - 1; ++k) v.push_back(fx::select(G, 0, k));
  v.push_back(t.w);
  return v;
}

struct FxResiduals {
  fx::Tensor reproj, w_err;  // (2p,): x residuals then y residuals; (p,)
};

FxResiduals objective_tensor(const Ba& b, const FxBa& t) {
  auto [ex, ey] = reproj_batched(fx_gather(b, t), t.featx, t.featy, t.any_zero_rotation);
  return {fx::concat({ex, ey}, 0), 1.0 - t.w * t.w};
}

// Writes the 30 per-observation columns (x row's 15 partials, then y row's; each a (p,) array,
// or null for a parameter the row does not depend on) and the p weight derivatives into J.vals.
// A plain loop, shared by fluxion and libtorch: fx::stack runs on the reference backend.
void fill_vals(Csr& J, const std::array<const double*, 2 * kLocal>& cols, const double* wd,
               size_t p) {
  double* v = J.vals.data();
  for (size_t i = 0; i < p; ++i)
    for (int k = 0; k < 2 * kLocal; ++k)
      v[30 * i + size_t(k)] = cols[size_t(k)] ? cols[size_t(k)][i] : 0.0;
  std::memcpy(v + 30 * p, wd, p * sizeof(double));
}

// The column pointers of (p,) gradients (an allocation-free zero, stride 0, is materialised:
// one column per row, and no guessing which views are zeros).
std::array<const double*, 2 * kLocal> fx_columns(std::vector<fx::Tensor>& g) {
  std::array<const double*, 2 * kLocal> c{};
  for (size_t k = 0; k < g.size(); ++k) {
    if (!g[k].defined()) continue;
    if (!g[k].is_contiguous()) g[k] = fx::contiguous(g[k]);
    c[k] = g[k].data<double>();
  }
  return c;
}

// The weight rows: d(1 − w²)/dw, one jvp of the elementwise weight error (its Jacobian is
// diagonal, so the all-ones tangent gives every entry).
fx::Tensor fx_weight_derivative(const FxBa& t) {
  return fx::jvp([](const fx::Tensor& w) { return 1.0 - w * w; }, t.w, t.ones).second;
}

// Reverse mode: the residuals as one (2p,) vector; pulling back the indicator of the x rows gives
// d(sum of x residuals)/d v_k = column k of every observation's x row, because observation i's
// residuals depend only on its own entries v_k[i]. Likewise for y.
void jacobian_tensor_reverse(const Ba& b, const FxBa& t, Csr& J) {
  csr_structure(b, J);
  auto f = [&t](const std::vector<fx::Tensor>& v) {
    auto [ex, ey] = reproj_batched(v, t.featx, t.featy, t.any_zero_rotation);
    return fx::concat({ex, ey}, 0);
  };
  auto [y, back] = fx::pullback(f, fx_gather(b, t));
  std::vector<fx::Tensor> gx = back(t.seed_x), gy = back(t.seed_y);
  gx.insert(gx.end(), gy.begin(), gy.end());
  fx::Tensor wd = fx::contiguous(fx_weight_derivative(t));
  fill_vals(J, fx_columns(gx), wd.data<double>(), size_t(b.p));
}

// Forward mode: one jvp per local parameter k, seeding v_k with ones and leaving the others
// without tangent (a symbolic zero), so only the ops downstream of v_k compute tangents.
void jacobian_tensor_forward(const Ba& b, const FxBa& t, Csr& J) {
  csr_structure(b, J);
  auto f = [&t](const std::vector<fx::Tensor>& v) {
    auto [ex, ey] = reproj_batched(v, t.featx, t.featy, t.any_zero_rotation);
    return fx::concat({ex, ey}, 0);
  };
  std::vector<fx::Tensor> v = fx_gather(b, t), cols(2 * kLocal);
  const int64_t p = b.p;
  for (int k = 0; k < kLocal; ++k) {
    std::vector<fx::Tensor> seed(kLocal);
    seed[size_t(k)] = t.ones;
    fx::Tensor d = fx::jvp(f, v, seed).second;
    cols[size_t(k)] = fx::slice(d, 0, 0, p);
    cols[size_t(kLocal + k)] = fx::slice(d, 0, p, 2 * p);
  }
  fx::Tensor wd = fx::contiguous(fx_weight_derivative(t));
  fill_vals(J, fx_columns(cols), wd.data<double>(), size_t(b.p));
}

#ifdef FLUXION_HAVE_TORCH
// ---- (c) libtorch ---------------------------------------------------------------------------
struct TorchBa {
  torch::Tensor cams, X, w, cam_idx, pt_idx, featx, featy;
  bool any_zero_rotation = false;
};

torch::Tensor to_torch(const std::vector<double>& v, std::vector<int64_t> shape) {
  return torch::from_blob(const_cast<double*>(v.data()), shape, torch::kFloat64).clone();
}

TorchBa torch_prepare(const Ba& b, const FxBa& t) {
  auto from_fx_i64 = [](const fx::Tensor& x) {
    std::vector<int64_t> v = fx::to_vector<int64_t>(x);
    return torch::tensor(v, torch::kInt64);
  };
  auto from_fx = [](const fx::Tensor& x) {
    return to_torch(fx::to_vector<double>(x), {x.numel()});
  };
  TorchBa tb;
  tb.cams = to_torch(b.cams, {b.n, kCam});
  tb.X = to_torch(b.X, {b.m, 3});
  tb.w = to_torch(b.w, {b.p});
  tb.cam_idx = from_fx_i64(t.cam_idx);
  tb.pt_idx = from_fx_i64(t.pt_idx);
  tb.featx = from_fx(t.featx);
  tb.featy = from_fx(t.featy);
  tb.any_zero_rotation = t.any_zero_rotation;
  return tb;
}

std::vector<torch::Tensor> torch_gather(const TorchBa& t, bool leaves) {
  torch::Tensor G = t.cams.t().contiguous().index_select(1, t.cam_idx);
  torch::Tensor H = t.X.t().contiguous().index_select(1, t.pt_idx);
  std::vector<torch::Tensor> v;
  v.reserve(kLocal);
  for (int k = 0; k < kCam; ++k) v.push_back(G.select(0, k));
  for (int k = 0; k < 3; ++k) v.push_back(H.select(0, k));
  v.push_back(leaves ? t.w.detach() : t.w);
  if (leaves)
    for (auto& x : v) x = x.detach().requires_grad_(true);
  return v;
}

std::pair<torch::Tensor, torch::Tensor> objective_torch(const TorchBa& t) {
  torch::NoGradGuard ng;
  auto [ex, ey] = reproj_batched(torch_gather(t, false), t.featx, t.featy, t.any_zero_rotation);
  return {torch::cat({ex, ey}, 0), 1.0 - t.w * t.w};
}

void jacobian_torch(const Ba& b, const TorchBa& t, Csr& J) {
  csr_structure(b, J);
  std::vector<torch::Tensor> v = torch_gather(t, true);
  auto [ex, ey] = reproj_batched(v, t.featx, t.featy, t.any_zero_rotation);
  // Parameters a row does not use (y0 for the x rows) come back undefined: allow_unused.
  auto gx = torch::autograd::grad({ex.sum()}, v, {}, /*retain_graph=*/true,
                                  /*create_graph=*/false, /*allow_unused=*/true);
  auto gy = torch::autograd::grad({ey.sum()}, v, {}, false, false, true);
  std::array<const double*, 2 * kLocal> cols{};
  size_t k = 0;
  for (auto* g : {&gx, &gy})
    for (auto& c : *g) {
      if (c.defined()) c = c.contiguous();
      cols[k++] = c.defined() ? c.data_ptr<double>() : nullptr;
    }
  torch::Tensor w = t.w.detach().requires_grad_(true);
  torch::Tensor wd = torch::autograd::grad({(1.0 - w * w).sum()}, {w})[0].contiguous();
  fill_vals(J, cols, wd.data_ptr<double>(), size_t(b.p));
}
#endif

// ---- checks -----------------------------------------------------------------------------------
// max relative error of J against the reference; the structure must match exactly.
double compare(const Csr& J, const Csr& ref) {
  if (J.rows != ref.rows || J.cols != ref.cols || J.nrows != ref.nrows || J.ncols != ref.ncols)
    return INFINITY;
  return max_rel_err(J.vals, ref.vals);
}

// The objective of the tensor/torch residuals against the scalar one, as one vector.
std::vector<double> flat(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> v = a;
  v.insert(v.end(), b.begin(), b.end());
  return v;
}
std::vector<double> scalar_flat(const Residuals& r) {
  // The batched programs put all x residuals before all y residuals.
  const size_t p = r.w_err.size();
  std::vector<double> v(3 * p);
  for (size_t i = 0; i < p; ++i) {
    v[i] = r.reproj[2 * i];
    v[p + i] = r.reproj[2 * i + 1];
    v[2 * p + i] = r.w_err[i];
  }
  return v;
}

// Central differences of the scalar objective for every nonzero of the manual Jacobian.
double finite_difference_error(const Ba& b, const Csr& J) {
  double worst = 0;
  for (int i = 0; i < b.p; ++i) {
    double cam[kCam], X[3];
    std::copy_n(&b.cams[size_t(b.obs[2 * i]) * kCam], kCam, cam);
    std::copy_n(&b.X[size_t(b.obs[2 * i + 1]) * 3], 3, X);
    double w = b.w[i];
    for (int k = 0; k < kLocal; ++k) {
      double* x = k < kCam ? &cam[k] : k < kCam + 3 ? &X[k - kCam] : &w;
      double x0 = *x, h = 1e-6 * std::max(1.0, std::abs(x0)), ep[2], em[2];
      *x = x0 + h;
      reproj_error(cam, X, w, &b.feats[size_t(2) * i], ep);
      *x = x0 - h;
      reproj_error(cam, X, w, &b.feats[size_t(2) * i], em);
      *x = x0;
      for (int r = 0; r < 2; ++r) {
        double fd = (ep[r] - em[r]) / (2 * h), an = J.vals[size_t(30 * i + kLocal * r + k)];
        worst = std::max(worst, std::abs(fd - an) / std::max(1.0, std::abs(an)));
      }
    }
  }
  return worst;
}

// A small random instance in which every third camera has zero rotation (ADBench's small-angle
// branch) and cameras, points and weights all differ.
Ba synthetic() {
  Ba b;
  b.n = 6;
  b.m = 7;
  b.p = 40;
  fx::Generator gen(7);
  auto u = [&](double lo, double hi) {
    return fx::to_vector<double>(fx::uniform({1}, lo, hi, gen, fx::f64))[0];
  };
  for (int c = 0; c < b.n; ++c) {
    double r = c % 3 == 0 ? 0 : 1;
    double cam[kCam] = {r * u(-1, 1), r * u(-1, 1), r * u(-1, 1),  u(-1, 1),
                        u(-1, 1),     u(-12, -8),   u(300, 500),   u(-5, 5),
                        u(-5, 5),     u(-0.1, 0.1), u(-0.01, 0.01)};
    b.cams.insert(b.cams.end(), cam, cam + kCam);
  }
  for (int q = 0; q < b.m; ++q)
    for (int j = 0; j < 3; ++j) b.X.push_back(u(-1, 1));
  for (int i = 0; i < b.p; ++i) {
    b.w.push_back(u(0.2, 1.5));
    b.feats.push_back(u(-50, 50));
    b.feats.push_back(u(-50, 50));
    b.obs.push_back(i % b.n);
    b.obs.push_back((3 * i) % b.m);
  }
  return b;
}

// One implementation: its objective and its Jacobian on prepared data (preparation untimed).
struct Impl {
  std::string name;                    // as printed: ba_<set>_<name>_{objective,jacobian}_s
  std::function<void()> objective;     // computes all 3p residuals
  std::function<void(Csr&)> jacobian;  // fills the CSR Jacobian
  std::function<std::vector<double>()> residuals;  // x residuals, y residuals, weight residuals
};

// Everything prepared for one instance; implementations refer into it.
struct Prepared {
  const Ba& b;
  Residuals r;
  FxBa t;
#ifdef FLUXION_HAVE_TORCH
  TorchBa tb;
#endif
  explicit Prepared(const Ba& b_)
      : b(b_),
        t(fx_prepare(b_))
#ifdef FLUXION_HAVE_TORCH
        ,
        tb(torch_prepare(b_, t))
#endif
  {
  }
};

// All implementations by name; `scalar` and `tensor` are the ones the acceptance ratio uses.
std::vector<Impl> implementations(Prepared& P) {
  const Ba& b = P.b;
  auto scalar_obj = [&P] { objective_scalar(P.b, P.r); };
  auto scalar_res = [&P] {
    objective_scalar(P.b, P.r);
    return scalar_flat(P.r);
  };
  auto tensor_res = [&P] {
    FxResiduals fr = objective_tensor(P.b, P.t);
    return flat(fx::to_vector<double>(fr.reproj), fx::to_vector<double>(fr.w_err));
  };
  std::vector<Impl> v;
  v.push_back({"manual", scalar_obj, [&b](Csr& J) { jacobian_manual(b, J); }, scalar_res});
  v.push_back({"fluxion_tensor", [&P] { (void)objective_tensor(P.b, P.t); },
               [&P](Csr& J) { jacobian_tensor_reverse(P.b, P.t, J); }, tensor_res});
  v.push_back({"fluxion_tensor_forward", [&P] { (void)objective_tensor(P.b, P.t); },
               [&P](Csr& J) { jacobian_tensor_forward(P.b, P.t, J); }, tensor_res});
  v.push_back({"fluxion_scalar", scalar_obj, [&b](Csr& J) { jacobian_scalar(b, J); }, scalar_res});
  v.push_back({"fluxion_scalar_real", scalar_obj, [&b](Csr& J) { jacobian_scalar_reverse(b, J); },
               scalar_res});
#ifdef FLUXION_HAVE_TORCH
  v.push_back({"torch", [&P] { (void)objective_torch(P.tb); },
               [&P](Csr& J) { jacobian_torch(P.b, P.tb, J); },
               [&P] {
                 auto [tr, tw] = objective_torch(P.tb);
                 std::vector<double> a(tr.data_ptr<double>(), tr.data_ptr<double>() + tr.numel());
                 std::vector<double> c(tw.data_ptr<double>(), tw.data_ptr<double>() + tw.numel());
                 return flat(a, c);
               }});
#endif
  return v;
}

// max relative disagreement of every implementation's Jacobian and residuals with manual's.
double agreement(Prepared& P, const std::vector<Impl>& impls, Csr& Jref) {
  jacobian_manual(P.b, Jref);
  objective_scalar(P.b, P.r);
  std::vector<double> rref = scalar_flat(P.r);
  double err = 0;
  Csr J;
  for (const Impl& im : impls) {
    im.jacobian(J);
    err = std::max({err, compare(J, Jref), max_rel_err(im.residuals(), rref)});
  }
  return err;
}

}  // namespace

int main(int argc, char** argv) {
  fx::bench::JacobianArgs args{FLUXION_ADBENCH_DIR "/ba",
                               {"ba1", "ba2", "ba3", "ba4", "ba5", "ba8"},
                               {"fluxion_tensor", "fluxion_scalar", "torch", "manual"},
                               {}};
  if (!fx::bench::parse_jacobian_args("adbench_ba", argc, argv, args)) return 2;
  const std::string& dir = args.dir;
  const std::vector<std::string>& sets = args.sets;
  const std::vector<std::string>& chosen = args.impls;
  omp_set_num_threads(1);
  if (openblas_set_num_threads) openblas_set_num_threads(1);
#ifdef FLUXION_HAVE_TORCH
  torch::set_num_threads(1);
#endif

  // Which files: ba{N}_n..._m..._p....txt named by their ba{N}; "all" takes every one.
  std::vector<std::pair<int, std::string>> files;
  const bool all = sets.size() == 1 && sets[0] == "all";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    int N = 0, n = 0, m = 0, p = 0;
    if (std::sscanf(name.c_str(), "ba%d_n%d_m%d_p%d.txt", &N, &n, &m, &p) != 4) continue;
    if (all || std::find(sets.begin(), sets.end(), "ba" + std::to_string(N)) != sets.end())
      files.push_back({N, e.path().string()});
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "adbench_ba: no BA files for --sets in %s\n", dir.c_str());
    return 2;
  }

  // Self-check on the synthetic instance: every implementation (both tensor modes, both scalar
  // types), the small-angle branch, and the hand derivative against central differences.
  {
    Ba b = synthetic();
    Prepared P(b);
    Csr man;
    double err = agreement(P, implementations(P), man);
    double fd = finite_difference_error(b, man);
    std::printf("ba_selfcheck_max_rel_error=%.3e\nba_selfcheck_fd_error=%.3e\n", err, fd);
    if (!(err <= 1e-8) || !(fd <= 1e-5)) {
      std::fprintf(stderr,
                   "adbench_ba: self-check failed (agreement %.3e, finite differences %.3e)\n", err,
                   fd);
      return 1;
    }
  }

  {
    Ba b = synthetic();
    Prepared P(b);
    std::vector<Impl> all_impls = implementations(P);
    for (const std::string& c : chosen)
      if (std::none_of(all_impls.begin(), all_impls.end(),
                       [&](const Impl& im) { return im.name == c; })) {
        std::fprintf(stderr, "adbench_ba: unknown implementation '%s' in --impls\n", c.c_str());
        return 2;
      }
  }

  std::printf("%-5s %8s", "set", "p");
  for (const std::string& c : chosen) std::printf(" %24s", (c + " obj/jac").c_str());
  std::printf(" %7s %8s\n", "fx/man", "rel err");
  bool all_ok = true;
  for (const auto& [N, path] : files) {
    Ba b = fx::data::read_ba(path);
    std::string tag = "ba_ba" + std::to_string(N);
    Prepared P(b);
    std::vector<Impl> all_impls = implementations(P), impls;
    for (const std::string& c : chosen)
      for (Impl& im : all_impls)
        if (im.name == c) impls.push_back(im);
    Csr Jref, J;
    double err = agreement(P, impls, Jref);
    std::printf("%s_n=%d\n%s_m=%d\n%s_p=%d\n%s_nnz=%zu\n", tag.c_str(), b.n, tag.c_str(), b.m,
                tag.c_str(), b.p, tag.c_str(), Jref.vals.size());
    // Timed in alternation (interleaved_time), objectives then Jacobians.
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
    bool ok = err <= 1e-8;
    all_ok = all_ok && ok;
    std::printf("%s_max_rel_error=%.3e\n%s_ratio_vs_manual=%.4f\n", tag.c_str(), err, tag.c_str(),
                ratio);
    if (!std::isnan(torch_ratio))
      std::printf("%s_ratio_fluxion_torch=%.4f\n", tag.c_str(), torch_ratio);
    std::printf("%s_timing_rounds=%zu\n", tag.c_str(), cmp.rounds);
    std::printf("%-5s %8d", ("ba" + std::to_string(N)).c_str(), b.p);
    for (size_t i = 0; i < impls.size(); ++i)
      std::printf("    %10.3e/%10.3e", cmp.objective_s[i], cmp.jacobian_s[i]);
    std::printf(" %7.2f %8.1e%s\n", ratio, err, ok ? "" : "  MISMATCH");
    std::fflush(stdout);
  }
  std::printf("ba_all_agree=%d\n", int(all_ok));
  return all_ok ? 0 : 1;
}
