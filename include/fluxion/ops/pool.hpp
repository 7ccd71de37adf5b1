// Max and average pooling as primitives over 1, 2 or 3 spatial axes of an (N, C, ...) tensor.
//
//   fx::Tensor x = fx::randn({8, 16, 28, 28});
//   fx::Tensor m = fx::max_pool(x, {.kernel = {2}});                   // (8, 16, 14, 14)
//   fx::Tensor a = fx::avg_pool(x, {.kernel = {3}, .stride = {1}, .padding = {1}});  // (8, 16, 28, 28)
//
// The output size is floor((i + pad_lo + pad_hi - k) / stride) + 1 (PyTorch without ceil_mode).
// Max pooling's padding never wins (it counts as -inf); its gradient goes to the first maximum
// of each window, as oneDNN's and libtorch's do. Average pooling divides by the whole window
// (count_include_pad, PyTorch's default) or by the window's part inside the input. Both are
// differentiable to any order: max pooling's pullback and its transpose are one primitive
// (max_pool_backward) in two modes, average pooling's pullback is linear.
#pragma once
#include <cstdint>
#include <vector>

#include "fluxion/core/tensor.hpp"

namespace fx {

// Per spatial axis; a list of one value applies to every axis. stride defaults to the kernel,
// padding to 0; padding_hi, when given, replaces padding on the high side. Each padding must be
// below the kernel size (a window entirely in the padding has no value).
struct PoolGeometry {
  std::vector<int64_t> kernel = {};
  std::vector<int64_t> stride = {};
  std::vector<int64_t> padding = {};
  std::vector<int64_t> padding_hi = {};
  bool count_include_pad = true;  // avg_pool only
};

Tensor max_pool(const Tensor& x, const PoolGeometry& geometry);
Tensor avg_pool(const Tensor& x, const PoolGeometry& geometry);

// The adjoints, as primitives of their own (the rules above are written with them).
// max_pool_backward(x, dy): the cotangent of max_pool's input, dy sent to each window's first
// maximum. avg_pool_backward(dy, x_shape): the cotangent of avg_pool's input.
Tensor max_pool_backward(const Tensor& x, const Tensor& dy, const PoolGeometry& geometry);
Tensor avg_pool_backward(const Tensor& dy, const Shape& x_shape, const PoolGeometry& geometry);

// The pooled shape of input shape x, checking the geometry (an fx::Error naming `op`).
Shape pool_output_shape(const char* op, const Shape& x, const PoolGeometry& geometry);

}  // namespace fx
