// Indexing with integer tensors.
//
//   auto rows = fx::index_select(table, 0, ids);       // ids: i64 (K,) -> (K, F)
//   auto picked = fx::gather(logp, 1, labels_2d);      // out[i][j] = x[i][idx[i][j]]
//   auto acc = fx::scatter_add(fx::zeros({4, 3}), 0, idx, src);
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
