// Explicit Runge-Kutta stepping on flat vectors, shared by the ODE solve and its sensitivities:
// the Butcher tableaus, one step, the PI step-size controller and Hermite dense output.
#pragma once
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "fluxion/sci/ode.hpp"

namespace fx::sci::detail {

using Rhs = std::function<Tensor(const Tensor& y, double t)>;

struct Tableau {
  const char* name;
  std::vector<double> c;
  std::vector<std::vector<double>> a;  // a[i][j], j < i
  std::vector<double> b;               // empty: the last stage's input is the new state (FSAL)
  std::vector<double> e;               // b - b_hat (empty: no error estimate, fixed steps)
  int order;                           // of the solution (5 for Tsit5/Dopri5, 4 for RK4)
  bool fsal() const { return b.empty(); }
  bool adaptive() const { return !e.empty(); }
};
const Tableau& tableau(Method m);

// An accepted step as the checkpointed replay needs it: where it starts and ends, the step h
// (exactly as used in the stages), and which outputs fall in (t, t1] at which fraction theta.
struct StepRecord {
  double t, t1, h;
  std::vector<std::pair<int64_t, double>> outputs;
};

// y at t + theta h from the values and derivatives at both ends of a step (cubic Hermite).
Tensor hermite(const Tensor& y0, const Tensor& y1, const Tensor& f0, const Tensor& f1, double h,
               double theta);

// One step of size h from (t, y) whose first stage f(y, t) is f0, landing at time t1; returns
// the new state and f(y1, t1), and the scaled RMS error estimate in *err (adaptive tableaus).
std::pair<Tensor, Tensor> rk_step(const Tableau& tab, const Rhs& g, double t, double t1, double h,
                                  const Tensor& y, const Tensor& f0, double rtol, double atol,
                                  double* err);

struct Tolerances {
  double rtol, atol;
};

// Integrates from ts.front() to ts.back() (either direction, ts monotone) and returns the state
// at every ts. h carries the step size between calls (0: choose one). rec, if given, receives the
// accepted steps for a replay.
std::vector<Tensor> integrate(const Tableau& tab, const Rhs& g, const Tensor& y0,
                              const std::vector<double>& ts, const ODEOptions& opt, Tolerances tol,
                              double& h, SolveStats* stats, std::vector<StepRecord>* rec);

}  // namespace fx::sci::detail
