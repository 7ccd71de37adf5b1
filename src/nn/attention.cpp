// dot_product_attention and MultiHeadAttention, composed from public ops (matmul, where, softmax,
// reshapes) so that every derivative order comes from the ops' own rules.
#include "fluxion/nn/attention.hpp"

#include <cmath>
#include <limits>

#include "fluxion/core/error.hpp"
#include "fluxion/nn/activations.hpp"
#include "fluxion/nn/init.hpp"
#include "fluxion/nn/multihead_attention.hpp"
#include "fluxion/ops/device.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

std::string shape_of(const Tensor& t) {
  return t.defined() ? t.shape().to_string() : std::string("undefined");
}

// (L, S) boolean: key j is allowed for query i when j <= i (top-left aligned, as PyTorch).
Tensor causal_keep(int64_t L, int64_t S, Device device) {
  Tensor i = reshape(arange(L), {L, 1}), j = reshape(arange(S), {1, S});
  Tensor keep = le(j, i);
  return device == Device::cpu ? keep : to(keep, device);
}

}  // namespace

std::pair<Tensor, Tensor> dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                                const AttentionOptions& o) {
  FX_CHECK(q.defined() && k.defined() && v.defined() && q.ndim() >= 2 && k.ndim() >= 2 &&
               v.ndim() >= 2 && q.size(-1) == k.size(-1) && k.size(-2) == v.size(-2),
           "fx::nn::dot_product_attention: q ", shape_of(q), ", k ", shape_of(k), ", v ",
           shape_of(v), " must be (..., L, E), (..., S, E), (..., S, Ev)");
  FX_CHECK(o.dropout >= 0 && o.dropout < 1,
           "fx::nn::dot_product_attention: dropout must be in [0, 1), got ", o.dropout);
  const int64_t L = q.size(-2), S = k.size(-2);
  const double scale = o.scale != 0 ? o.scale : 1 / std::sqrt(double(q.size(-1)));
  Tensor scores = matmul(q, transpose(k)) * scale;  // (..., L, S)
  if (o.mask.defined()) {
    FX_CHECK(o.mask.ndim() >= 1 && o.mask.ndim() <= scores.ndim(),
             "fx::nn::dot_product_attention: mask ", o.mask.shape(),
             " does not broadcast to the scores ", scores.shape());
    try {
      (void)broadcast_shapes(o.mask.shape(), scores.shape(), "fx::nn::dot_product_attention");
    } catch (const Error&) {
      FX_CHECK(false, "fx::nn::dot_product_attention: mask ", o.mask.shape(),
               " does not broadcast to the scores ", scores.shape(), " of q ", q.shape(), " and k ",
               k.shape());
    }
    scores = o.mask.dtype() == boolean ? where(o.mask, scores, kNegInf)
                                       : scores + o.mask.astype(scores.dtype());
  }
  if (o.causal) scores = where(causal_keep(L, S, q.device()), scores, kNegInf);
  Tensor w = softmax(scores, -1);
  if (o.dropout > 0) {
    Generator& gen = o.gen ? *o.gen : default_generator();
    Tensor keep = lt(rand(w.shape(), gen, w.dtype()), scalar(1 - o.dropout, w.dtype()));
    w = where(keep, w * (1 / (1 - o.dropout)), 0.0);
  }
  return {matmul(w, v), w};
}

MultiHeadAttention::MultiHeadAttention(int64_t E, int64_t heads, const MultiHeadAttentionOptions& o)
    : num_heads(heads), dropout(o.dropout) {
  const int64_t kdim = o.kdim ? o.kdim : E, vdim = o.vdim ? o.vdim : E;
  const DType dtype = o.dtype;
  FX_CHECK(kdim > 0 && vdim > 0, "fx::nn::MultiHeadAttention: kdim ", kdim, " and vdim ", vdim,
           " must be positive");
  FX_CHECK(E > 0 && heads > 0 && E % heads == 0, "fx::nn::MultiHeadAttention: embed_dim ", E,
           " must be a positive multiple of num_heads ", heads);
  FX_CHECK(o.dropout >= 0 && o.dropout < 1,
           "fx::nn::MultiHeadAttention: dropout must be in [0, 1), got ", o.dropout);
  Generator& g = o.gen ? *o.gen : default_generator();
  if (kdim == E && vdim == E) {
    in_proj_weight = glorot_uniform({3 * E, E}, g, 1.0, dtype);
  } else {
    q_proj_weight = glorot_uniform({E, E}, g, 1.0, dtype);
    k_proj_weight = glorot_uniform({E, kdim}, g, 1.0, dtype);
    v_proj_weight = glorot_uniform({E, vdim}, g, 1.0, dtype);
  }
  const double a = 1 / std::sqrt(double(E));
  out_proj_weight = uniform({E, E}, -a, a, g, dtype);
  if (o.bias) {
    in_proj_bias = zeros({3 * E}, dtype);
    out_proj_bias = zeros({E}, dtype);
  }
}

std::pair<Tensor, Tensor> MultiHeadAttention::operator()(const Tensor& query, const Tensor& key,
                                                         const Tensor& value,
                                                         const AttentionMasks& m) const {
  FX_CHECK((in_proj_weight.defined() || q_proj_weight.defined()) && out_proj_weight.defined(),
           "fx::nn::MultiHeadAttention: called without weights (default-constructed)");
  const int64_t E = embed_dim(), H = num_heads, D = E / H, KD = kdim(), VD = vdim();
  FX_CHECK(query.defined() && key.defined() && value.defined() && query.ndim() == 3 &&
               key.ndim() == 3 && value.ndim() == 3 && query.size(2) == E && key.size(2) == KD &&
               value.size(2) == VD && key.size(0) == query.size(0) &&
               value.size(0) == query.size(0) && key.size(1) == value.size(1),
           "fx::nn::MultiHeadAttention: query ", shape_of(query), ", key ", shape_of(key),
           ", value ", shape_of(value), " must be (N, L, ", E, "), (N, S, ", KD, "), (N, S, ", VD,
           ") (batch first)");
  const int64_t N = query.size(0), L = query.size(1), S = key.size(1);
  auto block = [&](const Tensor& t, int64_t i) { return slice(t, 0, i * E, (i + 1) * E); };
  auto weight = [&](int64_t i) {
    if (in_proj_weight.defined()) return block(in_proj_weight, i);
    return i == 0 ? q_proj_weight : i == 1 ? k_proj_weight : v_proj_weight;
  };
  auto proj = [&](const Tensor& x, int64_t i, int64_t T) {
    Tensor b = in_proj_bias.defined() ? block(in_proj_bias, i) : Tensor();
    // (N, T, width) -> (N, H, T, D)
    return permute(reshape(linear(x, weight(i), b), {N, T, H, D}), {0, 2, 1, 3});
  };
  Tensor q = proj(query, 0, L), k = proj(key, 1, S), v = proj(value, 2, S);

  // Every mask becomes one additive (.., L, S) term: -inf where excluded.
  Tensor add;
  auto as_additive = [&](const Tensor& mask) {
    return mask.dtype() == boolean ? where(mask, kNegInf, zeros({}, q.dtype(), q.device()))
                                   : mask.astype(q.dtype());
  };
  if (m.attn_mask.defined()) {
    const Tensor& a = m.attn_mask;
    const bool ok = (a.ndim() == 2 && a.shape() == Shape{L, S}) ||
                    (a.ndim() == 3 && a.shape() == Shape{N * H, L, S});
    FX_CHECK(ok, "fx::nn::MultiHeadAttention: attn_mask ", a.shape(), " must be (", L, ", ", S,
             ") or (", N * H, ", ", L, ", ", S, ") for query ", query.shape(), " and key ",
             key.shape());
    add = as_additive(a.ndim() == 3 ? reshape(a, {N, H, L, S}) : a);
  }
  if (m.key_padding_mask.defined()) {
    const Tensor& p = m.key_padding_mask;
    FX_CHECK((p.shape() == Shape{N, S}), "fx::nn::MultiHeadAttention: key_padding_mask ", p.shape(),
             " must be (", N, ", ", S, ") for key ", key.shape());
    Tensor t = as_additive(reshape(p, {N, 1, 1, S}));
    add = add.defined() ? add + t : t;
  }
  AttentionOptions o;
  o.mask = add;
  o.causal = m.causal;
  o.dropout = is_training(mode) ? dropout : 0;
  auto [y, w] = dot_product_attention(q, k, v, o);  // (N, H, L, D), (N, H, L, S)
  Tensor out = linear(reshape(permute(y, {0, 2, 1, 3}), {N, L, E}), out_proj_weight, out_proj_bias);
  return {out, m.average_weights ? mean(w, {1}) : w};
}

}  // namespace fx::nn
