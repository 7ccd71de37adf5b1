// Activation composites: public ops only, so their gradients come from the primitives' rules.
#include "fluxion/nn/activations.hpp"

#include <cmath>
#include <numbers>

#include "fluxion/ops/create.hpp"
#include "fluxion/ops/reduce.hpp"

namespace fx {

Tensor softmax(const Tensor& x, int64_t axis) {
  FX_CHECK(x.defined(), "fx::softmax: undefined tensor");
  // Shifting by a constant leaves softmax unchanged, so the max needs no gradient.
  Tensor e = exp(x - stop_gradient(max(x, axis, true)));
  return e / sum(e, axis, true);
}
Tensor softmax(const Tensor& x) { return softmax(x, -1); }

Tensor logsoftmax(const Tensor& x, int64_t axis) {
  FX_CHECK(x.defined(), "fx::logsoftmax: undefined tensor");
  return x - logsumexp(x, axis, true);
}
Tensor logsoftmax(const Tensor& x) { return logsoftmax(x, -1); }

// `where`, not max(x, slope x): the latter would be wrong for slope > 1 and splits the
// gradient between the branches at 0.
Tensor leakyrelu(const Tensor& x, double slope) { return where(x > 0.0, x, x * slope); }
Tensor leakyrelu(const Tensor& x) { return leakyrelu(x, 0.01); }

Tensor elu(const Tensor& x, double alpha) {
  // exp of min(x, 0), not of x: the unused branch of `where` still gets a zero cotangent, and
  // 0 * exp(large x) = 0 * inf would turn the gradient into NaN.
  Tensor neg_part = exp(minimum(x, scalar(0, x.dtype(), x.device()))) - 1.0;
  return where(x > 0.0, x, neg_part * alpha);
}
Tensor elu(const Tensor& x) { return elu(x, 1.0); }

Tensor gelu(const Tensor& x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  Tensor inner = (x + x * x * x * 0.044715) * k;
  return x * (tanh(inner) + 1.0) * 0.5;
}

Tensor swish(const Tensor& x) { return x * sigmoid(x); }

}  // namespace fx
