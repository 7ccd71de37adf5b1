// Upsample (nearest or bilinear, integer scale factors) and PixelShuffle over the spatial axes
// of an (N, C, ...) input. Each has a fused CPU kernel for the first-order step and a composed
// form (views, expand, index_select) that forward mode and higher orders differentiate.
//
//   fx::Tensor x = fx::randn({2, 3, 8, 8});
//   fx::Tensor a = fx::nn::Upsample({2, 2})(x);                                    // (2, 3, 16, 16)
//   fx::Tensor b = fx::nn::Upsample({2, 2}, fx::nn::UpsampleMode::bilinear)(x);    // (2, 3, 16, 16)
//   fx::Tensor c = fx::nn::PixelShuffle(2)(fx::randn({2, 12, 8, 8}));              // (2, 3, 16, 16)
//
// Nearest copies each input element to its s_1 x ... x s_k block of the output. On the CPU in
// f32/f64 under at most one reverse tape that is one kernel over every axis at once, its pullback
// the block sum (src/nn/upsample_kernels.cpp); elsewhere an expand per axis.
// Bilinear (linear on 1-d, trilinear on 3-d inputs: one axis at a time) follows PyTorch's
// align_corners = false: output o along an axis samples the input at (o + 0.5) / scale - 0.5,
// clamped at 0, interpolating between its two neighbours (the last one repeated at the edge).
// On the CPU in f32/f64 under at most one reverse tape each axis is one fused kernel (one node,
// its pullback the transposed kernel: src/nn/upsample_kernels.cpp); forward mode and higher
// orders differentiate the composed form.
// PixelShuffle(r) maps (N, C r^2, H, W) to (N, C, H r, W r) as PyTorch's pixel_shuffle (a copy
// kernel on the CPU, composed from reshape and permute for forward mode and higher orders).
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "fluxion/ad/custom.hpp"
#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/nn/groupnorm.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/index.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

namespace detail {
// Linear interpolation along `axis` by an integer scale, f32/f64 CPU (upsample_kernels.cpp), and
// its transpose: the cotangent of y back to x's shape.
Tensor upsample_linear_axis_forward(const Tensor& x, int64_t axis, int64_t scale);
Tensor upsample_linear_axis_backward(const Tensor& dy, int64_t axis, int64_t scale,
                                     const Shape& x_shape);
// PixelShuffle(r) of a contiguous f32/f64 CPU (N, C r^2, H, W) tensor, or with `inverse` its
// transpose (N, C, H r, W r) -> (N, C r^2, H, W).
Tensor pixel_shuffle_kernel(const Tensor& x, int64_t r, bool inverse);
// Nearest upsampling of an f32/f64 CPU (N, C, ...) tensor over all its spatial axes at once, and
// its transpose (each input element's gradient is the sum of its block of dy).
Tensor upsample_nearest_forward(const Tensor& x, const std::vector<int64_t>& scale);
Tensor upsample_nearest_backward(const Tensor& dy, const std::vector<int64_t>& scale,
                                 const Shape& x_shape);
}  // namespace detail

enum class UpsampleMode { nearest, bilinear };

struct Upsample {
  std::vector<int64_t> scale;  // per spatial axis
  UpsampleMode mode = UpsampleMode::nearest;
  FX_FIELDS()  // no parameters: the hyperparameters are not walked
  Upsample() = default;
  explicit Upsample(std::vector<int64_t> scale, UpsampleMode mode = UpsampleMode::nearest)
      : scale(std::move(scale)), mode(mode) {}

  Tensor operator()(const Tensor& x) const {
    FX_CHECK(x.defined() && x.ndim() == int64_t(scale.size()) + 2 && x.ndim() <= 5,
             "fx::nn::Upsample: input ", x.defined() ? x.shape().to_string() : "undefined",
             " must be (N, C, ...) with ", scale.size(), " spatial axes (one per scale factor)");
    for (int64_t s : scale)
      FX_CHECK(s >= 1, "fx::nn::Upsample: scale factors must be positive, got ", s);
    if (mode == UpsampleMode::nearest && x.numel() > 0 && detail::group_norm_fusable(x, Tensor()))
      return nearest_fused(x);
    Tensor y = x;
    for (size_t a = 0; a < scale.size(); ++a)
      y = mode == UpsampleMode::nearest ? nearest_axis(y, 2 + int64_t(a), scale[a])
                                        : linear_axis(y, 2 + int64_t(a), scale[a]);
    return y;
  }

 private:
  // CPU f32/f64 under at most one reverse tape: one kernel for every axis, its pullback the
  // block-summing transpose (forward mode and higher orders differentiate nearest_axis).
  Tensor nearest_fused(const Tensor& x) const {
    if (ad::num_active_tapes() == 0) return detail::upsample_nearest_forward(x, scale);
    auto rule = custom_rule(
        "fx::nn::Upsample",
        [s = scale](const Tensor& x) { return detail::upsample_nearest_forward(x, s); },
        [s = scale](const Tensor& x, const Tensor&, const Tensor& dy) {
          return detail::upsample_nearest_backward(dy, s, x.shape());
        });
    return rule(x);
  }
  // Each element repeated s times along axis: a size-s axis after it, expanded, then merged.
  static Tensor nearest_axis(const Tensor& x, int64_t axis, int64_t s) {
    if (s == 1) return x;
    Tensor u = unsqueeze(x, axis + 1);
    Shape big = u.shape();
    big[axis + 1] = s;
    Shape merged = x.shape();
    merged[axis] *= s;
    return reshape(contiguous(expand(u, big)), merged);
  }
  static Tensor linear_axis(const Tensor& x, int64_t axis, int64_t s) {
    if (s == 1) return x;
    // group_norm_fusable: CPU f32/f64 and at most one reverse tape, the fused kernels' condition.
    if (x.numel() > 0 && detail::group_norm_fusable(x, Tensor())) {
      if (ad::num_active_tapes() == 0) return detail::upsample_linear_axis_forward(x, axis, s);
      auto rule = custom_rule(
          "fx::nn::Upsample",
          [axis, s](const Tensor& x) { return detail::upsample_linear_axis_forward(x, axis, s); },
          [axis, s](const Tensor& x, const Tensor&, const Tensor& dy) {
            return detail::upsample_linear_axis_backward(dy, axis, s, x.shape());
          });
      return rule(x);
    }
    return linear_axis_composed(x, axis, s);
  }
  // The same from views and index_select: what forward mode and higher orders differentiate.
  static Tensor linear_axis_composed(const Tensor& x, int64_t axis, int64_t s) {
    const int64_t in = x.shape()[axis], out = in * s;
    const size_t count = static_cast<size_t>(out);
    std::vector<double> i0(count), i1(count), w1(count);
    for (int64_t o = 0; o < out; ++o) {
      const double src = std::max((double(o) + 0.5) / double(s) - 0.5, 0.0);
      const int64_t lo = std::min(int64_t(std::floor(src)), in - 1);
      i0[size_t(o)] = double(lo);
      i1[size_t(o)] = double(std::min(lo + 1, in - 1));
      w1[size_t(o)] = src - double(lo);
    }
    Shape ws(std::vector<int64_t>(size_t(x.ndim()), 1));
    ws[axis] = out;
    const Tensor lam = astype(reshape(from_vector(w1, {out}), ws), x.dtype());
    const Tensor a = index_select(x, axis, astype(from_vector(i0, {out}), i64));
    const Tensor b = index_select(x, axis, astype(from_vector(i1, {out}), i64));
    return a + (b - a) * lam;
  }
};

struct PixelShuffle {
  int64_t r = 1;
  FX_FIELDS()  // no parameters: the hyperparameters are not walked
  PixelShuffle() = default;
  explicit PixelShuffle(int64_t r) : r(r) {}
  Tensor operator()(const Tensor& x) const {
    FX_CHECK(r >= 1, "fx::nn::PixelShuffle: the factor must be positive, got ", r);
    FX_CHECK(x.defined() && x.ndim() == 4 && x.shape()[1] % (r * r) == 0,
             "fx::nn::PixelShuffle: input ", x.defined() ? x.shape().to_string() : "undefined",
             " must be (N, C r^2, H, W) with r = ", r);
    // CPU f32/f64 under at most one reverse tape: one copy kernel, its pullback the inverse one.
    if (x.numel() > 0 && detail::group_norm_fusable(x, Tensor())) {
      if (ad::num_active_tapes() == 0) return detail::pixel_shuffle_kernel(x, r, false);
      auto rule = custom_rule(
          "fx::nn::PixelShuffle",
          [r = r](const Tensor& x) { return detail::pixel_shuffle_kernel(x, r, false); },
          [r = r](const Tensor&, const Tensor&, const Tensor& dy) {
            return detail::pixel_shuffle_kernel(dy, r, true);
          });
      return rule(x);
    }
    const int64_t n = x.shape()[0], c = x.shape()[1] / (r * r), h = x.shape()[2], w = x.shape()[3];
    // (N, C, r, r, H, W) -> (N, C, H, r, W, r): y[n, c, h r + i, w r + j] = x[n, c r^2 + i r + j, h, w].
    return reshape(permute(reshape(x, {n, c, r, r, h, w}), {0, 1, 4, 2, 5, 3}),
                   {n, c, h * r, w * r});
  }
};

}  // namespace fx::nn
