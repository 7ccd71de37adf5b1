// GroupNorm: splits the channels (axis 1 of (N, C, ...)) into groups and normalises each sample's
// group over its channels and spatial axes (PyTorch's GroupNorm, Flux's GroupNorm), then a
// per-channel affine map.
//
//   auto gn = fx::nn::GroupNorm(32, 4);               // 32 channels in 4 groups of 8
//   fx::Tensor x = fx::randn({2, 32, 7, 7});
//   fx::Tensor y = gn(x);                             // each (sample, group) to mean 0, var 1
//   auto g = fx::gradient([&](const fx::nn::GroupNorm& m) { return fx::sum(m(x) * x); }, gn);
//
// y = act((x - mean) / sqrt(var + eps) * scale[c] + bias[c]), mean and biased variance of each
// sample's group. The same in training and at test time: no running statistics. groups must
// divide channels, and the input must be (N, C, ...) with the layer's C (an fx::Error names the
// layer and the shapes otherwise). Composed from public ops (reshape, mean, rsqrt) rather than a
// fused kernel of its own, so every derivative order comes from their rules.
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

namespace detail {
// x (N, C, ...) normalised over each sample's groups of C / groups channels (and all spatial
// positions); then a per-channel affine map when scale is defined. `layer` names the caller.
inline Tensor group_normalise(const Tensor& x, int64_t groups, int64_t channels, double eps,
                              const Tensor& scale, const Tensor& bias, const char* layer) {
  FX_CHECK(x.defined() && x.ndim() >= 2 && x.shape()[1] == channels, "fx::nn::", layer, "(",
           channels, "): input ", x.defined() ? x.shape().to_string() : "undefined", " is not (N, ",
           channels, ", ...)");
  const int64_t n = x.shape()[0];
  Tensor xg = reshape(x, {n, groups, -1});
  FX_CHECK(xg.shape()[2] > 0, "fx::nn::", layer, ": input ", x.shape(), " is empty");
  Tensor d = xg - mean(xg, -1, true);
  Tensor y = reshape(d * rsqrt(mean(square(d), -1, true) + eps), {n, channels, -1});
  if (scale.defined()) y = y * reshape(scale, {channels, 1}) + reshape(bias, {channels, 1});
  return reshape(y, x.shape());
}
}  // namespace detail

struct GroupNorm {
  Tensor scale, bias;  // (C,), or undefined without affine
  Activation act = identity;
  int64_t channels = 0, groups = 1;
  double eps = 1e-5;
  FX_FIELDS(scale, bias)

  GroupNorm() = default;
  GroupNorm(int64_t channels, int64_t groups, Activation act = identity, bool affine = true,
            double eps = 1e-5, DType dtype = f32)
      : act(act), channels(channels), groups(groups), eps(eps) {
    FX_CHECK(groups > 0 && channels > 0 && channels % groups == 0, "fx::nn::GroupNorm: ", groups,
             " groups do not divide ", channels, " channels");
    if (affine) scale = ones({channels}, dtype), bias = zeros({channels}, dtype);
  }

  Tensor operator()(const Tensor& x) const {
    return act(detail::group_normalise(x, groups, channels, eps, scale, bias, "GroupNorm"));
  }
};

}  // namespace fx::nn
