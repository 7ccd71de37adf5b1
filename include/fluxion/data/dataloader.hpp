// DataLoader: mini-batches over tensors whose first dimension indexes samples, plus one-hot
// encoding of class labels.
//
//   auto train = fx::data::fashion_mnist();
//   for (auto [x, y] : fx::data::DataLoader(train.images, train.labels,
//                                           {.batch = 128, .shuffle = true, .seed = 1})) {
//     // x: (128, 784) f32, y: (128,) i64; the last batch holds the remaining 96 samples
//   }
//   fx::Tensor y = fx::tensor({3, 0, 9}, fx::i64), scores = fx::randn({3, 10});
//   fx::Tensor t = fx::data::onehot(y, 10);           // (B,) i64 -> (B, 10) f32
//   fx::Tensor pred = fx::data::onecold(scores);      // (B, 10) -> (B,) i64 argmax
//
// Each begin() starts an epoch; with shuffle, epoch e visits the samples in an order drawn from
// (seed, e) alone, so runs repeat exactly and every epoch sees every sample once. A batch is a
// fresh contiguous tensor gathered with one memcpy per sample row: the loop may modify it, and
// the loader costs microseconds next to a training step. Inputs that are not contiguous are
// copied once, at construction, so that gathering stays a memcpy.
#pragma once
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <vector>

#include "fluxion/core/tensor.hpp"
#include "fluxion/data/dataset.hpp"

namespace fx::data {

struct LoaderOptions {
  int64_t batch = 1;
  bool shuffle = false;
  uint64_t seed = 0;
  bool drop_last = false;  // drop the final partial batch instead of yielding it short
};

struct Batch {
  Tensor x, y;
};

class DataLoader {
 public:
  DataLoader(Tensor x, Tensor y, LoaderOptions options = {});
  explicit DataLoader(const Dataset& d, LoaderOptions options = {})
      : DataLoader(d.images, d.labels, options) {}

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    Batch operator*() const { return loader_->batch(i_); }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    void operator++(int) { ++i_; }
    bool operator==(const Iterator& o) const { return i_ == o.i_; }

   private:
    friend class DataLoader;
    Iterator(const DataLoader* l, int64_t i) : loader_(l), i_(i) {}
    const DataLoader* loader_ = nullptr;
    int64_t i_ = 0;
  };

  // Starts the next epoch (drawing its order when shuffling) and returns its first batch.
  Iterator begin();
  Iterator end() const { return {this, size()}; }

  int64_t size() const;  // batches per epoch
  int64_t num_samples() const { return n_; }
  int64_t epoch() const { return epoch_; }   // epochs started by begin() so far
  void set_epoch(int64_t e) { epoch_ = e; }  // the next begin() starts epoch e (resuming)
  const LoaderOptions& options() const { return opt_; }
  // Batch i of the current epoch; sample order of the current epoch (identity unless shuffled).
  Batch batch(int64_t i) const;
  std::span<const int64_t> order() const { return order_; }

 private:
  Tensor x_, y_;
  LoaderOptions opt_;
  int64_t n_ = 0;
  int64_t epoch_ = 0;
  std::vector<int64_t> order_;
};

// Rows of x (contiguous, first dimension = samples) at `rows`, as a new contiguous tensor;
// a negative row counts from the end (-1 is the last), as every index in fluxion does.
Tensor take_rows(const Tensor& x, std::span<const int64_t> rows);

// labels (any shape, integer dtype, values in [0, nclasses)) -> labels.shape + (nclasses,) f32.
Tensor onehot(const Tensor& labels, int64_t nclasses);
// Index of the largest entry along the last axis, as i64 (the first one on ties; NaN wins).
Tensor onecold(const Tensor& scores);

}  // namespace fx::data
