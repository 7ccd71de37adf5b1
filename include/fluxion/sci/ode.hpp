// Differentiable ODE solvers: du/dt = f(u, p, t), solved from ts.front() and returned at every
// time in ts (ts.front() included), with gradients to u0 and p three ways.
//
//   // A learned vector field: p is any structure of tensors, here a model.
//   auto model = fx::nn::Chain(fx::nn::Dense(2, 16, fx::tanh), fx::nn::Dense(16, 2));
//   fx::for_each_tensor(model, [](fx::Tensor& t) { t = fx::astype(t, fx::f64); });
//   auto f = [](const fx::Tensor& u, const auto& m, double) { return m(u); };
//   fx::Tensor u0 = fx::tensor({2.0, 0.0}, fx::f64);
//   std::vector<double> ts = {0.0, 0.5, 1.0, 1.5};
//   fx::sci::ODEOptions opt{.method = fx::sci::Method::tsit5, .rtol = 1e-6, .atol = 1e-9};
//   std::vector<fx::Tensor> us = fx::sci::solve_ode(f, u0, model, ts, opt);   // us[i] at ts[i]
//   opt.sensitivity = fx::sci::Sensitivity::adjoint;                         // or checkpoint
//   auto grad = fx::gradient([&](const auto& m) {
//     return fx::sum_squares(fx::sci::solve_ode(f, u0, m, ts, opt).back()); }, model);
//
// Methods: RK4 (fixed step `dt`, shortened evenly to fit the interval), Tsit5 and Dopri5
// (adaptive, 5th order with an embedded 4th order error estimate, FSAL). Step-size control is the
// standard PI controller on the RMS norm of error / (atol + rtol * max(|u_n|, |u_n+1|)) (Hairer,
// Norsett & Wanner II.4 and Gustafsson's PI control, with OrdinaryDiffEq's default gains); the
// first step follows Hairer's starting-step algorithm unless `dt` is given. Dense output at the
// requested times is cubic Hermite interpolation between accepted steps from the end values and
// their derivatives (both at hand thanks to FSAL), not the methods' own continuous extensions:
// 4th order accurate, like those, and the same formula for every method.
//
// Sensitivities (ODEOptions::sensitivity), all used through fx::gradient / fx::pullback:
//   backprop   — the solver is fluxion code, so the tape records every stage: exact gradient of
//                the discrete solution; memory grows with the number of steps. Step sizes are
//                plain doubles, so control decisions are not differentiated (as in DiffEqFlux).
//   checkpoint — solves once without recording to fix the steps, then replays them under
//                fx::checkpointed, splitting the step range recursively into k segments per
//                level over `checkpoint_levels` levels, k = (steps / checkpoint_steps)^(1/levels)
//                (2 at least): the backward pass holds k segment ends per level and one innermost
//                segment's tape, so memory grows like k (the 4th root of the steps by default),
//                and each step is recomputed once per level. The same gradient as backprop.
//   adjoint    — continuous adjoint (backsolve): a custom rule whose pullback solves
//                u' = f, a' = -a^T df/du, g' = -a^T df/dp backwards from ts.back() with the same
//                method, adding the output cotangents at each ts, with vector-Jacobian products
//                of f from fx::pullback. Memory independent of the steps; the gradient is that of
//                the exact solution, within the tolerances (adjoint_rtol / adjoint_atol).
//
// The state u may be a tensor or any structure fx::for_each_tensor walks (FX_FIELDS, vectors,
// tuples); f returns the derivative with u's structure. All tensors of u and of p must share one
// dtype (f64 for tight tolerances). f must be deterministic (checkpoint and adjoint call it again
// in the backward pass), and everything it differentiates must come in through u and p.
// Fixed steps (RK4, or adaptive = false) work under fx::vmap and fx::trace with every
// sensitivity; adaptive steps are chosen from the state's values, which a batched or traced value
// does not hold (an fx::Error says so): solve a batch as one state with a leading axis instead.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "fluxion/sci/flat.hpp"

namespace fx::sci {

enum class Method { rk4, tsit5, dopri5 };
enum class Sensitivity { backprop, checkpoint, adjoint };

struct ODEOptions {
  Method method = Method::tsit5;
  // Tighter than DifferentialEquations.jl's 1e-3 / 1e-6: a gradient is only as accurate as the
  // solve (backprop and adjoint gradients of the spiral differ by 3e-3 at those).
  double rtol = 1e-6;
  double atol = 1e-9;
  double dt = 0;  // fixed steps: the step (required); adaptive: the first trial step (0: auto)
  bool adaptive = true;        // false: Tsit5/Dopri5 take fixed steps of dt too (RK4 always does)
  int64_t max_steps = 100000;  // accepted + rejected, per solve; more is an fx::Error
  Sensitivity sensitivity = Sensitivity::backprop;
  int64_t checkpoint_steps = 8;  // checkpoint: steps recorded together at the innermost level
  int checkpoint_levels = 4;     // checkpoint: nesting depth of segments (each level nests a tape)
  double adjoint_rtol = 0;       // adjoint: tolerances of the backward solve (0: rtol, atol)
  double adjoint_atol = 0;
};

struct SolveStats {
  int64_t accepted = 0;
  int64_t rejected = 0;
  int64_t evaluations = 0;  // of f, forward solve only
};

namespace detail {
// dy/dt = g(y, P, t) on flat vectors; the typed solve_ode below builds g from f and the layouts.
using FlatRhs = std::function<Tensor(const Tensor& y, const Tensor& P, double t)>;
// The solution at every ts as rows of a (ts.size(), y0.numel()) tensor.
Tensor solve_flat(FlatRhs g, const Tensor& y0, const Tensor& P, const std::vector<double>& ts,
                  const ODEOptions& opt, SolveStats* stats);
}  // namespace detail

template <class State, class F, class Params>
std::vector<State> solve_ode(F f, const State& u0, const Params& p, const std::vector<double>& ts,
                             const ODEOptions& opt = {}, SolveStats* stats = nullptr) {
  auto ul = std::make_shared<const Flattener<State>>(u0);
  auto pl = std::make_shared<const Flattener<Params>>(p, ul->dtype());
  detail::FlatRhs g = [f = std::move(f), ul, pl](const Tensor& y, const Tensor& P, double t) {
    return ul->flatten(f(ul->unflatten(y), pl->unflatten(P), t));
  };
  Tensor ys = detail::solve_flat(std::move(g), ul->flatten(u0), pl->flatten(p), ts, opt, stats);
  std::vector<State> out;
  out.reserve(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) out.push_back(ul->unflatten(select(ys, 0, int64_t(i))));
  return out;
}

}  // namespace fx::sci
