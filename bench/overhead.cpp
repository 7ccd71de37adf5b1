// Per-op overhead of reverse-mode AD on 1-element tensors: 1000 iterations of
// y = tanh(y * 0.5 + 0.1), forward plus backward, in fluxion and (when built with it) libtorch
// on one thread, in the same run. Prints name=value lines; medians of repeated runs.
//
//   ./build/bench/overhead            # fluxion_ns_per_op=... libtorch_ns_per_op=... ratio=...
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>

#ifdef FLUXION_HAVE_TORCH
#include <torch/torch.h>
#endif

namespace {

constexpr int kIters = 1000;
constexpr int kOpsPerIter = 3;  // mul, add, tanh
constexpr int kReps = 15;

template <class Fn>
double median_seconds(Fn&& fn) {
  fn();  // warm caches, pools and the tape
  std::vector<double> t;
  for (int r = 0; r < kReps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double fluxion_ns_per_op(double& grad, uint64_t& nodes) {
  fx::Tensor y0 = fx::full({1}, 0.3);
  auto f = [](const fx::Tensor& y0) {
    fx::Tensor y = y0;
    for (int i = 0; i < kIters; ++i) y = fx::tanh(y * 0.5 + 0.1);
    return fx::sum(y);
  };
  fx::ad::reset_tape_stats();
  grad = fx::gradient(f, y0).item();
  nodes = fx::ad::tape_stats().nodes_recorded;
  return median_seconds([&] { grad = fx::gradient(f, y0).item(); }) * 1e9 / (kIters * kOpsPerIter);
}

#ifdef FLUXION_HAVE_TORCH
double torch_ns_per_op(double& grad) {
  torch::Tensor y0 = torch::full({1}, 0.3, torch::requires_grad());
  auto run = [&] {
    torch::Tensor y = y0;
    for (int i = 0; i < kIters; ++i) y = torch::tanh(y * 0.5 + 0.1);
    y.sum().backward();
    grad = y0.grad().item<double>();
    y0.mutable_grad().reset();
  };
  return median_seconds(run) * 1e9 / (kIters * kOpsPerIter);
}
#endif

}  // namespace

int main() {
  omp_set_num_threads(1);
  double g_fx = 0;
  uint64_t nodes = 0;
  double fx_ns = fluxion_ns_per_op(g_fx, nodes);
  std::printf("ops_per_iteration=%d\niterations=%d\nfluxion_tape_nodes=%llu\n", kOpsPerIter, kIters,
              (unsigned long long)nodes);
  std::printf("fluxion_ns_per_op=%.1f\n", fx_ns);
#ifdef FLUXION_HAVE_TORCH
  torch::set_num_threads(1);
  double g_t = 0;
  double t_ns = torch_ns_per_op(g_t);
  std::printf("libtorch_ns_per_op=%.1f\nratio=%.4f\n", t_ns, fx_ns / t_ns);
  std::printf("gradients_agree=%d\n", std::abs(g_fx - g_t) <= 1e-5 * std::max(1.0, std::abs(g_t)));
#else
  std::printf("libtorch_ns_per_op=unavailable (built without libtorch)\n");
#endif
  return 0;
}
