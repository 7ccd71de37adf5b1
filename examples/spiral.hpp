// The spiral of DiffEqFlux's neural ODE and neural SDE examples, shared by
// examples/neural_ode.cpp and examples/neural_sde.cpp: the true dynamics and the network that
// learns them.
#pragma once
#include <cstdint>
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

// Chain(x -> x^3, Dense(2, 50, tanh), Dense(50, 2)) with f64 parameters.
inline auto make_model(fx::Generator& gen) {
  auto model =
      fx::nn::Chain([](const fx::Tensor& x) { return x * x * x; },
                    fx::nn::Dense(2, 50, fx::tanh, gen), fx::nn::Dense(50, 2, fx::identity, gen));
  fx::for_each_tensor(model, [](fx::Tensor& t) { t = fx::astype(t, fx::f64); });
  return model;
}

// n times evenly spaced over [t0, t1], both included.
inline std::vector<double> linspace(double t0, double t1, int n) {
  std::vector<double> ts;
  for (int i = 0; i < n; ++i) ts.push_back(t0 + (t1 - t0) * i / (n - 1));
  return ts;
}

}  // namespace spiral
