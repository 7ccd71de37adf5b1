// The Zygote paper's overhead experiment (Innes, "Don't Unroll Adjoint", fig. "overhead"):
// stacked LSTM layers of width 4 (1, 2, 3 layers), the model applied 4 times recurrently to its
// own output, loss = sum, gradient with respect to the model and the input, batch sizes 1..8.
// For each layer count the gradient time is fitted against the batch size by least squares;
// the intercept (the time at batch 0: pure per-op cost) divided by the number of recorded ops
// is the overhead per op. fluxion counts its ops with fx::ad::tape_stats().nodes_recorded; the
// same model in libtorch, written op by op (matmul, add, narrow, sigmoid, tanh, mul; not
// torch::nn::LSTM) on one thread, counts the distinct nodes of its autograd graph.
//
//   ./build/bench/lstm_overhead [--reps 15] [--inner 20] [--csv build/bench/lstm_overhead.csv]
//   lstm_layers1_fluxion_ns_per_op=...  lstm_layers1_libtorch_ns_per_op=...
//   lstm_overhead_ratio_layers1=...     (fluxion / libtorch per-op overhead: below 1 is better)
//
// Both libraries are measured alternately at each batch size, and each repetition sweeps every
// layer count and batch size, so noise on the machine lands on all points alike (the per-op
// figures are compared with each other). Each point is the median over --reps repetitions of
// --inner gradient calls for libtorch and 10x as many for fluxion (a fluxion call is ~30x
// shorter; short windows are the noisiest), divided by the count, after one warm-up repetition.
// Each window starts with one untimed call, so the other library's work just before it (which
// evicts caches) is not charged to the first timed call: a fixed cost per window would land in
// the intercept and weigh most on the model with the fewest ops.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>

#ifdef FLUXION_HAVE_TORCH
#include <torch/torch.h>
#endif

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

constexpr int64_t kWidth = 4;
constexpr int kSteps = 4;
constexpr int kMaxBatch = 8;

struct Opts {
  int reps = 15;
  int inner = 20;
  std::string csv = "build/bench/lstm_overhead.csv";
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Seconds per call of fn over `inner` calls, after one untimed call.
double time_calls(const std::function<void()>& fn, int inner) {
  fn();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < inner; ++i) fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / inner;
}

// Least squares y = a + b x.
void fit(const std::vector<double>& x, const std::vector<double>& y, double& a, double& b) {
  double n = double(x.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  a = (sy - b * sx) / n;
}

// Deterministic parameter values shared by both libraries (so gradients can be compared).
std::vector<double> init_values(int64_t n, uint64_t seed) {
  fx::Generator g(seed);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& e : v) e = g.uniform() - 0.5;
  return v;
}

// ---- fluxion -------------------------------------------------------------------------------
// One LSTM layer: gates = x Wx + h Wh + b, ordered (input, forget, cell, output).
struct FxLayer {
  fx::Tensor wx, wh, b, h0, c0;  // (4, 16), (4, 16), (16,), (4,), (4,)
  FX_FIELDS(wx, wh, b, h0, c0)
};
struct FxModel {
  std::vector<FxLayer> layers;
  FX_FIELDS(layers)
};

FxModel fx_model(int nlayers) {
  FxModel m;
  for (int l = 0; l < nlayers; ++l) {
    uint64_t s = 100 + 10 * uint64_t(l);
    m.layers.push_back(
        {fx::from_vector(init_values(kWidth * 4 * kWidth, s), {kWidth, 4 * kWidth}),
         fx::from_vector(init_values(kWidth * 4 * kWidth, s + 1), {kWidth, 4 * kWidth}),
         fx::from_vector(init_values(4 * kWidth, s + 2), {4 * kWidth}),
         fx::from_vector(init_values(kWidth, s + 3), {kWidth}),
         fx::from_vector(init_values(kWidth, s + 4), {kWidth})});
  }
  return m;
}

fx::Tensor fx_loss(const FxModel& m, const fx::Tensor& x) {
  std::vector<fx::Tensor> h, c;
  for (const auto& l : m.layers) {
    h.push_back(l.h0);
    c.push_back(l.c0);
  }
  fx::Tensor y = x;
  for (int t = 0; t < kSteps; ++t) {
    for (size_t k = 0; k < m.layers.size(); ++k) {
      const FxLayer& l = m.layers[k];
      fx::Tensor g = fx::matmul(y, l.wx) + fx::matmul(h[k], l.wh) + l.b;
      fx::Tensor i = fx::sigmoid(fx::slice(g, -1, 0, kWidth));
      fx::Tensor f = fx::sigmoid(fx::slice(g, -1, kWidth, 2 * kWidth));
      fx::Tensor z = fx::tanh(fx::slice(g, -1, 2 * kWidth, 3 * kWidth));
      fx::Tensor o = fx::sigmoid(fx::slice(g, -1, 3 * kWidth, 4 * kWidth));
      c[k] = f * c[k] + i * z;
      h[k] = o * fx::tanh(c[k]);
      y = h[k];
    }
  }
  return fx::sum(y);
}

#ifdef FLUXION_HAVE_TORCH
// ---- libtorch, the same model op by op -------------------------------------------------------
struct TorchModel {
  std::vector<std::array<torch::Tensor, 5>> layers;  // wx, wh, b, h0, c0
};

torch::Tensor from_values(const std::vector<double>& v, std::vector<int64_t> shape) {
  return torch::tensor(v, torch::kFloat32).reshape(shape).requires_grad_(true);
}

TorchModel torch_model(int nlayers) {
  TorchModel m;
  for (int l = 0; l < nlayers; ++l) {
    uint64_t s = 100 + 10 * uint64_t(l);
    m.layers.push_back({from_values(init_values(kWidth * 4 * kWidth, s), {kWidth, 4 * kWidth}),
                        from_values(init_values(kWidth * 4 * kWidth, s + 1), {kWidth, 4 * kWidth}),
                        from_values(init_values(4 * kWidth, s + 2), {4 * kWidth}),
                        from_values(init_values(kWidth, s + 3), {kWidth}),
                        from_values(init_values(kWidth, s + 4), {kWidth})});
  }
  return m;
}

torch::Tensor torch_loss(const TorchModel& m, const torch::Tensor& x) {
  std::vector<torch::Tensor> h, c;
  for (const auto& l : m.layers) {
    h.push_back(l[3]);
    c.push_back(l[4]);
  }
  torch::Tensor y = x;
  for (int t = 0; t < kSteps; ++t) {
    for (size_t k = 0; k < m.layers.size(); ++k) {
      const auto& l = m.layers[k];
      torch::Tensor g =
          torch::add(torch::add(torch::matmul(y, l[0]), torch::matmul(h[k], l[1])), l[2]);
      torch::Tensor i = torch::sigmoid(g.narrow(-1, 0, kWidth));
      torch::Tensor f = torch::sigmoid(g.narrow(-1, kWidth, kWidth));
      torch::Tensor z = torch::tanh(g.narrow(-1, 2 * kWidth, kWidth));
      torch::Tensor o = torch::sigmoid(g.narrow(-1, 3 * kWidth, kWidth));
      c[k] = torch::add(torch::mul(f, c[k]), torch::mul(i, z));
      h[k] = torch::mul(o, torch::tanh(c[k]));
      y = h[k];
    }
  }
  return y.sum();
}

// Distinct nodes of the autograd graph reachable from y; AccumulateGrad (leaf sinks, not ops)
// counted separately.
void torch_graph_nodes(const torch::Tensor& y, uint64_t& ops, uint64_t& leaves) {
  std::unordered_set<torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> stack{y.grad_fn().get()};
  ops = leaves = 0;
  while (!stack.empty()) {
    torch::autograd::Node* n = stack.back();
    stack.pop_back();
    if (!n || !seen.insert(n).second) continue;
    if (n->name().find("AccumulateGrad") != std::string::npos) ++leaves;
    else ++ops;
    for (const auto& e : n->next_edges()) stack.push_back(e.function.get());
  }
}

void torch_grad(TorchModel& m, torch::Tensor& x) {
  torch::Tensor y = torch_loss(m, x);
  y.backward();
  for (auto& l : m.layers)
    for (auto& p : l) p.mutable_grad().reset();
  x.mutable_grad().reset();
}
#endif

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--reps") o.reps = std::max(5, std::atoi(argv[i + 1]));
    else if (k == "--inner") o.inner = std::max(1, std::atoi(argv[i + 1]));
    else if (k == "--csv") o.csv = argv[i + 1];
  }
  omp_set_num_threads(1);
  if (openblas_set_num_threads) openblas_set_num_threads(1);
#ifdef FLUXION_HAVE_TORCH
  torch::set_num_threads(1);
#endif
  if (auto dir = std::filesystem::path(o.csv).parent_path(); !dir.empty())
    std::filesystem::create_directories(dir);
  std::ofstream csv(o.csv);
  csv << "kind,lib,layers,batch,seconds,intercept,slope,ops\n";
  struct Row {
    int layers;
    double fx_over, fx_ns, t_over = NAN, t_ns = NAN;
    uint64_t fx_ops, t_ops = 0;
  };
  std::vector<Row> rows;
  bool grads_ok = true;
  // One case per (layers, batch): the input, and the two libraries' gradient calls.
  struct Case {
    int layers, batch;
    std::function<void()> fx_call, torch_call;
    std::vector<double> fx_t, torch_t;
  };
  std::vector<Case> cases;
  std::vector<FxModel> fms;
  std::vector<uint64_t> fx_ops(4), t_ops(4), t_leaves(4);
#ifdef FLUXION_HAVE_TORCH
  std::vector<TorchModel> tms;
#endif
  for (int nl = 1; nl <= 3; ++nl) {
    fms.push_back(fx_model(nl));
#ifdef FLUXION_HAVE_TORCH
    tms.push_back(torch_model(nl));
#endif
  }
  for (int nl = 1; nl <= 3; ++nl) {
    const FxModel& fm = fms[nl - 1];
    for (int b = 1; b <= kMaxBatch; ++b) {
      std::vector<double> xv = init_values(b * kWidth, 7 + b);
      fx::Tensor x = fx::from_vector(xv, {b, kWidth});
      if (b == 1) {
        fx::ad::reset_tape_stats();
        (void)fx::gradient(fx_loss, fm, x);
        fx_ops[nl] = fx::ad::tape_stats().nodes_recorded;
      }
      Case c{nl, b, [&fm, x] { (void)fx::gradient(fx_loss, fm, x); }, {}, {}, {}};
#ifdef FLUXION_HAVE_TORCH
      TorchModel& tm = tms[nl - 1];
      torch::Tensor tx =
          torch::tensor(xv, torch::kFloat32).reshape({b, kWidth}).requires_grad_(true);
      if (b == 1) {
        torch::Tensor y = torch_loss(tm, tx);
        torch_graph_nodes(y, t_ops[nl], t_leaves[nl]);
        // Agreement of the input gradient (f32, so a loose tolerance).
        y.backward();
        auto [gm, gx] = fx::gradient(fx_loss, fm, x);
        std::vector<float> a = fx::to_vector<float>(gx);
        torch::Tensor tg = tx.grad().contiguous();
        for (size_t i = 0; i < a.size(); ++i)
          if (std::abs(a[i] - tg.data_ptr<float>()[i]) > 1e-4 * (1 + std::abs(a[i])))
            grads_ok = false;
        tx.mutable_grad().reset();
        for (auto& l : tm.layers)
          for (auto& p : l) p.mutable_grad().reset();
      }
      c.torch_call = [&tm, tx]() mutable { torch_grad(tm, tx); };
#endif
      cases.push_back(std::move(c));
    }
  }
  for (int r = 0; r <= o.reps; ++r) {  // repetition 0 warms caches, pools and allocators
    for (Case& c : cases) {
      double tf = time_calls(c.fx_call, 10 * o.inner);
      if (r > 0) c.fx_t.push_back(tf);
      if (c.torch_call) {
        double tt = time_calls(c.torch_call, o.inner);
        if (r > 0) c.torch_t.push_back(tt);
      }
    }
  }
  for (int nl = 1; nl <= 3; ++nl) {
    std::vector<double> bs, tf, tt;
    for (const Case& c : cases) {
      if (c.layers != nl) continue;
      bs.push_back(c.batch);
      tf.push_back(median(c.fx_t));
      if (!c.torch_t.empty()) tt.push_back(median(c.torch_t));
    }
    Row r{nl, 0, 0, NAN, NAN, 0, 0};
    double a, s;
    fit(bs, tf, a, s);
    r.fx_over = a;
    r.fx_ops = fx_ops[nl];
    r.fx_ns = a * 1e9 / double(fx_ops[nl]);
    for (size_t i = 0; i < bs.size(); ++i)
      csv << "point,fluxion," << nl << ',' << bs[i] << ',' << tf[i] << ",,," << fx_ops[nl] << '\n';
    csv << "fit,fluxion," << nl << ",,," << a << ',' << s << ',' << fx_ops[nl] << '\n';
#ifdef FLUXION_HAVE_TORCH
    fit(bs, tt, a, s);
    r.t_over = a;
    r.t_ops = t_ops[nl];
    r.t_ns = a * 1e9 / double(t_ops[nl]);
    for (size_t i = 0; i < bs.size(); ++i)
      csv << "point,libtorch," << nl << ',' << bs[i] << ',' << tt[i] << ",,," << t_ops[nl] << '\n';
    csv << "fit,libtorch," << nl << ",,," << a << ',' << s << ',' << t_ops[nl] << '\n';
    std::printf("lstm_layers%d_libtorch_autograd_leaves=%llu\n", nl,
                (unsigned long long)t_leaves[nl]);
#endif
    rows.push_back(r);
  }

  std::printf("\n%-7s | %-32s | %-32s\n", "", "fluxion", "libtorch (per-op, 1 thread)");
  std::printf("%-7s | %12s %7s %11s | %12s %7s %11s\n", "layers", "overhead us", "ops", "ns/op",
              "overhead us", "ops", "ns/op");
  for (const Row& r : rows)
    std::printf("%-7d | %12.2f %7llu %11.1f | %12.2f %7llu %11.1f\n", r.layers, r.fx_over * 1e6,
                (unsigned long long)r.fx_ops, r.fx_ns, r.t_over * 1e6, (unsigned long long)r.t_ops,
                r.t_ns);
  std::printf("\n");
  double lo = INFINITY, hi = -INFINITY;
  for (const Row& r : rows) {
    std::printf("lstm_layers%d_fluxion_ops=%llu\n", r.layers, (unsigned long long)r.fx_ops);
    std::printf("lstm_layers%d_fluxion_overhead_us=%.3f\n", r.layers, r.fx_over * 1e6);
    std::printf("lstm_layers%d_fluxion_ns_per_op=%.1f\n", r.layers, r.fx_ns);
    lo = std::min(lo, r.fx_ns);
    hi = std::max(hi, r.fx_ns);
#ifdef FLUXION_HAVE_TORCH
    std::printf("lstm_layers%d_libtorch_ops=%llu\n", r.layers, (unsigned long long)r.t_ops);
    std::printf("lstm_layers%d_libtorch_overhead_us=%.3f\n", r.layers, r.t_over * 1e6);
    std::printf("lstm_layers%d_libtorch_ns_per_op=%.1f\n", r.layers, r.t_ns);
    std::printf("lstm_overhead_ratio_layers%d=%.4f\n", r.layers, r.fx_ns / r.t_ns);
#endif
  }
  // Linearity in the op count: the spread of the three per-op figures (max/min - 1).
  std::printf("lstm_fluxion_ns_per_op_spread=%.4f\n", hi / lo - 1);
#ifdef FLUXION_HAVE_TORCH
  std::printf("lstm_gradients_agree=%d\n", int(grads_ok));
#endif
  std::printf("lstm_csv=%s\n", o.csv.c_str());
  return 0;
}
