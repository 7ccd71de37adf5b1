// Gradient transforms: tensor ops on the gradient (they allocate the gradient they return).
#include "fluxion/optim/transforms.hpp"

#include <cmath>
#include <limits>

#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"
#include "fluxion/optim/elementwise.hpp"

namespace fx::optim {

namespace detail {
void subtract_in_place(const char* rule, const Tensor& param, const Tensor& dx) {
  foreach_element(rule, param, dx, [](auto& x, auto d) { x -= d; });
}
}  // namespace detail

namespace {
void check_grad(const char* rule, const Tensor& param, const Tensor& grad) {
  FX_CHECK(param.defined() && grad.defined() && grad.shape() == param.shape(), "fx::optim::", rule,
           ": gradient ", grad.defined() ? grad.shape().to_string() : std::string("undefined"),
           " does not match parameter ", param.shape());
}
// The gradient in the parameter's dtype (a gradient may arrive in another floating type).
Tensor like_param(const Tensor& param, const Tensor& grad) {
  return grad.dtype() == param.dtype() ? grad : grad.astype(param.dtype());
}
}  // namespace

Tensor WeightDecay::transform(State&, const Tensor& param, const Tensor& grad) const {
  check_grad("WeightDecay", param, grad);
  return like_param(param, grad) + param * lambda;
}

Tensor SignDecay::transform(State&, const Tensor& param, const Tensor& grad) const {
  check_grad("SignDecay", param, grad);
  return like_param(param, grad) + sign(param) * lambda;
}

Tensor ClipGrad::transform(State&, const Tensor& param, const Tensor& grad) const {
  check_grad("ClipGrad", param, grad);
  FX_CHECK(delta >= 0, "fx::optim::ClipGrad: delta ", delta, " must not be negative");
  return clamp(like_param(param, grad), -delta, delta);
}

Tensor ClipNorm::transform(State&, const Tensor& param, const Tensor& grad) const {
  check_grad("ClipNorm", param, grad);
  FX_CHECK(p > 0, "fx::optim::ClipNorm: p ", p, " must be positive (or infinity)");
  const Tensor g = like_param(param, grad);
  const Tensor a = abs(g);
  double norm;
  if (g.numel() == 0) norm = 0;
  else if (std::isinf(p)) norm = max(a).item();
  else if (p == 2) norm = std::sqrt(sum_squares(g).item());
  else if (p == 1) norm = sum(a).item();
  else norm = std::pow(sum(pow(a, p)).item(), 1 / p);
  FX_CHECK(!throw_nonfinite || std::isfinite(norm), "fx::optim::ClipNorm: gradient ", g.shape(),
           " has ", p, "-norm ", norm, " (pass throw_nonfinite = false to let it through)");
  if (!(norm > omega)) return g;  // also NaN
  return g * (omega / norm);
}

Tensor AccumGrad::transform(State& s, const Tensor& param, const Tensor& grad) const {
  FX_CHECK(n > 0, "fx::optim::AccumGrad: n = ", n, " must be at least 1");
  check_grad("AccumGrad", param, grad);
  const double scale = 1.0 / double(n);
  // The mean tensor is written in place; the first gradient of a round overwrites it.
  if (s.count == 0) {
    foreach_element("AccumGrad", s.mean, grad,
                    [scale](auto& a, auto dx) { a = decltype(dx)(scale) * dx; });
  } else {
    foreach_element("AccumGrad", s.mean, grad,
                    [scale](auto& a, auto dx) { a += decltype(dx)(scale) * dx; });
  }
  if (++s.count < n) return Tensor();
  s.count = 0;
  return s.mean;
}

}  // namespace fx::optim
