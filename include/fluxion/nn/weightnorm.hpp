// WeightNorm: reparametrises a layer's weight as g * v / ||v|| (Salimans & Kingma 2016;
// PyTorch's weight_norm, Flux's WeightNorm), training the direction v and the magnitude g.
//
//   auto wn = fx::nn::WeightNorm(fx::nn::Dense(8, 4, fx::relu));   // g (4, 1), v (4, 8)
//   fx::Tensor x = fx::randn({16, 8});
//   fx::Tensor y = wn(x);                        // the Dense with weight g * v / ||v||
//   auto g = fx::gradient([&](const auto& m) { return fx::sum(m(x)); }, wn);   // g.g, g.v
//   fx::nn::Dense plain = wn.materialise();      // the wrapped layer with its weight computed
//
// The norm is over every axis of the weight but `dim` (PyTorch's default dim = 0: one norm per
// output row), so g has the weight's shape with 1 on all other axes; it starts at ||weight||,
// so the wrapped layer computes what it did. The layer must have a `weight` tensor field of at
// least 1 axis; inside WeightNorm that field stays undefined (walkers skip it) and the other
// fields (a bias) train as before. The layer is applied to a copy with the weight filled in.
#pragma once
#include <cstdint>
#include <utility>

#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

template <class L>
struct WeightNorm {
  L layer;   // its weight undefined
  Tensor g;  // the weight's shape with 1 on every axis but dim
  Tensor v;  // the weight's shape
  int64_t dim = 0;
  FX_FIELDS(layer, g, v)

  WeightNorm() = default;
  explicit WeightNorm(L wrapped, int64_t dim = 0) : layer(std::move(wrapped)), dim(dim) {
    FX_CHECK(layer.weight.defined() && layer.weight.ndim() >= 1,
             "fx::nn::WeightNorm: the "
             "wrapped layer has no weight of at least one axis");
    FX_CHECK(dim >= 0 && dim < layer.weight.ndim(), "fx::nn::WeightNorm: dim ", dim,
             " is out of range for the weight ", layer.weight.shape());
    v = layer.weight;
    g = norm_of(v);
    layer.weight = Tensor();
  }

  // ||v|| over every axis but dim, kept as 1s: sqrt of the row sums of squares.
  Tensor norm_of(const Tensor& w) const {
    const Shape& s = w.shape();
    const int d = static_cast<int>(dim);
    int64_t before = 1, after = 1;  // the axes before and after dim, each flattened into one
    for (int i = 0; i < d; ++i) before *= s[i];
    for (int i = d + 1; i < s.size(); ++i) after *= s[i];
    Tensor w3 = reshape(w, {before, s[static_cast<int>(dim)], after});
    Shape keep = s;
    for (int i = 0; i < keep.size(); ++i) keep[i] = i == dim ? s[i] : 1;
    return reshape(sqrt(sum(square(w3), {0, 2})), keep);
  }

  L materialise() const {
    L out = layer;
    out.weight = g * (v / norm_of(v));
    return out;
  }

  template <class... X>
  auto operator()(const X&... x) const {
    return materialise()(x...);
  }
};

}  // namespace fx::nn
