// Time to first gradient: how long the very first fx::gradient of a freshly built 10-layer
// model takes in a new process, next to a warm step. Flux users report seconds to minutes of
// compile latency here; fluxion's cost is one ordinary step plus cold caches.
//
//   ./build/bench/first_gradient      # first_gradient_ms=... steady_gradient_ms=... ratio=...
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/activations.hpp>
#include <fluxion/nn/chain.hpp>
#include <fluxion/nn/dense.hpp>
#include <fluxion/nn/losses.hpp>

int main() {
  using clock = std::chrono::steady_clock;
  auto t_start = clock::now();
  omp_set_num_threads(1);
  fx::Generator gen(1);
  auto d = [&](int64_t in, int64_t out) { return fx::nn::Dense(in, out, fx::tanh, gen); };
  auto model = fx::nn::Chain(d(64, 128), d(128, 128), d(128, 128), d(128, 128), d(128, 128),
                             d(128, 128), d(128, 128), d(128, 128), d(128, 128),
                             fx::nn::Dense(128, 10, fx::identity, gen));
  fx::Tensor x = fx::randn({32, 64}, gen);
  fx::Tensor y = fx::randperm(32, gen);
  y = fx::astype(fx::astype(y, fx::f32) * 0.25, fx::i64);  // labels in 0..7
  auto loss = [&](const auto& m) { return fx::logitcrossentropy(m(x), y); };

  auto t0 = clock::now();
  auto g = fx::gradient(loss, model);
  double first = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  double process = std::chrono::duration<double, std::milli>(clock::now() - t_start).count();

  std::vector<double> steady;
  for (int r = 0; r < 21; ++r) {
    auto t1 = clock::now();
    g = fx::gradient(loss, model);
    steady.push_back(std::chrono::duration<double, std::milli>(clock::now() - t1).count());
  }
  std::sort(steady.begin(), steady.end());
  double warm = steady[steady.size() / 2];
  std::printf("first_gradient_ms=%.3f\nsteady_gradient_ms=%.3f\nfirst_over_steady=%.2f\n", first,
              warm, first / warm);
  std::printf("process_start_to_first_gradient_ms=%.3f\n", process);
  return 0;
}
