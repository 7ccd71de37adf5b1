// LayerNorm: normalises each sample over its trailing axes (PyTorch's LayerNorm, Flux's
// LayerNorm), then an elementwise affine map of those axes' shape.
//
//   auto ln = fx::nn::LayerNorm({64});                 // over the last axis; scale 1, bias 0
//   fx::Tensor x = fx::randn({8, 10, 64});
//   fx::Tensor y = ln(x);                              // each x[n, t, :] to mean 0, variance 1
//   auto ln2 = fx::nn::LayerNorm({10, 64}, fx::identity, /*affine=*/false, 1e-6);
//
// y = act((x - mean) / sqrt(var + eps) * scale + bias), mean and biased variance over the
// trailing axes that make up `shape`. The input must end in `shape` (an fx::Error names the
// layer and both shapes otherwise). The same in training and at test time: no state.
#pragma once
#include <cstdint>

#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/nn/activations.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

struct LayerNorm {
  Tensor scale, bias;  // `shape`, or undefined without affine
  Activation act = identity;
  double eps = 1e-5;
  Shape shape;
  FX_FIELDS(scale, bias)

  LayerNorm() = default;
  explicit LayerNorm(const Shape& shape, Activation act = identity, bool affine = true,
                     double eps = 1e-5, DType dtype = f32)
      : scale(affine ? ones(shape, dtype) : Tensor()),
        bias(affine ? zeros(shape, dtype) : Tensor()),
        act(act),
        eps(eps),
        shape(shape) {}
  explicit LayerNorm(int64_t size, Activation act = identity, bool affine = true, double eps = 1e-5,
                     DType dtype = f32)
      : LayerNorm(Shape{size}, act, affine, eps, dtype) {}

  Tensor operator()(const Tensor& x) const {
    const int k = shape.size();
    bool ok = x.defined() && x.ndim() > k;
    for (int i = 0; ok && i < k; ++i) ok = x.shape()[x.ndim() - k + i] == shape[i];
    FX_CHECK(ok, "fx::nn::LayerNorm", shape, ": input ",
             x.defined() ? x.shape().to_string() : "undefined", " does not end in ", shape);
    const int64_t inner = shape.numel();
    Tensor x2 = reshape(x, {-1, inner});
    Tensor mu = mean(x2, -1, true);
    Tensor d = x2 - mu;
    Tensor y = reshape(d * rsqrt(mean(square(d), -1, true) + eps), x.shape());
    if (scale.defined()) y = y * scale + bias;
    return act(y);
  }
};

}  // namespace fx::nn
