// The spiral of DiffEqFlux's neural ODE and neural SDE examples, shared by
// examples/neural_ode.cpp and examples/neural_sde.cpp: the true dynamics and the network that
// learns them.
#pragma once
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>

namespace spiral {

// du/dt = ((u^3)^T A)^T with A = [-0.1 2; -2 -0.1]; u may be (2,) or a batch (B, 2).
inline fx::Tensor true_dynamics(const fx::Tensor& u) {
  static const fx::Tensor A = fx::from_vector(std::vector<double>{-0.1, 2.0, -2.0, -0.1}, {2, 2});
  fx::Tensor cube = u * u * u;
  if (u.ndim() == 1) return fx::reshape(fx::matmul(fx::reshape(cube, {1, 2}), A), {2});
  return fx::matmul(cube, A);
}

// How the two Dense layers start. flux: glorot_uniform weights and zero biases, the default of
// Flux's Dense, of Lux's before 1.0 and of DiffEqFlux's old FastDense (fluxion's default too).
// lux: Lux >= 1.0's default, which the tutorial's `Dense(2, 50, tanh)` gets today (PyTorch's
// nn.Linear rule): weights U(-a, a), a = gain * sqrt(3 / fan_in), with gain 5/3 for tanh and 1
// for identity, biases U(-b, b), b = 1 / sqrt(fan_in). For the first layer (fan_in 2) that is
// a = 2.04 and b = 0.71 instead of a = 0.34 and b = 0.
enum class Init { flux, lux };

// Chain(x -> x^3, Dense(2, 50, tanh), Dense(50, 2)) with parameters of `dtype`.
inline auto make_model(fx::Generator& gen, Init init = Init::flux, fx::DType dtype = fx::f64) {
  auto dense = [&](int64_t in, int64_t out, fx::Activation act, double gain) {
    if (init == Init::flux) return fx::nn::Dense(in, out, act, gen);
    const double w = gain * std::sqrt(3.0 / double(in)), b = 1 / std::sqrt(double(in));
    fx::Tensor weight = fx::uniform({out, in}, -w, w, gen);
    return fx::nn::Dense(weight, fx::uniform({out}, -b, b, gen), act);
  };
  // Drawn in the layers' order: the order in which a call's arguments are evaluated is
  // unspecified, and GCC's and Clang's differ, which would give one seed two sets of weights.
  fx::nn::Dense hidden = dense(2, 50, fx::tanh, 5.0 / 3.0);
  fx::nn::Dense output = dense(50, 2, fx::identity, 1.0);
  auto model = fx::nn::Chain([](const fx::Tensor& x) { return x * x * x; }, std::move(hidden),
                             std::move(output));
  fx::for_each_tensor(model, [&](fx::Tensor& t) { t = fx::astype(t, dtype); });
  return model;
}

// n times evenly spaced over [t0, t1], both included.
inline std::vector<double> linspace(double t0, double t1, int n) {
  std::vector<double> ts;
  for (int i = 0; i < n; ++i) ts.push_back(t0 + (t1 - t0) * i / (n - 1));
  return ts;
}

}  // namespace spiral
