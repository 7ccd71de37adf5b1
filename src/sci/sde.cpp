#include "fluxion/sci/sde.hpp"

#include <cmath>

#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/reduce.hpp"

namespace fx::sci {

Tensor BrownianPath::value(int64_t k) const {
  FX_CHECK(increments.defined() && k >= 0 && k <= steps(), "fx::sci::BrownianPath::value: step ", k,
           " outside [0, ", increments.defined() ? steps() : 0, "]");
  if (k == 0) return zeros({noises()}, increments.dtype());
  return sum(slice(increments, 0, 0, k), {0});
}

BrownianPath BrownianPath::coarsened(int64_t factor) const {
  FX_CHECK(factor >= 1 && steps() % factor == 0, "fx::sci::BrownianPath::coarsened: ", steps(),
           " steps do not divide into groups of ", factor);
  return {t0, dt * double(factor),
          sum(reshape(increments, {steps() / factor, factor, noises()}), {1})};
}

BrownianPath brownian_path(int64_t noises, double t0, double t1, int64_t steps, Generator& gen,
                           DType dtype) {
  FX_CHECK(steps >= 1 && noises >= 0 && t1 > t0, "fx::sci::brownian_path: ", steps, " steps of ",
           noises, " noises on [", t0, ", ", t1, "]");
  const double dt = (t1 - t0) / double(steps);
  return {t0, dt, randn({steps, noises}, gen, dtype) * std::sqrt(dt)};
}

namespace detail {

Tensor solve_sde_flat(const FlatRhs& drift, const FlatRhs& diffusion, const Tensor& y0,
                      const Tensor& P, const std::vector<double>& ts, const BrownianPath& W,
                      const SDEOptions& opt) {
  FX_CHECK(!ts.empty(), "fx::sci::solve_sde: no output times (ts is empty)");
  FX_CHECK(W.increments.defined() && W.noises() == y0.numel(), "fx::sci::solve_sde: a path of ",
           W.increments.defined() ? W.noises() : 0, " noises for a state of ", y0.numel(),
           " elements (diagonal noise: one each)");
  FX_CHECK(W.increments.dtype() == y0.dtype(), "fx::sci::solve_sde: path of dtype ",
           W.increments.dtype(), " and state of dtype ", y0.dtype());
  // Output times on the grid, as step indices.
  std::vector<int64_t> at;
  for (double t : ts) {
    double k = std::round((t - W.t0) / W.dt);
    FX_CHECK(k >= 0 && k <= double(W.steps()) &&
                 std::abs(W.t0 + k * W.dt - t) <= 1e-9 * std::max(1.0, std::abs(t)),
             "fx::sci::solve_sde: output time ", t, " is not on the path's grid t0 = ", W.t0,
             " + k * ", W.dt, ", k in [0, ", W.steps(), "]");
    FX_CHECK(at.empty() || int64_t(k) >= at.back(), "fx::sci::solve_sde: output times decrease at ",
             t);
    at.push_back(int64_t(k));
  }
  const double h = W.dt, sqrt_h = std::sqrt(h);
  std::vector<Tensor> out;
  Tensor y = y0;
  int64_t k = at.front();
  for (int64_t want : at) {
    for (; k < want; ++k) {
      const double t = W.t0 + double(k) * h;
      Tensor dW = select(W.increments, 0, k);
      Tensor f = drift(y, P, t) * h, g = diffusion(y, P, t);
      if (opt.method == SDEMethod::euler_maruyama) {
        y = y + f + g * dW;
      } else {
        Tensor support = diffusion(y + f + g * sqrt_h, P, t);
        y = y + f + g * dW + (support - g) * ((dW * dW - h) * (0.5 / sqrt_h));
      }
    }
    out.push_back(y);
  }
  return stack(out, 0);
}

}  // namespace detail
}  // namespace fx::sci
