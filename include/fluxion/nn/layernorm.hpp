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
// layer and both shapes otherwise). The same in training and at test time: no state. On the CPU
// fused kernels of its own compute it (as GroupNorm's); forward mode and second order use the same
// function composed from public ops.
#pragma once
#include <cstdint>
#include <tuple>

#include "fluxion/ad/custom.hpp"
#include "fluxion/ad/tape.hpp"
#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/nn/activations.hpp"
#include "fluxion/nn/groupnorm.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

namespace detail {
// The fused CPU kernels (src/nn/norm_kernels.cpp): x f32/f64 as rows of k values, scale and bias
// of k values (x's dtype) or undefined. Forward returns (y, mean, rstd), one per row; backward
// returns (dx, dscale, dbias), the last two undefined without scale.
std::tuple<Tensor, Tensor, Tensor> layer_norm_forward(const Tensor& x, const Tensor& scale,
                                                      const Tensor& bias, int64_t k, double eps);
std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& x, const Tensor& scale,
                                                       const Tensor& mean, const Tensor& rstd,
                                                       const Tensor& dy, int64_t k);
}  // namespace detail

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
    Tensor y = detail::group_norm_fusable(x, scale) ? fused(x, inner) : composed(x, inner);
    return act(y);
  }

  // The same function composed from public ops: what forward mode and higher orders differentiate.
  Tensor composed(const Tensor& x, int64_t inner) const {
    Tensor x2 = reshape(x, {-1, inner});
    Tensor d = x2 - mean(x2, -1, true);
    Tensor y = reshape(d * rsqrt(mean(square(d), -1, true) + eps), x.shape());
    if (scale.defined()) y = y * scale + bias;
    return y;
  }

  // The fused kernels: directly outside any recording, else one custom-rule node whose pullback
  // is the fused backward (as GroupNorm, fluxion/nn/groupnorm.hpp).
  Tensor fused(const Tensor& x, int64_t inner) const {
    if (ad::num_active_tapes() == 0)
      return std::get<0>(detail::layer_norm_forward(x, scale, bias, inner, eps));
    const bool affine = scale.defined();
    const Tensor w = affine ? scale : ones(shape, x.dtype());
    const Tensor b = affine ? bias : zeros(shape, x.dtype());
    auto rule = custom_rule(
        "fx::nn::LayerNorm",
        [inner, eps = eps](const Tensor& x, const Tensor& w, const Tensor& b) {
          return detail::layer_norm_forward(x, w, b, inner, eps);
        },
        [inner, affine](const Tensor& x, const Tensor& w, const Tensor&, const Tensor&,
                        const Tensor& m, const Tensor& r, const Tensor& dy) {
          auto [dx, dw, db] = detail::layer_norm_backward(x, w, m, r, dy, inner);
          if (!affine) dw = Tensor(), db = Tensor();
          return std::tuple(dx, dw, db);
        });
    return rule(x, w, b);
  }
};

}  // namespace fx::nn
