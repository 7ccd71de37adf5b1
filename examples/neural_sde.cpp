// Neural SDE: learn the drift of a stochastic spiral from the mean of its trajectories, with
// pathwise gradients through the Milstein solver on small batches of fresh Brownian paths.
//
//   ./build/examples/neural_sde               # 300 Adam steps on batches of 8 paths
//   ./build/examples/neural_sde --iters 20
//
// True SDE (DiffEqFlux's neural SDE experiment): du = ((u^3)^T A)^T dt + 0.2 u ⊙ dW, u0 = [2, 0],
// t in [0, 1]; the data are the mean of 100 trajectories at 30 times. Model: the same noise and
// the drift Chain(x -> x^3, Dense(2, 50, tanh), Dense(50, 2)). Loss on each step: the squared
// distance between the mean of `batch` model trajectories (fresh noise each step) and the data's
// mean. Prints the distance between the model's mean trajectory (100 paths on a fixed
// evaluation noise) and the data's, before and after training: mean_distance_before= and
// mean_distance_after=; ends with `neural_sde: ok` when it fell (the line ctest reads).
#include <cmath>
#include <cstdint>
#include <cstdio>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/optim.hpp>
#include <fluxion/sci.hpp>

#include "cli.hpp"
#include "spiral.hpp"

using fx::Tensor;

int main(int argc, char** argv) {
  int64_t iters = 300, batch = 8;
  uint64_t seed = 1;
  fx::examples::Cli cli("neural_sde",
                        "Learns the drift of a stochastic spiral from the mean of its paths.");
  cli.option("--iters", "N", "Adam steps", iters, {.min = 0});
  cli.option("--batch", "B", "model paths per step", batch, {.min = 1});
  cli.option("--seed", "S", "seed of the data, the weights and the noise", seed);
  cli.parse_or_exit(argc, argv);
  const int64_t paths = 100;

  // 30 output times on a grid of 8 steps between them.
  const std::vector<double> ts = spiral::linspace(0.0, 1.0, 30);
  const int64_t steps = 29 * 8;
  auto noise = [](const Tensor& u, const auto&, double) { return 0.2 * u; };
  auto start = [](int64_t n) {  // n copies of u0 = [2, 0]
    return fx::expand(fx::tensor({2.0, 0.0}, fx::f64), {n, 2}).contiguous();
  };
  // Mean over the paths (rows) at each output time.
  auto mean_trajectory = [](const std::vector<Tensor>& us) {
    std::vector<Tensor> means;
    for (const Tensor& u : us) means.push_back(fx::mean(u, {0}));
    return means;
  };

  fx::Generator gen{seed};
  auto truth = [](const Tensor& u, const Tensor&, double) { return spiral::true_dynamics(u); };
  auto data_path = fx::sci::brownian_path(2 * paths, 0.0, 1.0, steps, gen);
  const std::vector<Tensor> data = mean_trajectory(
      fx::sci::solve_sde(truth, noise, start(paths), fx::zeros({0}, fx::f64), ts, data_path));

  auto model = spiral::make_model(gen);
  using Model = decltype(model);
  auto drift = [](const Tensor& u, const Model& m, double) { return m(u); };
  auto distance_sq = [&](const std::vector<Tensor>& means) {
    Tensor d = fx::sum_squares(means[0] - data[0]);
    for (size_t i = 1; i < ts.size(); ++i) d = d + fx::sum_squares(means[i] - data[i]);
    return d;
  };
  const auto eval_path = fx::sci::brownian_path(2 * paths, 0.0, 1.0, steps, gen);
  auto mean_distance = [&](const Model& m) {
    return std::sqrt(distance_sq(mean_trajectory(fx::sci::solve_sde(drift, noise, start(paths), m,
                                                                    ts, eval_path)))
                         .item());
  };

  const double before = mean_distance(model);
  std::printf("mean_distance_before=%.6g\n", before);
  auto opt = fx::optim::setup(fx::optim::Adam{.lr = 0.01}, model);
  for (int64_t it = 1; it <= iters; ++it) {
    auto path = fx::sci::brownian_path(2 * batch, 0.0, 1.0, steps, gen);
    auto [l, g] = fx::withgradient(
        [&](const Model& m) {
          return distance_sq(
              mean_trajectory(fx::sci::solve_sde(drift, noise, start(batch), m, ts, path)));
        },
        model);
    fx::optim::update(opt, model, g);
    if (it % 50 == 0) std::printf("  adam %4lld  batch loss %.6g\n", (long long)it, l.item());
  }
  const double after = mean_distance(model);
  std::printf("mean_distance_after=%.6g\n", after);
  if (after < before) std::printf("neural_sde: ok\n");
  return 0;
}
