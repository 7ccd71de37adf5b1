// Activation composites: public ops only, so their gradients come from the primitives' rules
// and differentiate again. Branches go through `where` (the gradient of the unused branch is
// zero there) and the stable forms go through softplus, which never overflows. gelu and
// (log)softmax over the last axis also have fused CPU kernels (activation_kernels.hpp) for the
// first-order reverse mode, where the composed form's passes over memory made them 1.5-6x slower
// than libtorch's (bench/layer_table); the composed form stays the definition that forward mode
// and higher orders differentiate, and what the tests compare the kernels against.
#include "fluxion/nn/activations.hpp"

#include <cmath>
#include <numbers>

#include "fluxion/ad/custom.hpp"
#include "fluxion/ad/tape.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/device.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"
#include "nn/activation_kernels.hpp"

namespace fx {
namespace {

Tensor zero_like_scalar(const Tensor& x) { return scalar(0, x.dtype(), x.device()); }

void check_input(const Tensor& x, const char* name) {
  FX_CHECK(x.defined(), "fx::", name, ": undefined tensor");
  FX_CHECK(is_floating(x.dtype()), "fx::", name, ": needs a floating tensor, got ",
           dtype_name(x.dtype()), " ", x.shape());
}

// The kernel alone outside any recording, else one custom-rule node whose pullback is the
// backward kernel bwd(x, y, dy). Callers check nn::detail::activation_fusable first.
template <class Fwd, class Bwd>
Tensor fused_unary(const char* name, const Tensor& x, Fwd fwd, Bwd bwd) {
  if (ad::num_active_tapes() == 0) return fwd(x);
  return custom_rule(name, fwd, bwd)(x);
}

// Whether axes is x's last axis alone (what the fused softmax kernels reduce over).
bool last_axis_only(const Tensor& x, const Axes& axes, const char* op) {
  return x.ndim() >= 1 && axes.mask(int(x.ndim()), op) == uint64_t(1) << (x.ndim() - 1);
}

Tensor fused_softmax(const Tensor& x, bool log) {
  return fused_unary(
      log ? "fx::logsoftmax" : "fx::softmax", x,
      [log](const Tensor& x) { return nn::detail::softmax_forward(x, log); },
      [log](const Tensor&, const Tensor& y, const Tensor& dy) {
        return nn::detail::softmax_backward(y, dy, log);
      });
}

Tensor fused_gelu(const Tensor& x, nn::detail::GeluForm form) {
  return fused_unary(
      form == nn::detail::GeluForm::erf ? "fx::gelu_erf" : "fx::gelu_tanh", x,
      [form](const Tensor& x) { return nn::detail::gelu_forward(x, form); },
      [form](const Tensor& x, const Tensor&, const Tensor& dy) {
        return nn::detail::gelu_backward(x, dy, form);
      });
}

}  // namespace

Tensor softmax(const Tensor& x, Axes axes) {
  FX_CHECK(x.defined(), "fx::softmax: undefined tensor");
  if (nn::detail::activation_fusable(x) && last_axis_only(x, axes, "fx::softmax"))
    return fused_softmax(x, false);
  // Shifting by a constant leaves softmax unchanged, so the max needs no gradient.
  Tensor e = exp(x - stop_gradient(max(x, axes, true)));
  return e / sum(e, axes, true);
}
Tensor softmax(const Tensor& x, int64_t axis) { return softmax(x, Axes(axis)); }
Tensor softmax(const Tensor& x) { return softmax(x, Axes(-1)); }

Tensor logsoftmax(const Tensor& x, Axes axes) {
  FX_CHECK(x.defined(), "fx::logsoftmax: undefined tensor");
  if (nn::detail::activation_fusable(x) && last_axis_only(x, axes, "fx::logsoftmax"))
    return fused_softmax(x, true);
  return x - logsumexp(x, axes, true);
}
Tensor logsoftmax(const Tensor& x, int64_t axis) { return logsoftmax(x, Axes(axis)); }
Tensor logsoftmax(const Tensor& x) { return logsoftmax(x, Axes(-1)); }

// clamp is minimum(maximum(...)): its gradient is 1 inside the band and 0 outside.
Tensor hardsigmoid(const Tensor& x) { return clamp((x + 3.0) * (1.0 / 6.0), 0.0, 1.0); }
Tensor hardtanh(const Tensor& x) { return clamp(x, -1.0, 1.0); }
Tensor relu6(const Tensor& x) { return clamp(x, 0.0, 6.0); }

// `where`, not max(x, slope x): the latter would be wrong for slope > 1 and splits the
// gradient between the branches at 0.
Tensor leakyrelu(const Tensor& x, double slope) { return where(x > 0.0, x, x * slope); }
Tensor leakyrelu(const Tensor& x) { return leakyrelu(x, 0.01); }

Tensor rrelu(const Tensor& x, double lo, double hi, Generator& gen) {
  check_input(x, "rrelu");
  FX_CHECK(lo <= hi, "fx::rrelu: lower slope ", lo, " exceeds upper slope ", hi);
  // The slopes are data, not parameters: drawn in the input's dtype, with no gradient.
  Tensor a = uniform(x.shape(), lo, hi, gen, x.dtype());
  if (x.device() != Device::cpu) a = to(a, x.device());
  return where(x >= 0.0, x, x * a);
}
Tensor rrelu(const Tensor& x, double lo, double hi) {
  FX_CHECK(lo <= hi, "fx::rrelu: lower slope ", lo, " exceeds upper slope ", hi);
  return where(x >= 0.0, x, x * (0.5 * (lo + hi)));
}
Tensor rrelu(const Tensor& x) { return rrelu(x, 1.0 / 8, 1.0 / 3); }

Tensor trelu(const Tensor& x, double theta) { return where(x > theta, x, 0.0); }
Tensor trelu(const Tensor& x) { return trelu(x, 1.0); }

Tensor softshrink(const Tensor& x, double lambda) {
  FX_CHECK(lambda >= 0, "fx::softshrink: lambda must be non-negative, got ", lambda);
  return where(x > lambda, x - lambda, where(x < -lambda, x + lambda, 0.0));
}
Tensor softshrink(const Tensor& x) { return softshrink(x, 0.5); }

Tensor elu(const Tensor& x, double alpha) {
  // exp of min(x, 0), not of x: the unused branch of `where` still gets a zero cotangent, and
  // 0 * exp(large x) = 0 * inf would turn the gradient into NaN.
  Tensor neg_part = expm1(minimum(x, zero_like_scalar(x)));
  return where(x > 0.0, x, neg_part * alpha);
}
Tensor elu(const Tensor& x) { return elu(x, 1.0); }

Tensor celu(const Tensor& x, double alpha) {
  FX_CHECK(alpha != 0, "fx::celu: alpha must be non-zero");
  Tensor neg_part = expm1(minimum(x, zero_like_scalar(x)) * (1.0 / alpha));
  return where(x > 0.0, x, neg_part * alpha);
}
Tensor celu(const Tensor& x) { return celu(x, 1.0); }

Tensor selu(const Tensor& x) {
  // Klambauer et al. 2017, the fixed point of mean 0 and variance 1.
  constexpr double lambda = 1.0507009873554804934193349852946;
  constexpr double alpha = 1.6732632423543772848170429916717;
  return elu(x, alpha) * lambda;
}

Tensor gelu_tanh(const Tensor& x) {
  if (nn::detail::activation_fusable(x)) return fused_gelu(x, nn::detail::GeluForm::tanh);
  const double k = std::sqrt(2.0 / std::numbers::pi);
  Tensor inner = (x + x * x * x * 0.044715) * k;
  return x * (tanh(inner) + 1.0) * 0.5;
}
Tensor gelu(const Tensor& x) { return gelu_tanh(x); }

Tensor gelu_sigmoid(const Tensor& x) {
  // 0.5 (1 + tanh(z)) = sigmoid(2z), so this is gelu_tanh with the constant doubled.
  const double k = std::sqrt(8.0 / std::numbers::pi);
  return x * sigmoid((x + x * x * x * 0.044715) * k);
}

Tensor gelu_erf(const Tensor& x) {
  if (nn::detail::activation_fusable(x)) return fused_gelu(x, nn::detail::GeluForm::erf);
  return x * (erf(x * std::numbers::sqrt2 * 0.5) + 1.0) * 0.5;
}

Tensor swish(const Tensor& x) { return x * sigmoid(x); }
Tensor hardswish(const Tensor& x) { return x * hardsigmoid(x); }
Tensor mish(const Tensor& x) { return x * tanh(softplus(x)); }
Tensor lisht(const Tensor& x) { return x * tanh(x); }
Tensor softsign(const Tensor& x) { return x / (abs(x) + 1.0); }
Tensor logsigmoid(const Tensor& x) { return neg(softplus(neg(x))); }
Tensor logcosh(const Tensor& x) {
  // cosh x = e^x (1 + e^-2x) / 2, so log cosh x = x + log(1 + e^-2x) - log 2.
  return x + softplus(x * -2.0) - std::numbers::ln2;
}
Tensor tanhshrink(const Tensor& x) { return x - tanh(x); }

Tensor glu(const Tensor& x, int64_t axis) {
  FX_CHECK(x.defined() && x.ndim() > 0, "fx::glu: needs a tensor with at least one axis, got ",
           x.defined() ? x.shape().to_string() : "undefined");
  const int64_t nd = x.ndim();
  FX_CHECK(axis >= -nd && axis < nd, "fx::glu: axis ", axis, " is out of range for ", x.shape());
  const int64_t a = axis < 0 ? axis + nd : axis;
  const int64_t n = x.shape()[a];
  FX_CHECK(n % 2 == 0, "fx::glu: axis ", axis, " of ", x.shape(), " has odd length ", n,
           ", so it does not split into two halves");
  return slice(x, a, 0, n / 2) * sigmoid(slice(x, a, n / 2, n));
}
Tensor glu(const Tensor& x) { return glu(x, -1); }

}  // namespace fx
