// ADBench LSTM: the text model of ../shared/adbench/README.md (per-lane LSTM layers, loss over
// a one-hot character sequence) and its gradient with respect to the main and extra parameters,
//   fluxion  — fluxion tensors (f64), one op per lane-vector operation, fx::gradient,
//   scalar   — the same objective as generic scalar code (a template on the number type over
//              std::vector<T>), run on double for the objective and differentiated by
//              fx::gradient on fx::Real (scalar reverse mode),
//   libtorch — the same tensor program in libtorch (f64), autograd,
//   manual   — hand-written loops with a hand-derived backward pass through time,
// checked against each other (max |a - b| / max |b| <= 1e-8) and timed the ADBench way (each
// sample repeats the call until >= --min-time s, minimum over up to --samples samples within
// --budget s per implementation; objective and gradient separately; reading and preparation
// untimed; one thread). The implementations take their samples in turn, and a ratio is the
// median of the per-round ratios (adbench_timing.hpp: interleaved_time).
//
//   ./build/bench/adbench_lstm [--dir ../shared/adbench/lstm] [--only l2_c1024]
//       [--min-time 0.5] [--samples 10] [--budget 5]
//   lstm_l2_c1024_fluxion_gradient_s=...  lstm_l2_c1024_ratio_fluxion_manual=...
//   lstm_l2_c1024_ratio_fluxion_libtorch=...  lstm_l2_c1024_max_rel_err=...
//   lstm_l2_c1024_scalar_gradient_s=...  lstm_l2_c1024_ratio_scalar_manual=...
//   lstm_l2_c1024_ratio_fluxion_best_manual=...   (the faster of tensor and scalar fluxion)
//
// The tensor versions run the recurrence step by step (it is sequential) and compute the loss
// over all steps at once from the stacked predictions: the same program in both libraries.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
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

struct Lstm {
  int L = 0, C = 0, B = 0;
  std::vector<double> main, extra, state, seq;  // 2L*4B, 3B, 2L*B, C*B
};

Lstm read_lstm(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "adbench_lstm: cannot open %s\n", path.c_str());
    std::exit(1);
  }
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  std::vector<double> v;
  const char* p = s.c_str();
  char* end = nullptr;
  for (;;) {
    double d = std::strtod(p, &end);
    if (end == p) break;
    v.push_back(d);
    p = end;
  }
  Lstm m;
  m.L = int(v[0]);
  m.C = int(v[1]);
  m.B = int(v[2]);
  size_t L = size_t(m.L), C = size_t(m.C), B = size_t(m.B), at = 3;
  size_t need = 3 + 2 * L * 4 * B + 3 * B + 2 * L * B + C * B;
  if (v.size() != need) {
    std::fprintf(stderr, "adbench_lstm: %s: expected %zu numbers, found %zu\n", path.c_str(), need,
                 v.size());
    std::exit(1);
  }
  auto take = [&](size_t n) {
    std::vector<double> r(v.begin() + long(at), v.begin() + long(at + n));
    at += n;
    return r;
  };
  m.main = take(2 * L * 4 * B);
  m.extra = take(3 * B);
  m.state = take(2 * L * B);
  m.seq = take(C * B);
  return m;
}

double sigm(double x) { return 1 / (1 + std::exp(-x)); }

// ---- manual ----------------------------------------------------------------------------------
// Gate order in a block: forget, input, output, change. Layer l: weights at main[l*8B],
// biases at main[l*8B + 4B]. When g is non-null it receives [d main, d extra].
double manual(const Lstm& d, const double* main, const double* extra, double* g) {
  const int L = d.L, C = d.C, B = d.B, T = C - 1;
  const double* inw = extra;
  const double* outw = extra + B;
  const double* outb = extra + 2 * B;
  // Per (t, l): x, hprev, cprev, f, i, o, gg, c, tc (9 B-vectors); per t: p (B), lse.
  const bool grad = g != nullptr;
  std::vector<double> h(d.state.size() / 2), c(h.size());
  for (int l = 0; l < L; ++l)
    for (int b = 0; b < B; ++b) {
      h[size_t(l * B + b)] = d.state[size_t(2 * l * B + b)];
      c[size_t(l * B + b)] = d.state[size_t(2 * l * B + B + b)];
    }
  std::vector<double> rec(grad ? size_t(T) * size_t(L) * 9 * size_t(B) : 0),
      P(grad ? size_t(T * B) : 0), lses(grad ? size_t(T) : 0), y(static_cast<size_t>(B)),
      p(static_cast<size_t>(B));
  double total = 0;
  for (int t = 0; t < T; ++t) {
    const double* xs = &d.seq[size_t(t * B)];
    for (int b = 0; b < B; ++b) y[size_t(b)] = xs[b] * inw[b];
    for (int l = 0; l < L; ++l) {
      const double* W = main + l * 8 * B;
      const double* bb = W + 4 * B;
      double* hl = &h[size_t(l * B)];
      double* cl = &c[size_t(l * B)];
      double* r = grad ? &rec[(size_t(t) * size_t(L) + size_t(l)) * 9 * size_t(B)] : nullptr;
      for (int b = 0; b < B; ++b) {
        double x = y[size_t(b)], hp = hl[b], cp = cl[b];
        double f = sigm(x * W[b] + bb[b]);
        double i = sigm(hp * W[B + b] + bb[B + b]);
        double o = sigm(x * W[2 * B + b] + bb[2 * B + b]);
        double gg = std::tanh(hp * W[3 * B + b] + bb[3 * B + b]);
        double cn = cp * f + i * gg;
        double tc = std::tanh(cn);
        double hn = o * tc;
        if (r) {
          r[b] = x;
          r[B + b] = hp;
          r[2 * B + b] = cp;
          r[3 * B + b] = f;
          r[4 * B + b] = i;
          r[5 * B + b] = o;
          r[6 * B + b] = gg;
          r[7 * B + b] = cn;
          r[8 * B + b] = tc;
        }
        cl[b] = cn;
        hl[b] = hn;
        y[size_t(b)] = hn;
      }
    }
    double se = 0;
    for (int b = 0; b < B; ++b) {
      p[size_t(b)] = y[size_t(b)] * outw[b] + outb[b];
      se += std::exp(p[size_t(b)]);
    }
    double lse = std::log(se + 2);
    const double* nx = &d.seq[size_t((t + 1) * B)];
    for (int b = 0; b < B; ++b) total += nx[b] * (p[size_t(b)] - lse);
    if (grad) {
      std::copy(p.begin(), p.end(), P.begin() + long(t * B));
      lses[size_t(t)] = lse;
    }
  }
  const double count = double(T) * B;
  const double loss = -total / count;
  if (!grad) return loss;

  double* gm = g;
  double* ge = g + 2 * L * 4 * B;
  std::fill(g, g + 2 * L * 4 * B + 3 * B, 0.0);
  std::vector<double> dh(size_t(L * B), 0.0), dc(size_t(L * B), 0.0), dy(static_cast<size_t>(B));
  for (int t = T - 1; t >= 0; --t) {
    const double* nx = &d.seq[size_t((t + 1) * B)];
    const double* pt = &P[size_t(t * B)];
    double ssum = 0;
    for (int b = 0; b < B; ++b) ssum += nx[b];
    const double* rtop = &rec[(size_t(t) * size_t(L) + size_t(L - 1)) * 9 * size_t(B)];
    for (int b = 0; b < B; ++b) {
      double dp = -(nx[b] - ssum * std::exp(pt[b] - lses[size_t(t)])) / count;
      double ytop = rtop[5 * B + b] * rtop[8 * B + b];  // o * tanh(c): the top layer's output
      ge[B + b] += dp * ytop;
      ge[2 * B + b] += dp;
      dy[size_t(b)] = dp * outw[b];
    }
    for (int l = L - 1; l >= 0; --l) {
      const double* W = main + l * 8 * B;
      double* gW = gm + l * 8 * B;
      double* gb = gW + 4 * B;
      const double* r = &rec[(size_t(t) * size_t(L) + size_t(l)) * 9 * size_t(B)];
      for (int b = 0; b < B; ++b) {
        double x = r[b], hp = r[B + b], cp = r[2 * B + b], f = r[3 * B + b], i = r[4 * B + b],
               o = r[5 * B + b], gg = r[6 * B + b], tc = r[8 * B + b];
        double dht = dy[size_t(b)] + dh[size_t(l * B + b)];
        double dct = dc[size_t(l * B + b)] + dht * o * (1 - tc * tc);
        double dpo = dht * tc * o * (1 - o);
        double dpf = dct * cp * f * (1 - f);
        double dpi = dct * gg * i * (1 - i);
        double dpg = dct * i * (1 - gg * gg);
        dc[size_t(l * B + b)] = dct * f;
        gW[b] += dpf * x;
        gb[b] += dpf;
        gW[B + b] += dpi * hp;
        gb[B + b] += dpi;
        gW[2 * B + b] += dpo * x;
        gb[2 * B + b] += dpo;
        gW[3 * B + b] += dpg * hp;
        gb[3 * B + b] += dpg;
        dh[size_t(l * B + b)] = dpi * W[B + b] + dpg * W[3 * B + b];
        dy[size_t(b)] = dpf * W[b] + dpo * W[2 * B + b];
      }
    }
    const double* xs = &d.seq[size_t(t * B)];
    for (int b = 0; b < B; ++b) ge[b] += dy[size_t(b)] * xs[b];
  }
  return loss;
}

// ---- scalar: the manual forward pass written once for any number type ----------------------
// The same arithmetic as manual() (same gate layout and order of operations), so the double
// instantiation is the objective and the fx::Real one records it for fx::gradient.
template <class T>
T scalar_objective(const Lstm& d, const std::vector<T>& main, const std::vector<T>& extra) {
  using std::exp, std::log, std::tanh;
  const int L = d.L, C = d.C, B = d.B, T_ = C - 1;
  auto sig = [](const auto& x) { return 1 / (1 + exp(-x)); };
  const T* inw = extra.data();
  const T* outw = inw + B;
  const T* outb = inw + 2 * B;
  const size_t nh = size_t(L) * size_t(B), nb = size_t(B);
  std::vector<T> h(nh), c(nh), y(nb), p(nb);
  for (int l = 0; l < L; ++l)
    for (int b = 0; b < B; ++b) {
      h[size_t(l * B + b)] = d.state[size_t(2 * l * B + b)];
      c[size_t(l * B + b)] = d.state[size_t(2 * l * B + B + b)];
    }
  T total = 0;
  for (int t = 0; t < T_; ++t) {
    const double* xs = &d.seq[size_t(t * B)];
    for (int b = 0; b < B; ++b) y[size_t(b)] = xs[b] * inw[b];
    for (int l = 0; l < L; ++l) {
      const T* W = main.data() + l * 8 * B;
      const T* bb = W + 4 * B;
      for (int b = 0; b < B; ++b) {
        const T& x = y[size_t(b)];
        const T& hp = h[size_t(l * B + b)];
        T f = sig(x * W[b] + bb[b]);
        T i = sig(hp * W[B + b] + bb[B + b]);
        T o = sig(x * W[2 * B + b] + bb[2 * B + b]);
        T gg = tanh(hp * W[3 * B + b] + bb[3 * B + b]);
        T cn = c[size_t(l * B + b)] * f + i * gg;
        c[size_t(l * B + b)] = cn;
        T hn = o * tanh(cn);
        h[size_t(l * B + b)] = hn;
        y[size_t(b)] = hn;
      }
    }
    T se = 0;
    for (int b = 0; b < B; ++b) {
      p[size_t(b)] = y[size_t(b)] * outw[b] + outb[b];
      se += exp(p[size_t(b)]);
    }
    T lse = log(se + 2);
    const double* nx = &d.seq[size_t((t + 1) * B)];
    for (int b = 0; b < B; ++b) total += nx[b] * (p[size_t(b)] - lse);
  }
  return -total / (double(T_) * B);
}

// ---- fluxion ---------------------------------------------------------------------------------
struct FxParams {
  fx::Tensor main, extra;  // (L, 2, 4, B), (3, B)
  FX_FIELDS(main, extra)
};
struct FxConst {
  std::vector<fx::Tensor> xs;  // the C-1 input rows
  fx::Tensor next;             // (C-1, B): the targets
  std::vector<fx::Tensor> h0, c0;
  int L, C, B;
};

fx::Tensor fx_objective(const FxParams& p, const FxConst& k) {
  const int L = k.L;
  std::vector<std::array<fx::Tensor, 8>> w(static_cast<size_t>(L));  // Wf Wi Wo Wg bf bi bo bg
  for (int l = 0; l < L; ++l) {
    fx::Tensor ml = fx::select(p.main, 0, l);
    for (int j = 0; j < 8; ++j)
      w[size_t(l)][size_t(j)] = fx::select(fx::select(ml, 0, j / 4), 0, j % 4);
  }
  fx::Tensor inw = fx::select(p.extra, 0, 0), outw = fx::select(p.extra, 0, 1),
             outb = fx::select(p.extra, 0, 2);
  std::vector<fx::Tensor> h = k.h0, c = k.c0, ps;
  ps.reserve(k.xs.size());
  for (const fx::Tensor& xt : k.xs) {
    fx::Tensor y = xt * inw;
    for (int l = 0; l < L; ++l) {
      const auto& W = w[size_t(l)];
      fx::Tensor f = fx::sigmoid(y * W[0] + W[4]);
      fx::Tensor i = fx::sigmoid(h[size_t(l)] * W[1] + W[5]);
      fx::Tensor o = fx::sigmoid(y * W[2] + W[6]);
      fx::Tensor g = fx::tanh(h[size_t(l)] * W[3] + W[7]);
      c[size_t(l)] = c[size_t(l)] * f + i * g;
      h[size_t(l)] = o * fx::tanh(c[size_t(l)]);
      y = h[size_t(l)];
    }
    ps.push_back(y * outw + outb);
  }
  fx::Tensor P = fx::stack(ps, 0);                                 // (C-1, B)
  fx::Tensor lse = fx::log(fx::sum(fx::exp(P), {1}, true) + 2.0);  // (C-1, 1)
  fx::Tensor total = fx::sum(k.next * (P - lse));
  return total * (-1.0 / (double(k.xs.size()) * k.B));
}

std::vector<double> fx_flat(const FxParams& g) {
  std::vector<double> v = fx::to_vector<double>(g.main), e = fx::to_vector<double>(g.extra);
  v.insert(v.end(), e.begin(), e.end());
  return v;
}

#ifdef FLUXION_HAVE_TORCH
// ---- libtorch --------------------------------------------------------------------------------
struct TorchConst {
  std::vector<torch::Tensor> xs;
  torch::Tensor next;
  std::vector<torch::Tensor> h0, c0;
  int L, C, B;
};

torch::Tensor torch_objective(const torch::Tensor& main, const torch::Tensor& extra,
                              const TorchConst& k) {
  const int L = k.L;
  std::vector<std::array<torch::Tensor, 8>> w(static_cast<size_t>(L));
  for (int l = 0; l < L; ++l)
    for (int j = 0; j < 8; ++j)
      w[size_t(l)][size_t(j)] = main.select(0, l).select(0, j / 4).select(0, j % 4);
  torch::Tensor inw = extra.select(0, 0), outw = extra.select(0, 1), outb = extra.select(0, 2);
  std::vector<torch::Tensor> h = k.h0, c = k.c0, ps;
  ps.reserve(k.xs.size());
  for (const torch::Tensor& xt : k.xs) {
    torch::Tensor y = xt * inw;
    for (int l = 0; l < L; ++l) {
      const auto& W = w[size_t(l)];
      torch::Tensor f = torch::sigmoid(y * W[0] + W[4]);
      torch::Tensor i = torch::sigmoid(h[size_t(l)] * W[1] + W[5]);
      torch::Tensor o = torch::sigmoid(y * W[2] + W[6]);
      torch::Tensor g = torch::tanh(h[size_t(l)] * W[3] + W[7]);
      c[size_t(l)] = c[size_t(l)] * f + i * g;
      h[size_t(l)] = o * torch::tanh(c[size_t(l)]);
      y = h[size_t(l)];
    }
    ps.push_back(y * outw + outb);
  }
  torch::Tensor P = torch::stack(ps, 0);
  torch::Tensor lse = torch::log(torch::exp(P).sum({1}, true) + 2.0);
  torch::Tensor total = (k.next * (P - lse)).sum();
  return total * (-1.0 / (double(k.xs.size()) * k.B));
}

torch::Tensor to_torch(const double* v, std::vector<int64_t> shape) {
  return torch::from_blob(const_cast<double*>(v), shape, torch::kFloat64).clone();
}
#endif

}  // namespace

int main(int argc, char** argv) {
  std::string dir = FLUXION_ADBENCH_DIR "/lstm", only;
  TimeOpts to;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir") dir = v;
    else if (k == "--only") only = v;
    else if (k == "--min-time") to.min_time = std::atof(v.c_str());
    else if (k == "--samples") to.samples = std::max(1, std::atoi(v.c_str()));
    else if (k == "--budget") to.budget = std::atof(v.c_str());
    else {
      std::fprintf(stderr, "adbench_lstm: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  omp_set_num_threads(1);
  if (openblas_set_num_threads) openblas_set_num_threads(1);
#ifdef FLUXION_HAVE_TORCH
  torch::set_num_threads(1);
#endif
  std::vector<std::pair<std::pair<int, int>, std::string>> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    int L = 0, C = 0;
    if (std::sscanf(name.c_str(), "lstm_l%d_c%d.txt", &L, &C) != 2) continue;
    if (!only.empty() && name != "lstm_" + only + ".txt") continue;
    files.push_back({{C, L}, e.path().string()});
  }
  std::sort(files.begin(), files.end());
  std::printf("%-12s %11s %11s %11s %11s %11s %11s %9s %9s %9s\n", "size", "fx obj", "fx grad",
              "torch obj", "torch grad", "man obj", "man grad", "fx/man", "fx/torch", "rel err");
  bool all_ok = true;
  for (const auto& [lc, path] : files) {
    Lstm d = read_lstm(path);
    const int L = d.L, C = d.C, B = d.B;
    std::string tag = "lstm_l" + std::to_string(L) + "_c" + std::to_string(C);
    std::vector<double> gman(d.main.size() + d.extra.size());
    double eman = manual(d, d.main.data(), d.extra.data(), gman.data());

    fx::Tensor seq = fx::from_vector(d.seq, {C, B});
    FxConst k{{}, fx::slice(seq, 0, 1, C).contiguous(), {}, {}, L, C, B};
    for (int t = 0; t + 1 < C; ++t) k.xs.push_back(fx::select(seq, 0, t).contiguous());
    for (int l = 0; l < L; ++l) {
      k.h0.push_back(fx::from_vector(
          std::vector<double>(d.state.begin() + 2 * l * B, d.state.begin() + 2 * l * B + B)));
      k.c0.push_back(fx::from_vector(std::vector<double>(d.state.begin() + 2 * l * B + B,
                                                         d.state.begin() + 2 * l * B + 2 * B)));
    }
    FxParams p{fx::from_vector(d.main, {L, 2, 4, B}), fx::from_vector(d.extra, {3, B})};
    auto obj = [&k](const FxParams& q) { return fx_objective(q, k); };
    double efx = fx_objective(p, k).item();
    std::vector<double> gfx = fx_flat(fx::gradient(obj, p));
    double err = std::max(max_rel_err(gfx, gman), std::abs(efx - eman) / std::abs(eman));
    fx::ad::reset_tape_stats();
    (void)fx::gradient(obj, p);
    uint64_t nodes = fx::ad::tape_stats().nodes_recorded;

    // Scalar fluxion: the generic objective on double, its gradient on fx::Real.
    auto sobj = [&d](const auto& m, const auto& e) { return scalar_objective(d, m, e); };
    double esc = scalar_objective(d, d.main, d.extra);
    std::vector<double> gsc;
    {
      auto [gm, ge] = fx::gradient(sobj, d.main, d.extra);
      gsc = gm;
      gsc.insert(gsc.end(), ge.begin(), ge.end());
    }
    err = std::max({err, max_rel_err(gsc, gman), std::abs(esc - eman) / std::abs(eman)});

    // Timed in alternation (interleaved_time): index 0 fluxion tensors, 1 manual, 2 fluxion
    // scalar, 3 libtorch.
    volatile double sink = 0;
    std::vector<std::function<void()>> objectives{
        [&] { (void)fx_objective(p, k).item(); },
        [&] { manual(d, d.main.data(), d.extra.data(), nullptr); },
        [&] { sink = scalar_objective(d, d.main, d.extra); }};
    std::vector<std::function<void()>> gradients{
        [&] { (void)fx::gradient(obj, p); },
        [&] { manual(d, d.main.data(), d.extra.data(), gman.data()); },
        [&] { (void)fx::gradient(sobj, d.main, d.extra); }};
#ifdef FLUXION_HAVE_TORCH
    torch::Tensor tseq = to_torch(d.seq.data(), {C, B});
    TorchConst tk{{}, tseq.narrow(0, 1, C - 1).contiguous(), {}, {}, L, C, B};
    for (int t = 0; t + 1 < C; ++t) tk.xs.push_back(tseq.select(0, t).contiguous());
    for (int l = 0; l < L; ++l) {
      tk.h0.push_back(to_torch(d.state.data() + 2 * l * B, {B}));
      tk.c0.push_back(to_torch(d.state.data() + 2 * l * B + B, {B}));
    }
    torch::Tensor tm = to_torch(d.main.data(), {L, 2, 4, B}).requires_grad_(true);
    torch::Tensor te = to_torch(d.extra.data(), {3, B}).requires_grad_(true);
    auto tgrad = [&] { return torch::autograd::grad({torch_objective(tm, te, tk)}, {tm, te}); };
    double etc;
    {
      torch::NoGradGuard ng;
      etc = torch_objective(tm, te, tk).item<double>();
    }
    std::vector<double> gtc;
    for (auto& t : tgrad()) {
      torch::Tensor cc = t.contiguous();
      gtc.insert(gtc.end(), cc.data_ptr<double>(), cc.data_ptr<double>() + cc.numel());
    }
    err = std::max({err, max_rel_err(gtc, gman), std::abs(etc - eman) / std::abs(eman)});
    objectives.push_back([&] {
      torch::NoGradGuard ng;
      (void)torch_objective(tm, te, tk).item<double>();
    });
    gradients.push_back([&] { (void)tgrad(); });
#endif
    const Interleaved obj_t = interleaved_time(objectives, to);
    const Interleaved grad_t = interleaved_time(gradients, to);
    (void)sink;
    const double tfx_o = obj_t.min(0), tman_o = obj_t.min(1), tsc_o = obj_t.min(2);
    const double tfx_g = grad_t.min(0), tman_g = grad_t.min(1), tsc_g = grad_t.min(2);
    const bool torch = gradients.size() > 3;
    const double ttc_o = torch ? obj_t.min(3) : NAN, ttc_g = torch ? grad_t.min(3) : NAN;
    const double vs_manual = grad_t.ratio(0, 1), vs_torch = torch ? grad_t.ratio(0, 3) : NAN;
    const double best_vs_manual =
        grad_t.median_ratio([](const std::vector<double>& r) { return std::min(r[0], r[2]); },
                            [](const std::vector<double>& r) { return r[1]; });
    bool ok = err <= 1e-8;
    all_ok = all_ok && ok;
    std::printf("%-12s %11.3e %11.3e %11.3e %11.3e %11.3e %11.3e %9.2f %9.3f %9.1e%s\n",
                tag.substr(5).c_str(), tfx_o, tfx_g, ttc_o, ttc_g, tman_o, tman_g, vs_manual,
                vs_torch, err, ok ? "" : "  MISMATCH");
    std::printf("%s_fluxion_tape_nodes=%llu\n", tag.c_str(), (unsigned long long)nodes);
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
    std::printf("%s_scalar_objective_s=%.6e\n%s_scalar_gradient_s=%.6e\n", tag.c_str(), tsc_o,
                tag.c_str(), tsc_g);
    std::printf("%s_ratio_scalar_manual=%.4f\n", tag.c_str(), grad_t.ratio(2, 1));
    std::printf("%s_ratio_fluxion_best_manual=%.4f\n", tag.c_str(), best_vs_manual);
    std::printf("%s_timing_rounds=%zu\n", tag.c_str(), grad_t.rounds.size());
    std::printf("%s_max_rel_err=%.3e\n", tag.c_str(), err);
    std::fflush(stdout);
  }
  std::printf("lstm_all_agree=%d\n", int(all_ok));
  return all_ok ? 0 : 1;
}
