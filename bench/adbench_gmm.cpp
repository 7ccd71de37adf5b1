// ADBench GMM: the Gaussian-mixture log-likelihood with its Wishart prior (objective in
// ../shared/adbench/README.md) and its gradient with respect to (alpha, mu, icf), computed
//   fluxion  — fluxion tensors (f64), gradient by fx::gradient,
//   libtorch — the same tensor program in libtorch (f64), gradient by autograd,
//   manual   — hand-written loops and a hand-derived gradient (ADBench's "manual"),
// checked against each other (max |a - b| / max |b| <= 1e-8) and timed the ADBench way: each
// sample repeats the call until it has run >= --min-time seconds (0.5), the time is the minimum
// over up to --samples samples (10), stopping early once each implementation has used --budget
// seconds and 5 samples are taken (preparation untimed; objective and gradient timed
// separately). The implementations take their samples in turn, and a ratio is the median of
// the per-round ratios (adbench_timing.hpp: interleaved_time). One thread everywhere.
//
//   ./build/bench/adbench_gmm [--dir ../shared/adbench/gmm] [--sets 1k,10k] [--max-d 20]
//       [--max-k 200] [--min-time 0.5] [--samples 10] [--budget 5] [--only d2_K5]
//   gmm_1k_d2_K5_fluxion_gradient_s=...  gmm_1k_d2_K5_ratio_fluxion_manual=...
//   gmm_1k_d2_K5_ratio_fluxion_libtorch=...  gmm_1k_d2_K5_max_rel_err=...
// (The scalar-AD variant lives in bench/scalar_ad.cpp.)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/data/adbench.hpp>
#include <fluxion/ops.hpp>

#ifdef FLUXION_HAVE_TORCH
#include <torch/torch.h>
#endif

#include "adbench_timing.hpp"

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {
using fx::bench::Interleaved;
using fx::bench::interleaved_time;
using fx::bench::max_rel_err;
using fx::bench::TimeOpts;

// ---- input -----------------------------------------------------------------------------------
struct Gmm {
  int D = 0, K = 0, N = 0;
  std::vector<double> alphas, means, icf, x;  // K, K*D, K*D(D+1)/2, N*D
  double gamma = 0, m = 0;
};

// The library's ADBench reader (fluxion/data/adbench.hpp), in this file's naming.
Gmm read_gmm(const std::string& path) {
  fx::data::GmmInput in = fx::data::read_gmm(path);
  Gmm g;
  g.D = in.d;
  g.K = in.k;
  g.N = in.n;
  g.alphas = std::move(in.alphas);
  g.means = std::move(in.means);
  g.icf = std::move(in.icf);
  g.x = std::move(in.x);
  g.gamma = in.gamma;
  g.m = in.m;
  return g;
}

// -N D/2 log 2pi - K (n' D (log gamma - log 2 / 2) - log Gamma_D(n'/2)),  n' = D + m + 1.
double gmm_constant(const Gmm& g) {
  double D = g.D, n = D + g.m + 1;
  double lgd = 0.25 * D * (D - 1) * std::log(M_PI);
  for (int j = 1; j <= g.D; ++j) lgd += std::lgamma(0.5 * n + 0.5 * (1 - j));
  double C = n * D * (std::log(g.gamma) - 0.5 * std::log(2.0)) - lgd;
  return -0.5 * double(g.N) * D * std::log(2 * M_PI) - double(g.K) * C;
}

// Q's row-major D*D entries as indices into [exp(q) (D), L (D(D-1)/2), 0]: the map used by the
// tensor versions to build Q_k with one gather.
std::vector<int64_t> q_index(int D) {
  std::vector<int64_t> idx(static_cast<size_t>(D * D),
                           int64_t(D) + D * (D - 1) / 2);  // the zero slot
  int64_t l = D;
  for (int i = 0; i < D; ++i) {  // column
    idx[size_t(i * D + i)] = i;
    for (int j = i + 1; j < D; ++j) idx[size_t(j * D + i)] = l++;  // row j > i
  }
  return idx;
}

// x (N x D) with a column of ones appended (N x (D + 1)): the tensor programs' homogeneous x.
std::vector<double> homogeneous_x(const Gmm& g) {
  std::vector<double> v;
  v.reserve(size_t(g.N) * size_t(g.D + 1));
  for (int i = 0; i < g.N; ++i) {
    v.insert(v.end(), g.x.begin() + ptrdiff_t(i) * g.D, g.x.begin() + ptrdiff_t(i + 1) * g.D);
    v.push_back(1.0);
  }
  return v;
}

// ---- manual ----------------------------------------------------------------------------------
// Objective; when g is non-null also the gradient, laid out [alphas, means, icf].
double manual(const Gmm& d, const double* alphas, const double* means, const double* icf,
              double* g) {
  const int D = d.D, K = d.K, N = d.N, T = D * (D + 1) / 2;
  std::vector<double> expq(static_cast<size_t>(K * D)), sumq(static_cast<size_t>(K));
  for (int k = 0; k < K; ++k) {
    double s = 0;
    for (int j = 0; j < D; ++j) {
      s += icf[k * T + j];
      expq[size_t(k * D + j)] = std::exp(icf[k * T + j]);
    }
    sumq[size_t(k)] = s;
  }
  std::vector<double> xc(static_cast<size_t>(K * D)), qxc(static_cast<size_t>(K * D)),
      main(static_cast<size_t>(K)), tmp(static_cast<size_t>(D));
  double* ga = g;
  double* gm = g ? g + K : nullptr;
  double* gi = g ? g + K + K * D : nullptr;
  if (g) std::fill(g, g + K + K * D + K * T, 0.0);
  double slse = 0;
  for (int i = 0; i < N; ++i) {
    const double* xi = &d.x[size_t(i * D)];
    double mx = -INFINITY;
    for (int k = 0; k < K; ++k) {
      double* c = &xc[size_t(k * D)];
      double* q = &qxc[size_t(k * D)];
      const double* e = &expq[size_t(k * D)];
      const double* L = icf + k * T + D;
      for (int j = 0; j < D; ++j) {
        c[j] = xi[j] - means[k * D + j];
        q[j] = e[j] * c[j];
      }
      int l = 0;
      for (int col = 0; col < D; ++col)
        for (int r = col + 1; r < D; ++r) q[r] += L[l++] * c[col];
      double sq = 0;
      for (int j = 0; j < D; ++j) sq += q[j] * q[j];
      main[size_t(k)] = alphas[k] + sumq[size_t(k)] - 0.5 * sq;
      mx = std::max(mx, main[size_t(k)]);
    }
    double se = 0;
    for (int k = 0; k < K; ++k) se += std::exp(main[size_t(k)] - mx);
    double lse = mx + std::log(se);
    slse += lse;
    if (!g) continue;
    for (int k = 0; k < K; ++k) {
      double w = std::exp(main[size_t(k)] - lse);
      const double* c = &xc[size_t(k * D)];
      const double* q = &qxc[size_t(k * D)];
      const double* e = &expq[size_t(k * D)];
      const double* L = icf + k * T + D;
      double* gq = gi + k * T;
      double* gL = gq + D;
      ga[k] += w;
      // d main / d q_j = 1 - qxc_j exp(q_j) xc_j;  d main / d L(r, col) = -qxc_r xc_col;
      // d main / d mu = Q^T qxc.
      for (int j = 0; j < D; ++j) {
        gq[j] += w * (1 - q[j] * e[j] * c[j]);
        tmp[size_t(j)] = e[j] * q[j];
      }
      int l = 0;
      for (int col = 0; col < D; ++col)
        for (int r = col + 1; r < D; ++r) {
          gL[l] -= w * q[r] * c[col];
          tmp[size_t(col)] += L[l] * q[r];
          ++l;
        }
      for (int j = 0; j < D; ++j) gm[k * D + j] += w * tmp[size_t(j)];
    }
  }
  // - N lse(alphas)
  double amx = *std::max_element(alphas, alphas + K), ase = 0;
  for (int k = 0; k < K; ++k) ase += std::exp(alphas[k] - amx);
  double lse_a = amx + std::log(ase);
  // Wishart prior: sum_k 0.5 gamma^2 (|exp q_k|^2 + |L_k|^2) - m sum q_k.
  double prior = 0, g2 = d.gamma * d.gamma;
  for (int k = 0; k < K; ++k) {
    double fro = 0;
    for (int j = 0; j < D; ++j) fro += expq[size_t(k * D + j)] * expq[size_t(k * D + j)];
    for (int l = D; l < T; ++l) fro += icf[k * T + l] * icf[k * T + l];
    prior += 0.5 * g2 * fro - d.m * sumq[size_t(k)];
    if (g) {
      for (int k2 = k, j = 0; j < D; ++j)
        gi[k2 * T + j] += g2 * expq[size_t(k2 * D + j)] * expq[size_t(k2 * D + j)] - d.m;
      for (int l = D; l < T; ++l) gi[k * T + l] += g2 * icf[k * T + l];
      ga[k] -= double(N) * std::exp(alphas[k] - lse_a);
    }
  }
  return gmm_constant(d) + slse - double(N) * lse_a + prior;
}

// ---- fluxion ---------------------------------------------------------------------------------
struct FxParams {
  fx::Tensor alphas, means, icf;  // (K,), (K, D), (K, D(D+1)/2)
  FX_FIELDS(alphas, means, icf)
};
struct FxConst {
  fx::Tensor x, qidx, zero;  // x with a column of ones (N, D + 1), (D*D,) i64, (K, 1)
  int D, K, N;
  double gamma, m, constant;
};

// The libtorch peer below is the same op program; fx::sum_squares(x, axes) is fluxion's one-pass
// sum(square(x), axes) (Julia's sum(abs2, x; dims)), where libtorch, which has no such op, runs
// square().sum(). (x_i - mu_k) Q_k^T is computed in homogeneous coordinates, as one product
// [x_i, 1] [Q_k^T; -mu_k Q_k^T] (x carries a column of ones, prepared untimed): no centred
// (K, N, D) tensor and no separate subtraction, forward or backward. Against centring x first
// (ADBench's form) fluxion's gradient at d = 10, K = 10 took ~25% less time, against subtracting
// mu_k Q_k^T after the product ~8% less.
fx::Tensor fx_objective(const FxParams& p, const FxConst& c) {
  const int64_t D = c.D, K = c.K;
  fx::Tensor q = fx::slice(p.icf, 1, 0, D);
  fx::Tensor L = fx::slice(p.icf, 1, D, D * (D + 1) / 2);
  fx::Tensor eq = fx::exp(q);
  fx::Tensor Q =
      fx::reshape(fx::index_select(fx::concat({eq, L, c.zero}, 1), 1, c.qidx), {K, D, D});
  fx::Tensor Qt = fx::transpose(Q, 1, 2);
  fx::Tensor W = fx::concat({Qt, -fx::matmul(fx::unsqueeze(p.means, 1), Qt)}, 1);  // (K, D+1, D)
  fx::Tensor sq = fx::sum_squares(fx::matmul(c.x, W), {2});                        // (K, N)
  fx::Tensor mn = fx::unsqueeze(p.alphas + fx::sum(q, {1}), 1) - sq * 0.5;         // (K, N)
  fx::Tensor slse = fx::sum(fx::logsumexp(mn, {0}));
  fx::Tensor prior =
      (fx::sum_squares(eq) + fx::sum_squares(L)) * (0.5 * c.gamma * c.gamma) - fx::sum(q) * c.m;
  return slse - fx::logsumexp(p.alphas) * double(c.N) + prior + c.constant;
}

std::vector<double> fx_flat(const FxParams& g) {
  std::vector<double> v;
  for (const fx::Tensor* t : {&g.alphas, &g.means, &g.icf}) {
    std::vector<double> a = fx::to_vector<double>(*t);
    v.insert(v.end(), a.begin(), a.end());
  }
  return v;
}

#ifdef FLUXION_HAVE_TORCH
// ---- libtorch --------------------------------------------------------------------------------
struct TorchConst {
  torch::Tensor x, qidx, zero;
  int D, K, N;
  double gamma, m, constant;
};

torch::Tensor to_torch(const std::vector<double>& v, std::vector<int64_t> shape) {
  return torch::from_blob(const_cast<double*>(v.data()), shape, torch::kFloat64).clone();
}

torch::Tensor torch_objective(const torch::Tensor& alphas, const torch::Tensor& means,
                              const torch::Tensor& icf, const TorchConst& c) {
  const int64_t D = c.D, K = c.K;
  torch::Tensor q = icf.narrow(1, 0, D);
  torch::Tensor L = icf.narrow(1, D, D * (D - 1) / 2);
  torch::Tensor eq = q.exp();
  torch::Tensor Q = torch::cat({eq, L, c.zero}, 1).index_select(1, c.qidx).reshape({K, D, D});
  torch::Tensor Qt = Q.transpose(1, 2);
  torch::Tensor W = torch::cat({Qt, -torch::matmul(means.unsqueeze(1), Qt)}, 1);
  torch::Tensor sq = torch::matmul(c.x, W).square().sum({2});
  torch::Tensor mn = (alphas + q.sum({1})).unsqueeze(1) - sq * 0.5;
  torch::Tensor slse = torch::logsumexp(mn, {0}).sum();
  torch::Tensor prior =
      (eq.square().sum() + L.square().sum()) * (0.5 * c.gamma * c.gamma) - q.sum() * c.m;
  return slse - torch::logsumexp(alphas, {0}) * double(c.N) + prior + c.constant;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  std::string dir = FLUXION_ADBENCH_DIR "/gmm", only;
  std::vector<std::string> sets{"1k", "10k"};
  int max_d = 1 << 20, max_k = 1 << 20;
  TimeOpts to;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir") dir = v;
    else if (k == "--sets") {
      sets.clear();
      std::stringstream ss(v);
      for (std::string s; std::getline(ss, s, ',');) sets.push_back(s);
    } else if (k == "--max-d") max_d = std::atoi(v.c_str());
    else if (k == "--max-k") max_k = std::atoi(v.c_str());
    else if (k == "--min-time") to.min_time = std::atof(v.c_str());
    else if (k == "--samples") to.samples = std::max(1, std::atoi(v.c_str()));
    else if (k == "--budget") to.budget = std::atof(v.c_str());
    else if (k == "--only") only = v;
    else {
      std::fprintf(stderr, "adbench_gmm: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  omp_set_num_threads(1);
  if (openblas_set_num_threads) openblas_set_num_threads(1);
#ifdef FLUXION_HAVE_TORCH
  torch::set_num_threads(1);
#endif
  std::printf("%-5s %-10s %11s %11s %11s %11s %11s %11s %9s %9s %9s\n", "set", "size", "fx obj",
              "fx grad", "torch obj", "torch grad", "man obj", "man grad", "fx/man", "fx/torch",
              "rel err");
  bool all_ok = true;
  for (const std::string& set : sets) {
    std::vector<std::pair<std::pair<int, int>, std::string>> files;
    for (const auto& e : std::filesystem::directory_iterator(dir + "/" + set)) {
      std::string name = e.path().filename().string();
      int D = 0, K = 0;
      if (std::sscanf(name.c_str(), "gmm_d%d_K%d.txt", &D, &K) != 2) continue;
      if (D > max_d || K > max_k) continue;
      if (!only.empty() && name != "gmm_" + only + ".txt") continue;
      files.push_back({{D, K}, e.path().string()});
    }
    std::sort(files.begin(), files.end());
    for (const auto& [dk, path] : files) {
      Gmm d = read_gmm(path);
      const int D = d.D, K = d.K, N = d.N, T = D * (D + 1) / 2;
      std::string tag = "gmm_" + set + "_d" + std::to_string(D) + "_K" + std::to_string(K);

      // manual
      std::vector<double> gman(static_cast<size_t>(K + K * D + K * T));
      double eman = manual(d, d.alphas.data(), d.means.data(), d.icf.data(), gman.data());

      // fluxion
      FxParams p{fx::from_vector(d.alphas, {K}), fx::from_vector(d.means, {K, D}),
                 fx::from_vector(d.icf, {K, T})};
      const std::vector<double> xh = homogeneous_x(d);
      FxConst c{fx::from_vector(xh, {N, D + 1}),
                fx::from_vector(q_index(D), {D * D}),
                fx::zeros({K, 1}, fx::f64),
                D,
                K,
                N,
                d.gamma,
                d.m,
                gmm_constant(d)};
      double efx = fx_objective(p, c).item();
      auto obj = [&c](const FxParams& q) { return fx_objective(q, c); };
      std::vector<double> gfx = fx_flat(fx::gradient(obj, p));

      double err = std::max(max_rel_err(gfx, gman), std::abs(efx - eman) / std::abs(eman));
      // Timed in alternation (interleaved_time): objectives, then gradients; index 0 fluxion,
      // 1 manual, 2 libtorch.
      std::vector<std::function<void()>> objectives{
          [&] { (void)fx_objective(p, c).item(); },
          [&] { manual(d, d.alphas.data(), d.means.data(), d.icf.data(), nullptr); }};
      std::vector<std::function<void()>> gradients{
          [&] { (void)fx::gradient(obj, p); },
          [&] { manual(d, d.alphas.data(), d.means.data(), d.icf.data(), gman.data()); }};
#ifdef FLUXION_HAVE_TORCH
      TorchConst tc{to_torch(xh, {N, D + 1}),
                    torch::tensor(q_index(D), torch::kInt64),
                    torch::zeros({K, 1}, torch::kFloat64),
                    D,
                    K,
                    N,
                    d.gamma,
                    d.m,
                    gmm_constant(d)};
      torch::Tensor ta = to_torch(d.alphas, {K}).requires_grad_(true);
      torch::Tensor tm = to_torch(d.means, {K, D}).requires_grad_(true);
      torch::Tensor ti = to_torch(d.icf, {K, T}).requires_grad_(true);
      auto torch_grad = [&] {
        torch::Tensor e = torch_objective(ta, tm, ti, tc);
        auto gs = torch::autograd::grad({e}, {ta, tm, ti});
        return gs;
      };
      double etc;
      {
        torch::NoGradGuard ng;
        etc = torch_objective(ta, tm, ti, tc).item<double>();
      }
      auto gs = torch_grad();
      std::vector<double> gtc;
      for (auto& t : gs) {
        torch::Tensor cc = t.contiguous();
        gtc.insert(gtc.end(), cc.data_ptr<double>(), cc.data_ptr<double>() + cc.numel());
      }
      err = std::max({err, max_rel_err(gtc, gman), std::abs(etc - eman) / std::abs(eman)});
      objectives.push_back([&] {
        torch::NoGradGuard ng;
        (void)torch_objective(ta, tm, ti, tc).item<double>();
      });
      gradients.push_back([&] { (void)torch_grad(); });
#endif
      const Interleaved obj_t = interleaved_time(objectives, to);
      const Interleaved grad_t = interleaved_time(gradients, to);
      const double tfx_o = obj_t.min(0), tman_o = obj_t.min(1);
      const double tfx_g = grad_t.min(0), tman_g = grad_t.min(1);
      const bool torch = gradients.size() > 2;
      const double ttc_o = torch ? obj_t.min(2) : NAN, ttc_g = torch ? grad_t.min(2) : NAN;
      const double vs_manual = grad_t.ratio(0, 1), vs_torch = torch ? grad_t.ratio(0, 2) : NAN;
      bool ok = err <= 1e-8;
      all_ok = all_ok && ok;
      std::printf("%-5s %-10s %11.3e %11.3e %11.3e %11.3e %11.3e %11.3e %9.2f %9.3f %9.1e%s\n",
                  set.c_str(), (tag.substr(tag.find("_d") + 1)).c_str(), tfx_o, tfx_g, ttc_o, ttc_g,
                  tman_o, tman_g, vs_manual, vs_torch, err, ok ? "" : "  MISMATCH");
      std::printf("%s_fluxion_objective_s=%.6e\n%s_fluxion_gradient_s=%.6e\n", tag.c_str(), tfx_o,
                  tag.c_str(), tfx_g);
#ifdef FLUXION_HAVE_TORCH
      std::printf("%s_libtorch_objective_s=%.6e\n%s_libtorch_gradient_s=%.6e\n", tag.c_str(), ttc_o,
                  tag.c_str(), ttc_g);
      std::printf("%s_ratio_fluxion_libtorch=%.4f\n", tag.c_str(), vs_torch);
#endif
      std::printf("%s_manual_objective_s=%.6e\n%s_manual_gradient_s=%.6e\n", tag.c_str(), tman_o,
                  tag.c_str(), tman_g);
      std::printf("%s_ratio_fluxion_manual=%.4f\n", tag.c_str(), vs_manual);
      std::printf("%s_timing_rounds=%zu\n", tag.c_str(), grad_t.rounds.size());
      std::printf("%s_max_rel_err=%.3e\n", tag.c_str(), err);
      std::fflush(stdout);
    }
  }
  std::printf("gmm_all_agree=%d\n", int(all_ok));
  return all_ok ? 0 : 1;
}
