// Indexing with integer tensors.
//
//   fx::Tensor table = fx::randn({100, 16}), ids = fx::tensor({3, 7, -1}, fx::i64);
//   auto rows = fx::index_select(table, 0, ids);       // ids: i64 (K,) -> (K, F); -1: row 99
//   fx::Tensor logp = fx::logsoftmax(fx::randn({8, 10}), 1);
//   fx::Tensor labels_2d = fx::zeros({8, 1}, fx::i64);
//   auto picked = fx::gather(logp, 1, labels_2d);      // out[i][j] = x[i][idx[i][j]]: (8, 1)
//   fx::Tensor idx = fx::tensor({0, 2, 0, 3, 3, 1}, fx::i64).reshape({2, 3});
//   fx::Tensor src = fx::ones({2, 3});                 // the same shape as idx
//   auto acc = fx::scatter_add(fx::zeros({4, 3}), 0, idx, src);   // out[idx[i][j]][j] += src[i][j]
//
// Indices are i64 or i32, and negative ones count from the end as in Python (-1 is the last
// element of the axis), in every backend and in the gradients. Anything outside [-n, n) on an
// axis of size n throws fx::Error naming the op, the index, the axis size and the shape.
#pragma once
#include "fluxion/core/tensor.hpp"

namespace fx {

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);
// base + (rows of src added at `index` along axis): the adjoint of index_select.
Tensor index_add(const Tensor& base, int64_t axis, const Tensor& index, const Tensor& src);
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);
// base with src added at positions given by index (same shape as src): the adjoint of gather.
Tensor scatter_add(const Tensor& base, int64_t axis, const Tensor& index, const Tensor& src);

}  // namespace fx
