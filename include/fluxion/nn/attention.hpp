// dot_product_attention: softmax(q k^T * scale + mask) v over the last two axes, returning the
// output and the attention weights (NNlib's dot_product_attention, PyTorch's
// scaled_dot_product_attention with the weights as well).
//
//   fx::Tensor q = fx::randn({2, 5, 8}), k = fx::randn({2, 7, 8}), v = fx::randn({2, 7, 4});
//   auto [y, w] = fx::nn::dot_product_attention(q, k, v);   // y (2, 5, 4), w (2, 5, 7)
//   auto [yc, wc] = fx::nn::dot_product_attention(q, k, v, {.causal = true});
//   fx::Tensor keep = fx::ones({5, 7}, fx::boolean);         // true: may attend
//   auto [ym, wm] = fx::nn::dot_product_attention(q, k, v, {.mask = keep});
//
// q is (..., L, E), k (..., S, E), v (..., S, Ev); the leading (batch, head) axes broadcast as in
// fx::matmul. A boolean mask broadcastable to (..., L, S) keeps the pairs where it is true (as
// PyTorch's scaled_dot_product_attention); a floating one is added to the scores (use -inf to
// exclude). causal keeps key j for query i only when j <= i. A query with every key excluded has
// NaN weights, as in PyTorch. Dropout of the weights is off unless `dropout` > 0; the weights
// returned are the ones applied (after dropout). Composed from public ops: every derivative order
// comes with it. Bad shapes raise fx::Error naming the function and the shapes.
#pragma once
#include <utility>

#include "fluxion/core/tensor.hpp"
#include "fluxion/ops/create.hpp"

namespace fx::nn {

struct AttentionOptions {
  Tensor mask;               // boolean (true = attend) or additive floating, or undefined
  bool causal = false;       // key j only for queries i >= j
  double dropout = 0;        // on the weights, in [0, 1)
  double scale = 0;          // 0: 1 / sqrt(E)
  Generator* gen = nullptr;  // for dropout; null: fx::default_generator()
};

// (output (..., L, Ev), weights (..., L, S))
std::pair<Tensor, Tensor> dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                                const AttentionOptions& o = {});

}  // namespace fx::nn
