// Embedding: a lookup table mapping integer indices to rows of a trainable matrix (PyTorch's
// Embedding, Flux's Embedding, with 0-based indices).
//
//   auto emb = fx::nn::Embedding(1000, 64);                   // weight (1000, 64) ~ N(0, 1)
//   fx::Tensor tokens = fx::zeros({8, 20}, fx::i64);          // (batch, time) indices
//   fx::Tensor h = emb(tokens);                               // (8, 20, 64)
//   auto padded = fx::nn::Embedding(1000, 64, /*padding_index=*/0);   // row 0 is zero, untrained
//
// Indices of any shape (an integer dtype) give that shape followed by the embedding size. With a
// padding_index, its row starts at zero, looks up as zero and gets no gradient (PyTorch's
// padding_idx; a table passed in has that row zeroed in place). Indices outside [0, vocabulary)
// or of a non-integer dtype raise fx::Error naming the layer, the index shape and the table's
// shape.
#pragma once
#include <cstdint>

#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/index.hpp"
#include "fluxion/ops/primitive.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

namespace detail {
// Checks that idx holds integers in [0, weight rows); `layer` names the caller.
inline void check_indices(const Tensor& idx, const Tensor& weight, const char* layer) {
  FX_CHECK(idx.defined() && (idx.dtype() == i64 || idx.dtype() == i32), "fx::nn::", layer,
           ": indices ", idx.defined() ? idx.shape().to_string() : "undefined",
           " must be integers to index the table ", weight.shape());
  // Under fx::vmap or fx::trace the indices hold no values to read here: index_select checks
  // them when the batched or traced computation runs.
  if (idx.numel() == 0 || fx::detail::intercepted()) return;
  const int64_t lo = min(idx).item<int64_t>(), hi = max(idx).item<int64_t>();
  FX_CHECK(lo >= 0 && hi < weight.shape()[0], "fx::nn::", layer, ": indices ", idx.shape(),
           " hold values in [", lo, ", ", hi, "], outside the table ", weight.shape());
}
}  // namespace detail

struct Embedding {
  Tensor weight;               // (vocabulary, size)
  int64_t padding_index = -1;  // -1: none
  FX_FIELDS(weight)

  Embedding() = default;
  Embedding(int64_t vocabulary, int64_t size, int64_t padding_index = -1, DType dtype = f32)
      : Embedding(randn({vocabulary, size}, dtype), padding_index) {}
  Embedding(int64_t vocabulary, int64_t size, int64_t padding_index, Generator& gen,
            DType dtype = f32)
      : Embedding(randn({vocabulary, size}, gen, dtype), padding_index) {}
  explicit Embedding(Tensor table, int64_t padding_index = -1)
      : weight(std::move(table)), padding_index(padding_index) {
    FX_CHECK(weight.ndim() == 2, "fx::nn::Embedding: the table ", weight.shape(),
             " is not (vocabulary, size)");
    FX_CHECK(padding_index >= -1 && padding_index < weight.shape()[0],
             "fx::nn::Embedding: "
             "padding_index ",
             padding_index, " is outside the table ", weight.shape());
    if (padding_index >= 0)
      weight.slice_assign(0, padding_index, padding_index + 1,
                          zeros({1, weight.shape()[1]}, weight.dtype()));
  }

  Tensor operator()(const Tensor& idx) const {
    detail::check_indices(idx, weight, "Embedding");
    Tensor flat = reshape(idx, {-1});
    Tensor rows = index_select(weight, 0, flat);  // (n, size)
    if (padding_index >= 0) rows = where(reshape(flat == padding_index, {-1, 1}), 0.0, rows);
    Shape out = idx.shape();
    out.push_back(weight.shape()[1]);
    return reshape(rows, out);
  }
};

}  // namespace fx::nn
