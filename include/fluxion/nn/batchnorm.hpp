// BatchNorm: normalises each channel (axis 1 of (N, C, ...)) over the batch and spatial axes,
// keeping running statistics for test time (PyTorch's BatchNorm1d/2d/3d, Flux's BatchNorm).
//
//   auto bn = fx::nn::BatchNorm(16);                  // scale (16,) = 1, bias (16,) = 0
//   fx::Tensor x = fx::randn({8, 16, 5, 5});
//   auto g = fx::gradient([&](const fx::nn::BatchNorm& m) { return fx::sum(m(x)); }, bn);
//   // inside the gradient: batch statistics, and running_mean/running_var were updated
//   fx::Tensor y = bn(x);                             // outside: the running statistics
//   auto no_affine = fx::nn::BatchNorm(16, fx::identity, {.momentum = 0.01, .affine = false});
//
// Training (fx::nn::is_training: inside a reverse-mode gradient unless testmode/trainmode says
// otherwise): y = act((x - mean) / sqrt(var + eps) * scale + bias), with the mean and the biased
// variance of the batch, and the running statistics updated in place (their storage is shared
// by every copy of the layer, as the one inside fx::gradient):
//   running_mean = (1 - momentum) running_mean + momentum mean
//   running_var  = (1 - momentum) running_var  + momentum var * n / (n - 1)   (n values a channel)
// Testing: the running statistics replace the batch's (with track_stats = false there are none
// and the batch's are always used). These are PyTorch's formulas; Flux's are the same.
// running_mean and running_var are FX_STATE: saved and loaded, never trained. The input must
// have at least 2 axes and the layer's channel count on axis 1 (an fx::Error names the layer
// and the shapes otherwise).
#pragma once
#include <cstdint>
#include <memory>
#include <tuple>
#include <utility>

#include "fluxion/ad/custom.hpp"
#include "fluxion/ad/tape.hpp"
#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/nn/activations.hpp"
#include "fluxion/nn/groupnorm.hpp"
#include "fluxion/nn/mode.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

namespace detail {
// The fused CPU kernels (src/nn/norm_kernels.cpp) of training-mode batch normalisation: x (N, C,
// ...) f32/f64, scale and bias (C,) or undefined. Forward returns (y, mean, rstd, biased var);
// backward returns (dx, dscale, dbias), the last two undefined without scale.
std::tuple<Tensor, Tensor, Tensor, Tensor> batch_norm_forward(const Tensor& x, const Tensor& scale,
                                                              const Tensor& bias, double eps);
std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(const Tensor& x, const Tensor& scale,
                                                       const Tensor& mean, const Tensor& rstd,
                                                       const Tensor& dy);
}  // namespace detail

struct BatchNormOptions {
  double eps = 1e-5;
  double momentum = 0.1;
  bool affine = true;       // learn scale and bias (else they stay undefined)
  bool track_stats = true;  // keep running statistics (else test time uses the batch's too)
  DType dtype = f32;
};

struct BatchNorm {
  Tensor scale, bias;                // (C,), or undefined without affine
  Tensor running_mean, running_var;  // (C,), or undefined without track_stats
  Activation act = identity;
  double eps = 1e-5, momentum = 0.1;
  Mode mode = Mode::automatic;
  FX_FIELDS(scale, bias, mode)
  FX_STATE(running_mean, running_var)

  BatchNorm() = default;
  explicit BatchNorm(int64_t channels, Activation act = identity, BatchNormOptions o = {})
      : scale(o.affine ? ones({channels}, o.dtype) : Tensor()),
        bias(o.affine ? zeros({channels}, o.dtype) : Tensor()),
        running_mean(o.track_stats ? zeros({channels}, o.dtype) : Tensor()),
        running_var(o.track_stats ? ones({channels}, o.dtype) : Tensor()),
        act(act),
        eps(o.eps),
        momentum(o.momentum),
        channels_(channels) {}

  int64_t channels() const { return channels_; }

  Tensor operator()(const Tensor& x) const {
    FX_CHECK(x.defined() && x.ndim() >= 2 && x.shape()[1] == channels_, "fx::nn::BatchNorm(",
             channels_, "): input ", x.defined() ? x.shape().to_string() : "undefined",
             " is not (N, ", channels_, ", ...)");
    const int64_t n = x.shape()[0], c = channels_, s = x.numel() / (n * c);
    Tensor x3 = reshape(x, {n, c, s});  // one layout for 1-D, 2-D and 3-D batch norm
    Tensor mean_, var_;
    const bool use_batch = is_training(mode) || !running_mean.defined();
    if (use_batch && detail::group_norm_fusable(x, scale)) return act(fused_batch(x, n * s));
    if (use_batch) {
      FX_CHECK(n * s > 1, "fx::nn::BatchNorm(", channels_, "): input ", x.shape(),
               " has one value per channel, so its batch variance is undefined");
      mean_ = mean(x3, {0, 2}, true);
      var_ = mean(square(x3 - mean_), {0, 2}, true);
      if (is_training(mode) && running_mean.defined()) update_running(mean_, var_, n * s);
    } else {
      mean_ = reshape(astype(running_mean, x.dtype()), {1, c, 1});
      var_ = reshape(astype(running_var, x.dtype()), {1, c, 1});
    }
    Tensor y = (x3 - mean_) * rsqrt(var_ + eps);
    if (scale.defined()) y = y * reshape(scale, {1, c, 1}) + reshape(bias, {1, c, 1});
    return act(reshape(y, x.shape()));
  }

 private:
  int64_t channels_ = 0;

  // Batch statistics through the fused kernels: directly outside any recording, else as one
  // custom-rule node whose pullback is the fused backward. The forward hands its mean and
  // variance out through `stats` for the running update (they are untracked there).
  Tensor fused_batch(const Tensor& x, int64_t count) const {
    FX_CHECK(count > 1, "fx::nn::BatchNorm(", channels_, "): input ", x.shape(),
             " has one value per channel, so its batch variance is undefined");
    Tensor y, batch_mean, batch_var;
    if (ad::num_active_tapes() == 0) {
      Tensor rstd;
      std::tie(y, batch_mean, rstd, batch_var) = detail::batch_norm_forward(x, scale, bias, eps);
    } else {
      const bool affine = scale.defined();
      const Tensor w = affine ? scale : ones({channels_}, x.dtype());
      const Tensor b = affine ? bias : zeros({channels_}, x.dtype());
      auto stats = std::make_shared<std::pair<Tensor, Tensor>>();
      auto rule = custom_rule(
          "fx::nn::BatchNorm",
          [eps = eps, stats](const Tensor& x, const Tensor& w, const Tensor& b) {
            auto [y, m, r, v] = detail::batch_norm_forward(x, w, b, eps);
            *stats = {m, v};
            return std::tuple(y, m, r);
          },
          [affine](const Tensor& x, const Tensor& w, const Tensor&, const Tensor&, const Tensor& m,
                   const Tensor& r, const Tensor& dy) {
            auto [dx, dw, db] = detail::batch_norm_backward(x, w, m, r, dy);
            if (!affine) dw = Tensor(), db = Tensor();
            return std::tuple(dx, dw, db);
          });
      y = rule(x, w, b);
      batch_mean = stats->first, batch_var = stats->second;
    }
    if (is_training(mode) && running_mean.defined()) update_running(batch_mean, batch_var, count);
    return y;
  }

  // Writes the running statistics' shared storage; the batch statistics are cut from the
  // derivative (the update is bookkeeping, not part of the function being differentiated).
  void update_running(const Tensor& mean3, const Tensor& var3, int64_t count) const {
    const int64_t c = channels_;
    Tensor m = reshape(stop_gradient(mean3), {c}), v = reshape(stop_gradient(var3), {c});
    const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
    Tensor rm = running_mean, rv = running_var;  // handles onto the same storage
    rm.copy_(astype(rm * (1 - momentum) + astype(m, rm.dtype()) * momentum, rm.dtype()));
    rv.copy_(astype(rv * (1 - momentum) + astype(v, rv.dtype()) * (momentum * unbias), rv.dtype()));
  }
};

}  // namespace fx::nn
