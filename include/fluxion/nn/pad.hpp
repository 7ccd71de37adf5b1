// fx::nn::pad: padding of the spatial axes of an (N, C, ...) input, in five modes, and
// fx::nn::flatten, (N, ...) -> (N, prod), for a Chain between convolutions and Dense layers.
//
//   fx::Tensor x = fx::randn({2, 3, 4, 5});
//   fx::Tensor a = fx::nn::pad(x, {1, 1, 2, 0});                              // (2, 3, 6, 7), zeros
//   fx::Tensor b = fx::nn::pad(x, {1, 1, 2, 0}, fx::nn::PadMode::reflect);   // mirror, edge not repeated
//   fx::Tensor c = fx::nn::pad(x, {2, 2}, fx::nn::PadMode::constant, -1.0); // the last axis only
//   fx::Tensor f = fx::nn::flatten(x);                                        // (2, 60)
//
// `pads` lists (low, high) pairs for the trailing axes, the first pair for the first of them:
// {lo_H, hi_H, lo_W, hi_W} pads H and W of an (N, C, H, W) input; {lo, hi} pads only the last
// axis. Modes as PyTorch's F.pad: zeros, constant (value), reflect (x[1], x[0] | x[0..n) |
// x[n-2]), replicate (the edge repeated) and circular (wrapping around). reflect needs pads
// below the axis' size, circular at most its size. Composed from concat and index_select, so
// every mode differentiates to any order.
#pragma once
#include <cstdint>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/index.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

enum class PadMode { zeros, constant, reflect, replicate, circular };

inline Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, PadMode mode = PadMode::zeros,
                  double value = 0.0) {
  FX_CHECK(x.defined(), "fx::nn::pad: undefined input");
  const int64_t axes = int64_t(pads.size() / 2);
  FX_CHECK(pads.size() % 2 == 0 && axes >= 1 && axes <= x.ndim(), "fx::nn::pad: ", pads.size(),
           " pads for input ", x.shape(), ": give (low, high) pairs for at most ", x.ndim(),
           " trailing axes");
  Tensor y = x;
  for (int64_t k = 0; k < axes; ++k) {
    const int64_t axis = x.ndim() - axes + k, lo = pads[size_t(2 * k)],
                  hi = pads[size_t(2 * k + 1)], n = x.shape()[axis];
    FX_CHECK(lo >= 0 && hi >= 0, "fx::nn::pad: negative padding ", lo, ", ", hi, " for input ",
             x.shape());
    if (lo == 0 && hi == 0) continue;
    if (mode == PadMode::zeros || mode == PadMode::constant) {
      auto block = [&](int64_t size) {
        Shape s = y.shape();
        s[axis] = size;
        return full(s, mode == PadMode::zeros ? 0.0 : value, y.dtype(), y.device());
      };
      std::vector<Tensor> parts;
      if (lo > 0) parts.push_back(block(lo));
      parts.push_back(y);
      if (hi > 0) parts.push_back(block(hi));
      y = concat(parts, axis);
      continue;
    }
    FX_CHECK(n >= 1, "fx::nn::pad: cannot pad an empty axis of ", x.shape(), " in this mode");
    FX_CHECK(mode != PadMode::reflect || (lo < n && hi < n), "fx::nn::pad: reflect padding ", lo,
             ", ", hi, " must be below the size ", n, " of axis ", axis, " of ", x.shape());
    FX_CHECK(mode != PadMode::circular || (lo <= n && hi <= n), "fx::nn::pad: circular padding ",
             lo, ", ", hi, " must be at most the size ", n, " of axis ", axis, " of ", x.shape());
    // Output position j reads input position src(j - lo).
    std::vector<int64_t> idx(size_t(lo + n + hi));
    for (int64_t j = 0; j < lo + n + hi; ++j) {
      int64_t i = j - lo;
      if (mode == PadMode::replicate) i = i < 0 ? 0 : i >= n ? n - 1 : i;
      if (mode == PadMode::reflect) i = i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
      if (mode == PadMode::circular) i = ((i % n) + n) % n;
      idx[size_t(j)] = i;
    }
    y = index_select(y, axis, from_vector(idx));
  }
  return y;
}

// (N, ...) -> (N, prod of the rest): fx::flatten from axis 1, as a one-argument layer.
inline Tensor flatten(const Tensor& x) { return fx::flatten(x, 1); }

}  // namespace fx::nn
