// L-BFGS on a flat parameter vector, for the last stretch of a fit (after Adam, as DiffEqFlux
// does) and for small deterministic problems.
//
//   // Rosenbrock: the closure returns (loss, gradient) at x.
//   auto rosenbrock = [](const fx::Tensor& x) {
//     auto [f, g] = fx::withgradient([](const fx::Tensor& x) {
//       fx::Tensor a = fx::select(x, 0, 0), b = fx::select(x, 0, 1);
//       return fx::square(1.0 - a) + 100.0 * fx::square(b - a * a);
//     }, x);
//     return std::pair<double, fx::Tensor>(f.item(), g);
//   };
//   auto r = fx::sci::lbfgs(rosenbrock, fx::tensor({-1.2, 1.0}, fx::f64));
//   // r.x ~ (1, 1), r.loss ~ 0, r.converged
//
// To fit a model, flatten it with fx::sci::Flattener (fluxion/sci/flat.hpp) and unflatten the
// vector inside the closure (examples/neural_ode.cpp). The search direction comes from the
// two-loop recursion over the last `memory` pairs (s, y) with the initial scaling s'y / y'y; pairs
// with too little curvature are skipped, and a direction that is not a descent restarts from
// -gradient. The step satisfies the strong Wolfe conditions (bracketing and zoom with safeguarded
// cubic interpolation, Nocedal & Wright Algorithms 3.5-3.6), or with LineSearch::backtracking
// only Armijo's sufficient decrease (halving). Arithmetic runs in double; the closure receives x
// in x0's dtype and shape.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "fluxion/core/tensor.hpp"

namespace fx::sci {

enum class LineSearch { strong_wolfe, backtracking };

struct LBFGSOptions {
  int64_t memory = 10;
  int64_t max_iterations = 100;
  int64_t max_evaluations = 0;  // of the closure (0: 20 per iteration)
  double gtol = 1e-8;           // stop when max |gradient| <= gtol
  double ftol = 0;              // stop when an iteration lowers the loss by <= ftol * max(1, |f|)
  LineSearch line_search = LineSearch::strong_wolfe;
  double c1 = 1e-4;  // sufficient decrease
  double c2 = 0.9;   // curvature (strong Wolfe)
};

struct LBFGSResult {
  Tensor x;  // the best point found, x0's dtype and shape
  double loss = 0;
  int64_t iterations = 0;
  int64_t evaluations = 0;
  bool converged = false;  // by gtol or ftol (not by running out of iterations)
  std::string stop;        // why it stopped, in words
};

using LossAndGradient = std::function<std::pair<double, Tensor>(const Tensor& x)>;

LBFGSResult lbfgs(const LossAndGradient& fg, const Tensor& x0, const LBFGSOptions& opt = {});

}  // namespace fx::sci
