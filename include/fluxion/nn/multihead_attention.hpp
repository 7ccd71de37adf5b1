// MultiHeadAttention: PyTorch's nn::MultiheadAttention with batch_first, returning the output and
// the attention weights.
//
//   auto mha = fx::nn::MultiHeadAttention(16, 4);            // embed 16, 4 heads of 4
//   fx::Tensor x = fx::randn({2, 5, 16});                     // (N, L, E)
//   auto [y, w] = mha(x, x, x);                               // y (2, 5, 16), w (2, 5, 5)
//   auto [yc, wc] = mha(x, x, x, {.causal = true});           // no attending to later positions
//   fx::Tensor pad = fx::zeros({2, 5}, fx::boolean);          // true: a padded key to ignore
//   auto [yp, wp] = mha(x, x, x, {.key_padding_mask = pad, .average_weights = false});
//   auto cross = fx::nn::MultiHeadAttention(16, 4, {.kdim = 6, .vdim = 3, .dropout = 0.1});
//   fx::Tensor k = fx::randn({2, 7, 6}), v = fx::randn({2, 7, 3});
//   auto [yx, wx] = cross(x, k, v);                           // yx (2, 5, 16), wx (2, 5, 7)
//
// The queries (N, L, E), keys (N, S, kdim) and values (N, S, vdim) are projected by
// in_proj_weight's three blocks (q, k, v) when kdim = vdim = E, else by q_proj_weight (E, E),
// k_proj_weight (E, kdim) and v_proj_weight (E, vdim), and in_proj_bias, split into heads, attended with fx::nn::dot_product_attention
// and projected by out_proj_weight / out_proj_bias, with PyTorch's parameter names and layout so
// its weights copy over. Masks follow PyTorch: a boolean attn_mask (L, S) or (N * heads, L, S) and
// key_padding_mask (N, S) are true where attending is NOT allowed; floating ones are added to the
// scores. causal excludes later keys by itself. The weights come back averaged over the heads
// (N, L, S), or per head (N, heads, L, S). Dropout of the weights applies while the layer trains
// (fx::nn::Mode) and `dropout` > 0 (off by default). Bad shapes raise fx::Error naming the layer and the shapes.
#pragma once
#include <cstdint>
#include <utility>

#include "fluxion/core/fields.hpp"
#include "fluxion/nn/attention.hpp"
#include "fluxion/nn/mode.hpp"

namespace fx::nn {

struct AttentionMasks {
  Tensor attn_mask;         // (L, S) or (N * heads, L, S): true or added = excluded / shifted
  Tensor key_padding_mask;  // (N, S): true or added
  bool causal = false;
  bool average_weights = true;  // weights (N, L, S) rather than (N, heads, L, S)
};

struct MultiHeadAttentionOptions {
  int64_t kdim = 0;  // the keys' width; 0: embed_dim
  int64_t vdim = 0;  // the values' width; 0: embed_dim
  double dropout = 0;
  bool bias = true;
  DType dtype = f32;
  Generator* gen = nullptr;  // for the initial weights; null: fx::default_generator()
};

struct MultiHeadAttention {
  Tensor in_proj_weight;   // (3 E, E): q, k, v; undefined unless kdim = vdim = E
  Tensor q_proj_weight;    // (E, E), only when kdim or vdim differs from E
  Tensor k_proj_weight;    // (E, kdim), likewise
  Tensor v_proj_weight;    // (E, vdim), likewise
  Tensor in_proj_bias;     // (3 E,), or undefined
  Tensor out_proj_weight;  // (E, E)
  Tensor out_proj_bias;    // (E,), or undefined
  int64_t num_heads = 1;
  double dropout = 0;
  Mode mode = Mode::automatic;  // dropout applies only in training (fluxion/nn/mode.hpp)
  FX_FIELDS(in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias,
            out_proj_weight, out_proj_bias, mode)

  MultiHeadAttention() = default;  // an empty slot; not callable
  // The projections start glorot_uniform, out_proj_weight U(-1/sqrt(E), 1/sqrt(E)), biases
  // zero, as in PyTorch.
  MultiHeadAttention(int64_t embed_dim, int64_t num_heads, const MultiHeadAttentionOptions& o = {});

  // (output (N, L, E), weights (N, L, S) or (N, heads, L, S))
  std::pair<Tensor, Tensor> operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                       const AttentionMasks& masks = {}) const;

  int64_t embed_dim() const { return out_proj_weight.size(0); }
  int64_t kdim() const { return in_proj_weight.defined() ? embed_dim() : k_proj_weight.size(1); }
  int64_t vdim() const { return in_proj_weight.defined() ? embed_dim() : v_proj_weight.size(1); }
};

}  // namespace fx::nn
