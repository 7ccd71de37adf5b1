// EmbeddingBag: looks up bags of indices and reduces each bag's rows by sum, mean or max
// without materialising the (bag, index, size) lookup (PyTorch's EmbeddingBag, Flux's
// EmbeddingBag, with 0-based indices).
//
//   auto bag = fx::nn::EmbeddingBag(1000, 32, fx::nn::BagMode::mean);   // weight (1000, 32)
//   fx::Tensor fixed = fx::zeros({4, 6}, fx::i64);   // 4 bags of 6 indices each
//   fx::Tensor h = bag(fixed);                       // (4, 32)
//   fx::Tensor flat = fx::zeros({10}, fx::i64);      // 10 indices ...
//   fx::Tensor offsets = fx::from_vector<int64_t>({0, 3, 3, 7});   // ... in 4 bags (one empty)
//   fx::Tensor h2 = bag(flat, offsets);              // (4, 32); an empty bag gives zeros
//   fx::Tensor w = fx::ones({10});
//   auto sum_bag = fx::nn::EmbeddingBag(1000, 32, fx::nn::BagMode::sum);
//   fx::Tensor h3 = sum_bag(flat, offsets, w);       // sum mode: each row weighted
//   fx::Tensor h4 = sum_bag(fixed, {}, fx::ones({4, 6}));   // fixed bags, weighted
//
// Indices (B, L) are B bags of L; indices (n,) with offsets (B,) (increasing, the first 0) make
// bag b the indices offsets[b] .. offsets[b + 1] - 1 (the last runs to n). per_sample_weights
// (the indices' shape; with (B, L) indices pass an undefined offsets) scale each row before a sum (sum mode only, as PyTorch). Bad indices,
// offsets or weights raise fx::Error naming the layer and the shapes.
#pragma once
#include <cstdint>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/nn/embedding.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/index.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

enum class BagMode { sum, mean, max };

struct EmbeddingBag {
  Tensor weight;  // (vocabulary, size)
  BagMode bag_mode = BagMode::mean;
  FX_FIELDS(weight)

  EmbeddingBag() = default;
  EmbeddingBag(int64_t vocabulary, int64_t size, BagMode m = BagMode::mean, DType dtype = f32)
      : weight(randn({vocabulary, size}, dtype)), bag_mode(m) {}
  EmbeddingBag(int64_t vocabulary, int64_t size, BagMode m, Generator& gen, DType dtype = f32)
      : weight(randn({vocabulary, size}, gen, dtype)), bag_mode(m) {}
  explicit EmbeddingBag(Tensor table, BagMode m = BagMode::mean)
      : weight(std::move(table)), bag_mode(m) {
    FX_CHECK(weight.ndim() == 2, "fx::nn::EmbeddingBag: the table ", weight.shape(),
             " is not (vocabulary, size)");
  }

  // Indices (B, L) without offsets, or (n,) with offsets (B,).
  Tensor operator()(const Tensor& idx, const Tensor& offsets = {},
                    const Tensor& per_sample_weights = {}) const {
    if (offsets.defined()) return ragged(idx, offsets, per_sample_weights);
    detail::check_indices(idx, weight, "EmbeddingBag");
    FX_CHECK(idx.ndim() == 2, "fx::nn::EmbeddingBag: indices ", idx.shape(),
             " are not (bags, length); pass offsets for bags of varying length");
    const int64_t b = idx.shape()[0], l = idx.shape()[1], d = weight.shape()[1];
    Tensor rows = weighted_rows(idx, per_sample_weights);
    Tensor r3 = reshape(rows, {b, l, d});
    if (l == 0) return zeros({b, d}, weight.dtype());
    switch (bag_mode) {
      case BagMode::sum: return sum(r3, 1);
      case BagMode::mean: return mean(r3, 1);
      case BagMode::max: return max(r3, 1);
    }
    return {};
  }

 private:
  // Bags of varying length: indices (n,), offsets (B,).
  Tensor ragged(const Tensor& idx, const Tensor& offsets, const Tensor& per_sample_weights) const {
    detail::check_indices(idx, weight, "EmbeddingBag");
    FX_CHECK(idx.ndim() == 1 && offsets.defined() && offsets.ndim() == 1 &&
                 (offsets.dtype() == i64 || offsets.dtype() == i32),
             "fx::nn::EmbeddingBag: indices ", idx.shape(), " with offsets ",
             offsets.defined() ? offsets.shape().to_string() : "undefined",
             " are not (n,) and (bags,) integers");
    const int64_t n = idx.shape()[0], d = weight.shape()[1];
    std::vector<int64_t> off = to_vector<int64_t>(astype(offsets, i64));
    const int64_t nb = static_cast<int64_t>(off.size());
    bool ok = nb == 0 || off[0] == 0;
    for (int64_t i = 0; ok && i < nb; ++i) ok = off[i] <= (i + 1 < nb ? off[i + 1] : n);
    FX_CHECK(ok, "fx::nn::EmbeddingBag: offsets ", offsets.shape(), " for indices ", idx.shape(),
             " must start at 0 and increase up to n");
    Tensor rows = weighted_rows(idx, per_sample_weights);  // (n, d)
    if (bag_mode != BagMode::max) {
      std::vector<int64_t> bag_of(static_cast<size_t>(n));
      std::vector<double> count(static_cast<size_t>(nb), 0);
      for (int64_t i = 0; i < nb; ++i)
        for (int64_t j = off[i]; j < (i + 1 < nb ? off[i + 1] : n); ++j) bag_of[j] = i, ++count[i];
      Tensor out = index_add(zeros({nb, d}, rows.dtype()), 0, from_vector(bag_of), rows);
      if (bag_mode == BagMode::sum) return out;
      for (double& c : count) c = c > 0 ? 1 / c : 0;  // an empty bag stays zero
      return out * reshape(astype(from_vector(count), rows.dtype()), {nb, 1});
    }
    std::vector<Tensor> bags;  // max: each bag reduced on its own slice
    for (int64_t i = 0; i < nb; ++i) {
      const int64_t lo = off[i], hi = i + 1 < nb ? off[i + 1] : n;
      bags.push_back(hi > lo ? max(slice(rows, 0, lo, hi), 0) : zeros({d}, rows.dtype()));
    }
    return nb ? stack(bags, 0) : zeros({0, d}, rows.dtype());
  }

  // The looked-up rows (numel(idx), d), each scaled by its per-sample weight when given.
  Tensor weighted_rows(const Tensor& idx, const Tensor& w) const {
    Tensor rows = index_select(weight, 0, reshape(idx, {-1}));
    if (!w.defined()) return rows;
    FX_CHECK(bag_mode == BagMode::sum && w.shape() == idx.shape(),
             "fx::nn::EmbeddingBag: per_sample_weights ", w.shape(), " for indices ", idx.shape(),
             " need the indices' shape and sum mode");
    return rows * reshape(w, {-1, 1});
  }
};

}  // namespace fx::nn
