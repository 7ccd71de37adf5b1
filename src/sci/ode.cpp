// solve_ode's three sensitivities on flat vectors: backprop (record the steps), checkpoint
// (replay fixed steps under nested fx::checkpointed) and adjoint (a custom rule that backsolves).
#include <algorithm>
#include <cmath>
#include <memory>
#include <tuple>

#include "fluxion/ad/checkpoint.hpp"
#include "fluxion/ad/custom.hpp"
#include "fluxion/ad/reverse.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "sci/runge_kutta.hpp"

namespace fx::sci::detail {
namespace {

Tolerances forward_tolerances(const ODEOptions& o) { return {o.rtol, o.atol}; }
Tolerances adjoint_tolerances(const ODEOptions& o) {
  return {o.adjoint_rtol > 0 ? o.adjoint_rtol : o.rtol,
          o.adjoint_atol > 0 ? o.adjoint_atol : o.atol};
}

Rhs bind_parameters(const FlatRhs& g, const Tensor& P, SolveStats* stats) {
  return [&g, P, stats](const Tensor& y, double t) {
    if (stats) ++stats->evaluations;
    return g(y, P, t);
  };
}

void check_problem(const Tensor& y0, const Tensor& P, const std::vector<double>& ts,
                   const ODEOptions& opt) {
  FX_CHECK(!ts.empty(), "fx::sci::solve_ode: no output times (ts is empty)");
  for (size_t i = 1; i < ts.size(); ++i)
    FX_CHECK(ts[i] >= ts[i - 1], "fx::sci::solve_ode: output times must not decrease, but ts[",
             i - 1, "] = ", ts[i - 1], " and ts[", i, "] = ", ts[i]);
  FX_CHECK(is_floating(y0.dtype()), "fx::sci::solve_ode: the state must be floating, got ",
           y0.dtype());
  FX_CHECK(P.dtype() == y0.dtype(), "fx::sci::solve_ode: parameters of dtype ", P.dtype(),
           " and state of dtype ", y0.dtype(), " differ");
  FX_CHECK(opt.rtol > 0 && opt.atol >= 0, "fx::sci::solve_ode: tolerances rtol = ", opt.rtol,
           ", atol = ", opt.atol, " (need rtol > 0, atol >= 0)");
  FX_CHECK(opt.checkpoint_steps >= 1 && opt.checkpoint_levels >= 0 &&
               opt.checkpoint_levels < kMaxTags - 1,
           "fx::sci::solve_ode: checkpoint_steps = ", opt.checkpoint_steps,
           ", checkpoint_levels = ", opt.checkpoint_levels, " (need >= 1 and 0 to ", kMaxTags - 2,
           ")");
  // Step-size control reads the state's values, which a value batched by fx::vmap or traced by
  // fx::trace does not hold (and each example would want its own steps).
  const bool adaptive = opt.adaptive && opt.method != Method::rk4;
  auto holds_values = [](const Tensor& t) { return t.numel() == 0 || t.storage()->data; };
  FX_CHECK(!adaptive || (holds_values(y0) && holds_values(P)),
           "fx::sci::solve_ode: an adaptive method chooses its steps from the state's values, "
           "which a state or parameters batched by fx::vmap or traced by fx::trace do not hold "
           "(state ",
           y0.shape(),
           "): use fixed steps (Method::rk4, or adaptive = false with dt) there, or "
           "solve the whole batch as one state with a leading batch axis");
}

Tensor solve_backprop(const FlatRhs& g, const Tensor& y0, const Tensor& P,
                      const std::vector<double>& ts, const ODEOptions& opt, SolveStats* stats) {
  double h = 0;
  return stack(integrate(tableau(opt.method), bind_parameters(g, P, stats), y0, ts, opt,
                         forward_tolerances(opt), h, stats, nullptr),
               0);
}

// ---- checkpoint: the steps of a first, unrecorded solve, replayed.

struct Replay {
  FlatRhs g;
  const Tableau* tab;
  std::vector<StepRecord> steps;
  int64_t leaf;  // steps run under one recording at the innermost level
};

// Runs steps [a, b) from y, the state at steps[a].t. Rows: the state after step b - 1, then the
// outputs that fall in those steps, in order.
Tensor replay(const std::shared_ptr<const Replay>& r, const Tensor& y, const Tensor& P, int64_t a,
              int64_t b, int levels) {
  if (b - a <= r->leaf || levels == 0) {
    Rhs rhs = bind_parameters(r->g, P, nullptr);
    std::vector<Tensor> rows(1);
    Tensor yk = y, fk = rhs(y, r->steps[size_t(a)].t);
    for (int64_t k = a; k < b; ++k) {
      const StepRecord& s = r->steps[size_t(k)];
      auto [y1, f1] = rk_step(*r->tab, rhs, s.t, s.t1, s.h, yk, fk, 0, 0, nullptr);
      for (const auto& [index, theta] : s.outputs)
        rows.push_back(hermite(yk, y1, fk, f1, s.h, theta));
      yk = std::move(y1);
      fk = std::move(f1);
    }
    rows[0] = yk;
    return stack(rows, 0);
  }
  // k checkpointed segments: the tape keeps their inputs and results, not their steps. Each
  // level's backward pass records on a tape nested in the previous one's, hence a bounded depth.
  auto segment = [r, levels](const Tensor& y, const Tensor& P, int64_t a, int64_t b) {
    return replay(r, y, P, a, b, levels - 1);
  };
  const double leaves = std::ceil(double(b - a) / double(r->leaf));
  const int64_t k =
      std::clamp<int64_t>(int64_t(std::ceil(std::pow(leaves, 1.0 / levels) - 1e-9)), 2, b - a);
  std::vector<Tensor> parts;
  Tensor state = y;
  for (int64_t i = 0; i < k; ++i) {
    int64_t from = a + (b - a) * i / k, to = a + (b - a) * (i + 1) / k;
    parts.push_back(checkpointed(segment, state, P, from, to));
    state = select(parts.back(), 0, 0);
  }
  std::vector<Tensor> rows{slice(parts.back(), 0, 0, 1)};
  for (const Tensor& p : parts)
    if (p.size(0) > 1) rows.push_back(slice(p, 0, 1, p.size(0)));
  return concat(rows, 0);
}

Tensor solve_checkpointed(const FlatRhs& g, const Tensor& y0, const Tensor& P,
                          const std::vector<double>& ts, const ODEOptions& opt, SolveStats* stats) {
  auto plan = std::make_shared<Replay>();
  plan->g = g;
  plan->tab = &tableau(opt.method);
  plan->leaf = opt.checkpoint_steps;
  double h = 0;
  integrate(*plan->tab, bind_parameters(g, ad::detail::detach(P), stats), ad::detail::detach(y0),
            ts, opt, forward_tolerances(opt), h, stats, &plan->steps);
  // Outputs at ts.front() are y0 itself; the replay yields the others.
  size_t at_start = 0;
  while (at_start < ts.size() && ts[at_start] == ts.front()) ++at_start;
  std::vector<Tensor> rows(at_start, unsqueeze(y0, 0));
  if (!plan->steps.empty()) {
    Tensor body = replay(plan, y0, P, 0, int64_t(plan->steps.size()), opt.checkpoint_levels);
    rows.push_back(slice(body, 0, 1, body.size(0)));
  }
  return rows.size() == 1 ? rows[0] : concat(rows, 0);
}

// ---- adjoint: backsolve from ts.back() to ts.front().

// The augmented state z = (y, a, gP) moves backwards under y' = g, a' = -a^T dg/dy,
// gP' = -a^T dg/dP. y restarts from the forward solution at each output time (less drift than
// integrating it back across the whole interval), and a jumps by that output's cotangent.
std::tuple<Tensor, Tensor> backsolve(const FlatRhs& g, const Tensor& P, const Tensor& ys,
                                     const Tensor& dys, const std::vector<double>& ts,
                                     const ODEOptions& opt) {
  const int64_t n = ys.size(1), m = P.numel(), last = int64_t(ts.size()) - 1;
  Rhs augmented = [&](const Tensor& z, double t) {
    auto [dy, back] = pullback([&](const Tensor& y, const Tensor& p) { return g(y, p, t); },
                               slice(z, 0, 0, n), P);
    auto [gy, gp] = back(slice(z, 0, n, 2 * n));
    std::vector<Tensor> parts{dy, -gy};
    if (m > 0) parts.push_back(-gp);
    return concat(parts, 0);
  };
  Tensor a = select(dys, 0, last), gP = zeros({m}, P.dtype());
  double h = 0;
  for (int64_t i = last; i > 0; --i) {
    if (ts[size_t(i)] != ts[size_t(i - 1)]) {
      std::vector<Tensor> parts{select(ys, 0, i), a};
      if (m > 0) parts.push_back(gP);
      Tensor z = integrate(tableau(opt.method), augmented, concat(parts, 0),
                           {ts[size_t(i)], ts[size_t(i - 1)]}, opt, adjoint_tolerances(opt), h,
                           nullptr, nullptr)
                     .back();
      a = slice(z, 0, n, 2 * n);
      if (m > 0) gP = slice(z, 0, 2 * n, 2 * n + m);
    }
    a = a + select(dys, 0, i - 1);
  }
  return {a, gP};
}

Tensor solve_adjoint(const FlatRhs& g, const Tensor& y0, const Tensor& P,
                     const std::vector<double>& ts, const ODEOptions& opt, SolveStats* stats) {
  auto shared = std::make_shared<const FlatRhs>(g);
  auto rule = custom_rule<2>(
      "fx::sci::solve_ode(adjoint)",
      [shared, ts, opt, stats](const Tensor& y0, const Tensor& P) {
        return solve_backprop(*shared, y0, P, ts, opt, stats);  // hidden from the tape
      },
      [shared, ts, opt](const Tensor&, const Tensor& P, const Tensor& ys, const Tensor& dys) {
        return backsolve(*shared, P, ys, dys, ts, opt);
      });
  return rule(y0, P);
}

}  // namespace

Tensor solve_flat(FlatRhs g, const Tensor& y0, const Tensor& P, const std::vector<double>& ts,
                  const ODEOptions& opt, SolveStats* stats) {
  check_problem(y0, P, ts, opt);
  switch (opt.sensitivity) {
    case Sensitivity::backprop: return solve_backprop(g, y0, P, ts, opt, stats);
    case Sensitivity::checkpoint: return solve_checkpointed(g, y0, P, ts, opt, stats);
    case Sensitivity::adjoint: return solve_adjoint(g, y0, P, ts, opt, stats);
  }
  fx::detail::fail("fx::sci::solve_ode: unknown sensitivity ", int(opt.sensitivity));
}

}  // namespace fx::sci::detail
