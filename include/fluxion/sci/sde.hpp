// Itô SDEs with diagonal noise, du = f(u, p, t) dt + g(u, p, t) ⊙ dW, on a fixed Brownian path:
// one draw of the noise, so the solution is an ordinary differentiable function of u0 and p and
// fx::gradient gives pathwise gradients.
//
//   // Geometric Brownian motion, 100 paths at once (each component has its own noise).
//   fx::Generator gen(42);
//   auto W = fx::sci::brownian_path(100, 0.0, 1.0, 256, gen);    // 256 steps of dt = 1/256
//   auto drift = [](const fx::Tensor& u, const fx::Tensor& mu, double) { return mu * u; };
//   auto noise = [](const fx::Tensor& u, const fx::Tensor&, double) { return 0.2 * u; };
//   fx::Tensor u0 = fx::ones({100}, fx::f64), mu = fx::scalar(1.5, fx::f64);
//   std::vector<fx::Tensor> us = fx::sci::solve_sde(drift, noise, u0, mu, {0.0, 0.5, 1.0}, W);
//   fx::Tensor dmu = fx::gradient([&](const fx::Tensor& m) {
//     return fx::mean(fx::sci::solve_sde(drift, noise, u0, m, {0.0, 1.0}, W).back()); }, mu);
//
// Methods (fixed step: one step per increment of the path; W.coarsened(k) steps k times longer
// along the same path):
//   euler_maruyama — u += f h + g dW: strong order 1/2.
//   milstein       — the derivative-free (Runge-Kutta) Milstein scheme of Kloeden & Platen
//                    (11.1.7): with U = u + f h + g sqrt(h),
//                    u += f h + g dW + (g(U) - g(u)) (dW^2 - h) / (2 sqrt(h)).
//                    Strong order 1 for diagonal noise (g's component i depends on u_i only).
// The state and parameters may be any structure of tensors (as in solve_ode); the path has one
// noise per element of the flattened state. Output times must lie on the path's grid.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "fluxion/ops/create.hpp"
#include "fluxion/sci/ode.hpp"

namespace fx::sci {

// W sampled on a regular grid: increments(k) = W(t0 + (k+1) dt) - W(t0 + k dt), i.i.d. N(0, dt).
struct BrownianPath {
  double t0 = 0, dt = 0;
  Tensor increments;  // (steps, n)

  int64_t steps() const { return increments.size(0); }
  int64_t noises() const { return increments.size(1); }
  double t_end() const { return t0 + double(steps()) * dt; }
  // W(t0 + k dt) - W(t0), shape (n,).
  Tensor value(int64_t k) const;
  // The same path on a grid `factor` times coarser (steps must divide by factor).
  BrownianPath coarsened(int64_t factor) const;
};

BrownianPath brownian_path(int64_t noises, double t0, double t1, int64_t steps, Generator& gen,
                           DType dtype = f64);

enum class SDEMethod { euler_maruyama, milstein };

struct SDEOptions {
  SDEMethod method = SDEMethod::milstein;
};

namespace detail {
Tensor solve_sde_flat(const FlatRhs& drift, const FlatRhs& diffusion, const Tensor& y0,
                      const Tensor& P, const std::vector<double>& ts, const BrownianPath& W,
                      const SDEOptions& opt);
}  // namespace detail

template <class State, class F, class G, class Params>
std::vector<State> solve_sde(F drift, G diffusion, const State& u0, const Params& p,
                             const std::vector<double>& ts, const BrownianPath& W,
                             const SDEOptions& opt = {}) {
  auto ul = std::make_shared<const Flattener<State>>(u0);
  auto pl = std::make_shared<const Flattener<Params>>(p, ul->dtype());
  auto flat = [ul, pl](auto fn) -> detail::FlatRhs {
    return [fn = std::move(fn), ul, pl](const Tensor& y, const Tensor& P, double t) {
      return ul->flatten(fn(ul->unflatten(y), pl->unflatten(P), t));
    };
  };
  Tensor ys = detail::solve_sde_flat(flat(std::move(drift)), flat(std::move(diffusion)),
                                     ul->flatten(u0), pl->flatten(p), ts, W, opt);
  std::vector<State> out;
  out.reserve(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) out.push_back(ul->unflatten(select(ys, 0, int64_t(i))));
  return out;
}

}  // namespace fx::sci
