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
// layer and the shapes otherwise). On the CPU a fused kernel of its own computes it (oneDNN 2.6 has
// no group normalisation), with a fused backward when one reverse-mode gradient records it;
// forward mode and second order use the same function composed from public ops.
#pragma once
#include <cstdint>
#include <tuple>

#include "fluxion/ad/custom.hpp"
#include "fluxion/ad/tape.hpp"
#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/nn/activations.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/primitive.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

namespace detail {
// The fused CPU kernels (src/nn/group_norm.cpp): x (N, C, ...) contiguous f32/f64, scale and bias
// (C,) of x's dtype or undefined. Forward returns (y, mean, rstd), the statistics (N * groups,);
// backward returns (dx, dscale, dbias), the last two undefined without scale.
std::tuple<Tensor, Tensor, Tensor> group_norm_forward(const Tensor& x, const Tensor& scale,
                                                      const Tensor& bias, int64_t groups,
                                                      double eps);
std::tuple<Tensor, Tensor, Tensor> group_norm_backward(const Tensor& x, const Tensor& scale,
                                                       const Tensor& mean, const Tensor& rstd,
                                                       const Tensor& dy, int64_t groups);

// The same function composed from public ops: what forward mode and higher orders differentiate.
inline Tensor group_normalise_composed(const Tensor& x, int64_t groups, int64_t channels,
                                       double eps, const Tensor& scale, const Tensor& bias) {
  const int64_t n = x.shape()[0];
  Tensor xg = reshape(x, {n, groups, -1});
  Tensor d = xg - mean(xg, -1, true);
  Tensor y = reshape(d * rsqrt(mean(square(d), -1, true) + eps), {n, channels, -1});
  if (scale.defined()) y = y * reshape(scale, {channels, 1}) + reshape(bias, {channels, 1});
  return reshape(y, x.shape());
}

// Whether the fused kernels apply: CPU tensors of one floating dtype, and at most one reverse
// tape recording (its pullback is a kernel, not ops, so it is not differentiated again; forward
// mode and second order take the composed form).
inline bool group_norm_fusable(const Tensor& x, const Tensor& scale) {
  if (x.device() != Device::cpu || (x.dtype() != f32 && x.dtype() != f64)) return false;
  if (scale.defined() && (scale.dtype() != x.dtype() || scale.device() != Device::cpu))
    return false;
  // Under fx::vmap or fx::trace a value holds no data for a kernel to read: ops only.
  if (fx::detail::intercepted()) return false;
  const int tapes = ad::num_active_tapes();
  return tapes == 0 || (tapes == 1 && !ad::active_tape(0).forward);
}

// x (N, C, ...) normalised over each sample's groups of C / groups channels (and all spatial
// positions); then a per-channel affine map when scale is defined. `layer` names the caller.
inline Tensor group_normalise(const Tensor& x, int64_t groups, int64_t channels, double eps,
                              const Tensor& scale, const Tensor& bias, const char* layer) {
  FX_CHECK(x.defined() && x.ndim() >= 2 && x.shape()[1] == channels, "fx::nn::", layer, "(",
           channels, "): input ", x.defined() ? x.shape().to_string() : "undefined", " is not (N, ",
           channels, ", ...)");
  FX_CHECK(x.numel() > 0, "fx::nn::", layer, ": input ", x.shape(), " is empty");
  if (!group_norm_fusable(x, scale))
    return group_normalise_composed(x, groups, channels, eps, scale, bias);
  if (ad::num_active_tapes() == 0)
    return std::get<0>(group_norm_forward(x, scale, bias, groups, eps));
  // One reverse tape: one node whose pullback is the fused backward kernel.
  const Tensor w = scale.defined() ? scale : ones({channels}, x.dtype());
  const Tensor b = scale.defined() ? bias : zeros({channels}, x.dtype());
  const bool affine = scale.defined();
  auto rule = custom_rule(
      layer,
      [groups, eps](const Tensor& x, const Tensor& w, const Tensor& b) {
        return group_norm_forward(x, w, b, groups, eps);
      },
      [groups, affine](const Tensor& x, const Tensor& w, const Tensor&, const Tensor&,
                       const Tensor& mean, const Tensor& rstd, const Tensor& dy) {
        auto [dx, dw, db] = group_norm_backward(x, w, mean, rstd, dy, groups);
        if (!affine) dw = Tensor(), db = Tensor();
        return std::tuple(dx, dw, db);
      });
  return rule(x, w, b);
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
