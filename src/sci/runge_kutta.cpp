#include "sci/runge_kutta.hpp"

#include <algorithm>
#include <cmath>

#include "fluxion/ad/custom.hpp"
#include "fluxion/ops/elementwise.hpp"

namespace fx::sci::detail {
namespace {

// PI step-size control (Gustafsson; Hairer & Wanner IV.2) with OrdinaryDiffEq's gains for a
// 5th order pair: beta1 = 7 / (10 q), beta2 = 2 / (5 q).
constexpr double kSafety = 0.9;
constexpr double kMinFactor = 0.2;
constexpr double kMaxFactor = 10;

// x's values as doubles, read without recording anything (step control is not differentiated).
std::vector<double> values(const Tensor& x) {
  Tensor c = ad::detail::detach(x);
  if (c.dtype() != f64) c = astype(c, f64);
  c = c.contiguous();
  const double* p = c.data<double>();
  return std::vector<double>(p, p + c.numel());
}

// sqrt(mean((v / (atol + rtol * max(|y0|, |y1|)))^2)), the norm every decision uses.
double scaled_rms(const std::vector<double>& v, const std::vector<double>& y0,
                  const std::vector<double>& y1, Tolerances tol) {
  if (v.empty()) return 0;
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    double scale = tol.atol + tol.rtol * std::max(std::abs(y0[i]), std::abs(y1[i]));
    double r = v[i] / scale;
    s += r * r;
  }
  return std::sqrt(s / double(v.size()));
}

// Hairer, Norsett & Wanner, "Solving ODEs I", II.4: a step whose Euler error is about 1% of the
// tolerance, checked against the change of f over a trial step.
double initial_step(const Tableau& tab, const Rhs& g, const Tensor& y0, const Tensor& f0, double t0,
                    double tend, Tolerances tol) {
  const double span = std::abs(tend - t0), dir = tend >= t0 ? 1 : -1;
  std::vector<double> y = values(y0), f = values(f0);
  double d0 = scaled_rms(y, y, y, tol), d1 = scaled_rms(f, y, y, tol);
  double h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
  h0 = std::min(h0, span);
  Tensor y0d = ad::detail::detach(y0);
  std::vector<double> f1 = values(g(y0d + ad::detail::detach(f0) * (dir * h0), t0 + dir * h0));
  for (size_t i = 0; i < f1.size(); ++i) f1[i] -= f[i];
  double d2 = scaled_rms(f1, y, y, tol) / h0;
  double dmax = std::max(d1, d2);
  double h1 = dmax <= 1e-15 ? std::max(1e-6, h0 * 1e-3) : std::pow(0.01 / dmax, 1.0 / tab.order);
  return std::min({100 * h0, h1, span});
}

}  // namespace

const Tableau& tableau(Method m) {
  // Classic RK4.
  static const Tableau rk4{"rk4",
                           {0, 0.5, 0.5, 1},
                           {{}, {0.5}, {0, 0.5}, {0, 0, 1}},
                           {1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6},
                           {},
                           4};
  // Tsitouras (2011), "Runge-Kutta pairs of order 5(4) satisfying only the first column
  // simplifying assumption", as tabulated in OrdinaryDiffEq.jl.
  static const Tableau tsit5{
      "tsit5",
      {0, 0.161, 0.327, 0.9, 0.9800255409045097, 1, 1},
      {{},
       {0.161},
       {-0.008480655492356989, 0.335480655492357},
       {2.897153057105493, -6.359448489975075, 4.3622954328695815},
       {5.325864828439257, -11.748883564062828, 7.4955393428898365, -0.09249506636175525},
       {5.86145544294642, -12.92096931784711, 8.159367898576159, -0.071584973281401,
        -0.028269050394068383},
       {0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742, -3.290069515436081,
        2.324710524099774}},
      {},
      {-0.00178001105222577714, -0.0008164344596567469, 0.007880878010261995, -0.1447110071732629,
       0.5823571654525552, -0.45808210592918697, 1.0 / 66},
      5};
  // Dormand & Prince (1980), RK5(4)7M.
  static const Tableau dopri5{
      "dopri5",
      {0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1, 1},
      {{},
       {1.0 / 5},
       {3.0 / 40, 9.0 / 40},
       {44.0 / 45, -56.0 / 15, 32.0 / 9},
       {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
       {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
       {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84}},
      {},
      {71.0 / 57600, 0, -71.0 / 16695, 71.0 / 1920, -17253.0 / 339200, 22.0 / 525, -1.0 / 40},
      5};
  switch (m) {
    case Method::rk4: return rk4;
    case Method::tsit5: return tsit5;
    case Method::dopri5: return dopri5;
  }
  fx::detail::fail("fx::sci: unknown method ", int(m));
}

Tensor hermite(const Tensor& y0, const Tensor& y1, const Tensor& f0, const Tensor& f1, double h,
               double theta) {
  if (theta == 1) return y1;
  if (theta == 0) return y0;
  const double s = 1 - theta;
  return y0 * ((1 + 2 * theta) * s * s) + f0 * (h * theta * s * s) +
         y1 * (theta * theta * (3 - 2 * theta)) + f1 * (h * theta * theta * (theta - 1));
}

std::pair<Tensor, Tensor> rk_step(const Tableau& tab, const Rhs& g, double t, double t1, double h,
                                  const Tensor& y, const Tensor& f0, double rtol, double atol,
                                  double* err) {
  const size_t stages = tab.c.size();
  std::vector<Tensor> k{f0};
  Tensor yi;
  for (size_t i = 1; i < stages; ++i) {
    yi = y;
    for (size_t j = 0; j < i; ++j)
      if (tab.a[i][j] != 0) yi = yi + k[j] * (h * tab.a[i][j]);
    k.push_back(g(yi, tab.c[i] == 1 ? t1 : t + tab.c[i] * h));
  }
  Tensor y1, f1;
  if (tab.fsal()) {  // the last stage was evaluated at the new state
    y1 = yi;
    f1 = k.back();
  } else {
    y1 = y;
    for (size_t j = 0; j < stages; ++j)
      if (tab.b[j] != 0) y1 = y1 + k[j] * (h * tab.b[j]);
    f1 = g(y1, t1);
  }
  if (err) {
    std::vector<double> e(size_t(y.numel()), 0.0);
    for (size_t j = 0; j < stages; ++j) {
      if (tab.e[j] == 0) continue;
      std::vector<double> kj = values(k[j]);
      for (size_t i = 0; i < e.size(); ++i) e[i] += h * tab.e[j] * kj[i];
    }
    *err = scaled_rms(e, values(y), values(y1), {rtol, atol});
  }
  return {y1, f1};
}

std::vector<Tensor> integrate(const Tableau& tab, const Rhs& g, const Tensor& y0,
                              const std::vector<double>& ts, const ODEOptions& opt, Tolerances tol,
                              double& h, SolveStats* stats, std::vector<StepRecord>* rec) {
  const size_t nt = ts.size();
  std::vector<Tensor> out(nt);
  const double t0 = ts.front(), tend = ts.back(), dir = tend >= t0 ? 1 : -1;
  size_t next = 0;
  while (next < nt && ts[next] == t0) out[next++] = y0;
  if (next == nt) return out;

  Tensor y = y0, f = g(y0, t0);
  double t = t0;
  const bool adaptive = tab.adaptive() && opt.adaptive;
  int64_t nfixed = 0;
  if (!adaptive) {
    FX_CHECK(opt.dt > 0, "fx::sci::solve_ode: ", tab.name, " takes fixed steps: set dt > 0");
    nfixed = std::max<int64_t>(1, int64_t(std::ceil(std::abs(tend - t0) / opt.dt - 1e-9)));
  } else if (h == 0) {
    h = opt.dt > 0 ? opt.dt : initial_step(tab, g, y0, f, t0, tend, tol);
  }
  h = std::abs(h);
  const double beta1 = 0.7 / tab.order, beta2 = 0.4 / tab.order;
  double err_prev = 1e-4;
  int64_t attempts = 0, accepted = 0;
  while (t != tend) {
    FX_CHECK(++attempts <= opt.max_steps, "fx::sci::solve_ode: more than ", opt.max_steps,
             " steps from t = ", t0, " to ", tend, " (", tab.name,
             "): a stiff problem, or tolerances too tight? raise max_steps");
    double t1, hs;
    bool last;
    if (!adaptive) {
      last = accepted + 1 == nfixed;
      t1 = last ? tend : t0 + double(accepted + 1) * (tend - t0) / double(nfixed);
    } else {
      FX_CHECK(h > 1e-14 * std::max(1.0, std::abs(t)), "fx::sci::solve_ode: step size ", h,
               " underflows at t = ", t, " (", tab.name, "): the solution blows up or is stiff");
      last = h >= std::abs(tend - t) * (1 - 1e-12);
      t1 = last ? tend : t + dir * h;
    }
    hs = t1 - t;
    double err = 0;
    auto [y1, f1] = rk_step(tab, g, t, t1, hs, y, f, tol.rtol, tol.atol, adaptive ? &err : nullptr);
    if (adaptive) {
      if (!(err <= 1)) {  // rejected (NaN included): shrink and retry
        double fac = std::isfinite(err) ? kSafety * std::pow(err, -1.0 / tab.order) : kMinFactor;
        h = std::abs(hs) * std::max(kMinFactor, fac);
        if (stats) ++stats->rejected;
        continue;
      }
      double fac =
          err == 0 ? kMaxFactor : kSafety * std::pow(err, -beta1) * std::pow(err_prev, beta2);
      fac = std::clamp(fac, kMinFactor, kMaxFactor);
      err_prev = std::max(err, 1e-4);
      // A step cut short to land on tend says little about the next one's size.
      h = last ? std::max(h, std::abs(hs) * fac) : std::abs(hs) * fac;
    }
    StepRecord r{t, t1, hs, {}};
    while (next < nt && dir * (ts[next] - t1) <= 0) {
      double theta = ts[next] == t1 ? 1.0 : (ts[next] - t) / hs;
      out[next] = hermite(y, y1, f, f1, hs, theta);
      if (rec) r.outputs.emplace_back(int64_t(next), theta);
      ++next;
    }
    if (rec) rec->push_back(std::move(r));
    t = t1;
    y = std::move(y1);
    f = std::move(f1);
    ++accepted;
    if (stats) ++stats->accepted;
  }
  return out;
}

}  // namespace fx::sci::detail
