#include "fluxion/sci/lbfgs.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <vector>

#include "fluxion/ad/custom.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"

namespace fx::sci {
namespace {

using Vec = std::vector<double>;

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}
double max_abs(const Vec& a) {
  double m = 0;
  for (double v : a) m = std::max(m, std::abs(v));
  return m;
}
// a + t b
Vec axpy(const Vec& a, double t, const Vec& b) {
  Vec r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = a[i] + t * b[i];
  return r;
}

// The closure on double vectors, counting calls.
struct Objective {
  const LossAndGradient& fg;
  const Tensor& x0;
  int64_t evaluations = 0;

  struct Point {
    Vec x, g;
    double f = 0;
  };
  Point at(Vec x) {
    ++evaluations;
    Tensor xt = from_vector(x, x0.shape()).astype(x0.dtype());
    auto [f, g] = fg(xt);
    FX_CHECK(g.defined() && g.numel() == x0.numel(), "fx::sci::lbfgs: the closure returned a ",
             g.defined() ? g.shape().to_string() : std::string("undefined"),
             " gradient for parameters of shape ", x0.shape());
    Tensor gd = ad::detail::detach(g).astype(f64).contiguous();
    const double* p = gd.data<double>();
    return {std::move(x), Vec(p, p + gd.numel()), f};
  }
};

// Minimiser of the cubic through (a, fa, da) and (b, fb, db), kept inside the middle 80% of
// [a, b]; bisection when the cubic has none.
double safeguarded_cubic(double a, double fa, double da, double b, double fb, double db) {
  double d1 = da + db - 3 * (fa - fb) / (a - b);
  double disc = d1 * d1 - da * db;
  double lo = std::min(a, b), hi = std::max(a, b), margin = 0.1 * (hi - lo);
  if (!(disc >= 0) || !std::isfinite(disc)) return 0.5 * (a + b);
  double d2 = std::copysign(std::sqrt(disc), b - a);
  double t = b - (b - a) * (db + d2 - d1) / (db - da + 2 * d2);
  if (!std::isfinite(t)) return 0.5 * (a + b);
  return std::clamp(t, lo + margin, hi - margin);
}

struct Trial {
  double step;
  Objective::Point p;
  double slope;  // g(x + step d) . d
};

// Strong Wolfe line search from p0 along d (slope0 = g0 . d < 0), first trial step `step`.
// Returns the accepted point; its step is 0 when none satisfied sufficient decrease.
Trial wolfe(Objective& obj, const Objective::Point& p0, const Vec& d, double slope0, double step,
            const LBFGSOptions& o) {
  auto eval = [&](double a) {
    Objective::Point p = obj.at(axpy(p0.x, a, d));
    double s = dot(p.g, d);
    return Trial{a, std::move(p), s};
  };
  auto sufficient = [&](const Trial& t) { return t.p.f <= p0.f + o.c1 * t.step * slope0; };
  auto curvature = [&](const Trial& t) { return std::abs(t.slope) <= -o.c2 * slope0; };
  Trial none{0, p0, slope0};
  auto zoom = [&](Trial lo, Trial hi) {
    for (int j = 0; j < 30; ++j) {
      double a = safeguarded_cubic(lo.step, lo.p.f, lo.slope, hi.step, hi.p.f, hi.slope);
      Trial t = eval(a);
      if (!sufficient(t) || t.p.f >= lo.p.f) {
        hi = std::move(t);
      } else {
        if (curvature(t)) return t;
        if (t.slope * (hi.step - lo.step) >= 0) hi = lo;
        lo = std::move(t);
      }
      if (std::abs(hi.step - lo.step) <= 1e-16 * std::max(1.0, lo.step)) break;
    }
    return lo;  // the best point with sufficient decrease (step 0: none)
  };
  Trial prev = none;
  for (int i = 0; i < 30; ++i) {
    Trial t = eval(step);
    if (!std::isfinite(t.p.f)) {  // overshot into overflow: come back
      step = 0.5 * (prev.step + step);
      continue;
    }
    if (!sufficient(t) || (i > 0 && t.p.f >= prev.p.f)) return zoom(prev, t);
    if (curvature(t)) return t;
    if (t.slope >= 0) return zoom(t, prev);
    prev = std::move(t);
    step *= 2;
  }
  return prev;
}

Trial backtracking(Objective& obj, const Objective::Point& p0, const Vec& d, double slope0,
                   double step, const LBFGSOptions& o) {
  for (int i = 0; i < 50; ++i, step *= 0.5) {
    Objective::Point p = obj.at(axpy(p0.x, step, d));
    if (std::isfinite(p.f) && p.f <= p0.f + o.c1 * step * slope0) {
      double s = dot(p.g, d);
      return {step, std::move(p), s};
    }
  }
  return {0, p0, slope0};
}

}  // namespace

LBFGSResult lbfgs(const LossAndGradient& fg, const Tensor& x0, const LBFGSOptions& opt) {
  FX_CHECK(x0.defined() && is_floating(x0.dtype()),
           "fx::sci::lbfgs: parameters must be a "
           "floating tensor, got ",
           x0.defined() ? dtype_name(x0.dtype()) : "undefined");
  FX_CHECK(
      opt.memory >= 1 && opt.max_iterations >= 0 && opt.c1 > 0 && opt.c1 < opt.c2 && opt.c2 < 1,
      "fx::sci::lbfgs: options memory = ", opt.memory, ", c1 = ", opt.c1, ", c2 = ", opt.c2,
      " (need memory >= 1, 0 < c1 < c2 < 1)");
  const int64_t max_evals =
      opt.max_evaluations > 0 ? opt.max_evaluations : 20 * opt.max_iterations + 1;
  Objective obj{fg, x0};
  Tensor xd = ad::detail::detach(x0).astype(f64).contiguous();
  Objective::Point p = obj.at(Vec(xd.data<double>(), xd.data<double>() + xd.numel()));
  LBFGSResult r;
  FX_CHECK(std::isfinite(p.f), "fx::sci::lbfgs: the loss at the starting point is ", p.f);
  std::deque<std::pair<Vec, Vec>> pairs;  // (s, y), newest last
  r.stop = "max_iterations";
  while (true) {
    if (max_abs(p.g) <= opt.gtol) {
      r.converged = true;
      r.stop = "gtol";
      break;
    }
    if (r.iterations >= opt.max_iterations) break;
    if (obj.evaluations >= max_evals) {
      r.stop = "max_evaluations";
      break;
    }
    // Two-loop recursion: d = -H g.
    Vec q = p.g;
    std::vector<double> alpha(pairs.size());
    for (size_t i = pairs.size(); i-- > 0;) {
      auto& [s, y] = pairs[i];
      alpha[i] = dot(s, q) / dot(y, s);
      q = axpy(q, -alpha[i], y);
    }
    double gamma = 1;
    if (!pairs.empty())
      gamma = dot(pairs.back().first, pairs.back().second) /
              dot(pairs.back().second, pairs.back().second);
    for (double& v : q) v *= gamma;
    for (size_t i = 0; i < pairs.size(); ++i) {
      auto& [s, y] = pairs[i];
      double beta = dot(y, q) / dot(y, s);
      q = axpy(q, alpha[i] - beta, s);
    }
    Vec d(q.size());
    for (size_t i = 0; i < q.size(); ++i) d[i] = -q[i];
    double slope = dot(p.g, d);
    if (!(slope < 0)) {  // not a descent direction: forget the curvature pairs
      pairs.clear();
      for (size_t i = 0; i < d.size(); ++i) d[i] = -p.g[i];
      slope = dot(p.g, d);
    }
    // Without curvature information, a first step of unit length in x.
    double step = pairs.empty() ? std::min(1.0, 1.0 / std::sqrt(-slope)) : 1.0;
    Trial t = opt.line_search == LineSearch::strong_wolfe
                  ? wolfe(obj, p, d, slope, step, opt)
                  : backtracking(obj, p, d, slope, step, opt);
    ++r.iterations;
    if (t.step == 0) {
      if (pairs.empty()) {
        r.stop = "line search failed";
        break;
      }
      pairs.clear();  // retry from steepest descent
      continue;
    }
    Vec s(p.x.size()), y(p.x.size());
    for (size_t i = 0; i < s.size(); ++i) {
      s[i] = t.p.x[i] - p.x[i];
      y[i] = t.p.g[i] - p.g[i];
    }
    double decrease = p.f - t.p.f;
    if (dot(s, y) > 1e-10 * std::sqrt(dot(s, s) * dot(y, y))) {
      pairs.emplace_back(std::move(s), std::move(y));
      if (int64_t(pairs.size()) > opt.memory) pairs.pop_front();
    }
    p = std::move(t.p);
    if (opt.ftol > 0 && decrease <= opt.ftol * std::max(1.0, std::abs(p.f))) {
      r.converged = true;
      r.stop = "ftol";
      break;
    }
  }
  r.x = from_vector(p.x, x0.shape()).astype(x0.dtype());
  r.loss = p.f;
  r.evaluations = obj.evaluations;
  return r;
}

}  // namespace fx::sci
