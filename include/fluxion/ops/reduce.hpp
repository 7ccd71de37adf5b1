// Reductions over chosen axes.
//
//   fx::Tensor x = fx::randn({32, 10});    // (N, F)
//   fx::sum(x);                            // all elements -> 0-d
//   fx::mean(x, {0});                      // (N, F) -> (F,)
//   fx::max(x, {-1}, /*keepdim=*/true);    // (N, F) -> (N, 1)
//   fx::argmax(x, -1);                     // (N, F) -> (N,) i64
//   fx::sum_squares(x, {-1});              // (N, F) -> (N,): sum(square(x), -1) in one pass
//   fx::all(fx::isfinite(x), {1});         // (N, F) -> (N,) bool: rows without NaN or Inf
#pragma once
#include <cstdint>
#include <initializer_list>

#include "fluxion/core/tensor.hpp"

namespace fx {

// A set of axes; empty means "all". Negative axes count from the end.
class Axes {
 public:
  Axes() = default;
  Axes(int64_t axis) : n_(1) { a_[0] = axis; }
  Axes(std::initializer_list<int64_t> axes);
  // Bit i set when axis i of an ndim-dimensional tensor is reduced; names `op` on error.
  uint64_t mask(int ndim, const char* op) const;

 private:
  int64_t a_[kMaxDims] = {};
  int n_ = 0;
};

Tensor sum(const Tensor& x, Axes axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, Axes axes = {}, bool keepdim = false);
Tensor max(const Tensor& x, Axes axes = {}, bool keepdim = false);
Tensor min(const Tensor& x, Axes axes = {}, bool keepdim = false);
Tensor logsumexp(const Tensor& x, Axes axes = {}, bool keepdim = false);
// The sum of x^2 over axes (real floating x): fx::sum(fx::square(x), axes) without the squared
// temporary, which costs a write and a read as large as x.
Tensor sum_squares(const Tensor& x, Axes axes = {}, bool keepdim = false);
// Whether any / every element over axes is true (non-zero for numbers; NaN counts as true):
// bool results, not differentiable. Over no elements any is false and all is true.
Tensor any(const Tensor& x, Axes axes = {}, bool keepdim = false);
Tensor all(const Tensor& x, Axes axes = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor argmin(const Tensor& x, int64_t axis, bool keepdim = false);
// Sums x down to `shape` (the inverse of broadcasting x from `shape`).
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace fx
