// InstanceNorm: normalises each sample's channel over its spatial axes (PyTorch's
// InstanceNorm1d/2d/3d with track_running_stats = false, Flux's InstanceNorm).
//
//   auto in = fx::nn::InstanceNorm(3);                 // no affine map, as PyTorch's default
//   fx::Tensor x = fx::randn({2, 3, 16, 16});
//   fx::Tensor y = in(x);                              // each x[n, c] to mean 0, variance 1
//   auto in2 = fx::nn::InstanceNorm(3, fx::relu, /*affine=*/true);   // scale 1, bias 0 per channel
//
// GroupNorm with one channel a group: y = act((x - mean) / sqrt(var + eps) * scale + bias).
// No running statistics (PyTorch's and Flux's default): the same in training and at test time.
// The input must be (N, C, ...) with at least one spatial axis (an fx::Error names the layer
// and the shapes otherwise).
#pragma once
#include <cstdint>

#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/nn/activations.hpp"
#include "fluxion/nn/groupnorm.hpp"
#include "fluxion/ops/create.hpp"

namespace fx::nn {

struct InstanceNorm {
  Tensor scale, bias;  // (C,), or undefined without affine
  Activation act = identity;
  int64_t channels = 0;
  double eps = 1e-5;
  FX_FIELDS(scale, bias)

  InstanceNorm() = default;
  explicit InstanceNorm(int64_t channels, Activation act = identity, bool affine = false,
                        double eps = 1e-5, DType dtype = f32)
      : scale(affine ? ones({channels}, dtype) : Tensor()),
        bias(affine ? zeros({channels}, dtype) : Tensor()),
        act(act),
        channels(channels),
        eps(eps) {}

  Tensor operator()(const Tensor& x) const {
    FX_CHECK(x.defined() && x.ndim() >= 3, "fx::nn::InstanceNorm(", channels, "): input ",
             x.defined() ? x.shape().to_string() : "undefined", " is not (N, ", channels,
             ", spatial...)");
    return act(detail::group_normalise(x, channels, channels, eps, scale, bias, "InstanceNorm"));
  }
};

}  // namespace fx::nn
