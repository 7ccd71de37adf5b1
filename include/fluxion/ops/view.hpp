// Shape and layout ops. Most are views that share storage with their input.
//
//   fx::Tensor x = fx::randn({8, 12}), bias = fx::randn({12});
//   auto v = x.reshape({4, -1});           // -1 is inferred: (4, 24)
//   auto t = fx::transpose(x, 0, 1);       // strided view
//   auto s = fx::slice(x, 1, 2, 10, 2);    // x[:, 2:10:2]
//   auto b = fx::expand(bias, {8, 12});    // stride-0 view
//   auto c = fx::concat({x, b}, 0);        // (16, 12)
#pragma once
#include <cstdint>
#include <vector>

#include "fluxion/core/tensor.hpp"

namespace fx {

Tensor reshape(const Tensor& x, const Shape& shape);
Tensor reshape(const Tensor& x, std::initializer_list<int64_t> dims);  // one dim may be -1
Tensor flatten(const Tensor& x, int64_t start_axis = 1);               // (N, ...) -> (N, prod)
Tensor permute(const Tensor& x, std::initializer_list<int64_t> axes);
Tensor permute(const Tensor& x, const Shape& axes);
Tensor transpose(const Tensor& x, int64_t a = -2, int64_t b = -1);
Tensor squeeze(const Tensor& x, int64_t axis);
Tensor unsqueeze(const Tensor& x, int64_t axis);
// x[..., start:stop:step, ...] along `axis`; negative start/stop count from the end.
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step = 1);
// base with base[..., start:stop:step, ...] = value (broadcast), as a new tensor; differentiable in
// both. The in-place form is fx::Tensor::slice_assign (fluxion/ops/inplace.hpp).
Tensor slice_set(const Tensor& base, int64_t axis, int64_t start, int64_t stop, int64_t step,
                 const Tensor& value);
// x[..., index, ...] along `axis` (drops that axis).
Tensor select(const Tensor& x, int64_t axis, int64_t index);
Tensor expand(const Tensor& x, const Shape& shape);
// A contiguous tensor equal to x (x itself when already contiguous).
Tensor contiguous(const Tensor& x);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis = 0);
Tensor stack(const std::vector<Tensor>& xs, int64_t axis = 0);

// The shape both a and b broadcast to; names `op` when they cannot.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace fx
