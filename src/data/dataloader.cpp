// DataLoader batching, row gathering and one-hot encoding.
#include "fluxion/data/dataloader.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <numeric>
#include <type_traits>
#include <utility>

#include "fluxion/ops/create.hpp"

namespace fx::data {
namespace {

// splitmix64: spreads (seed, epoch) so neighbouring seeds and epochs give unrelated orders.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

Tensor prepare(Tensor t, const char* what) {
  FX_CHECK(t.defined(), "fx::data::DataLoader: ", what, " is undefined");
  FX_CHECK(t.ndim() >= 1, "fx::data::DataLoader: ", what,
           " is 0-d; its first dimension must "
           "index samples");
  FX_CHECK(t.device() == Device::cpu, "fx::data::DataLoader: ", what, " lives on ",
           device_name(t.device()), "; batches are gathered on the cpu");
  return t.is_contiguous() ? t : t.contiguous();
}

// Below this many bytes a gather stays on the calling thread (a memcpy of 128 kB takes ~10 us,
// several times what waking a thread team costs).
constexpr size_t kParallelCopyBytes = size_t(1) << 17;
constexpr int64_t kPrefetchAhead = 3;  // rows
constexpr size_t kCacheLine = 64;

}  // namespace

DataLoader::DataLoader(Tensor x, Tensor y, LoaderOptions options)
    : x_(prepare(std::move(x), "x")), y_(prepare(std::move(y), "y")), opt_(options) {
  FX_CHECK(x_.shape()[0] == y_.shape()[0], "fx::data::DataLoader: x ", x_.shape(), " and y ",
           y_.shape(), " hold different numbers of samples");
  FX_CHECK(opt_.batch >= 1, "fx::data::DataLoader: batch must be at least 1, got ", opt_.batch);
  n_ = x_.shape()[0];
  order_.resize(size_t(n_));
  std::iota(order_.begin(), order_.end(), int64_t(0));
}

int64_t DataLoader::size() const {
  return opt_.drop_last ? n_ / opt_.batch : (n_ + opt_.batch - 1) / opt_.batch;
}

DataLoader::Iterator DataLoader::begin() {
  if (opt_.shuffle) {
    // Fisher-Yates from the identity, so epoch e's order depends on (seed, e) only and not on
    // how many epochs ran before it in this process.
    std::iota(order_.begin(), order_.end(), int64_t(0));
    Generator rng(mix(opt_.seed) ^ mix(uint64_t(epoch_) + 0x51ed270b27a7f1c5ull));
    for (int64_t i = n_ - 1; i > 0; --i)
      std::swap(order_[size_t(i)], order_[rng.below(uint64_t(i + 1))]);
  }
  ++epoch_;
  return {this, 0};
}

namespace {

// Rows `rows` of x gathered into a new tensor: checked and allocated at construction, copied by
// copy(), a share of the rows at a time.
class RowGather {
 public:
  RowGather(const Tensor& x, std::span<const int64_t> rows) : rows_(rows) {
    FX_CHECK(x.defined() && x.ndim() >= 1,
             "fx::data::take_rows: needs a tensor with a sample "
             "dimension");
    FX_CHECK(x.is_contiguous(), "fx::data::take_rows: input ", x.shape(), " is not contiguous");
    Shape s = x.shape();
    const int64_t n = s[0];
    s[0] = int64_t(rows.size());
    // Checked before copying: an exception must not leave an OpenMP region. Negative rows
    // count from the end (a copy of the list is made only when there is one).
    bool negative = false;
    for (int64_t r : rows) {
      (void)normalize_index(r, 0, x.shape(), "fx::data::take_rows");
      negative |= r < 0;
    }
    if (negative) {
      for (int64_t r : rows) wrapped_.push_back(r < 0 ? r + n : r);
      rows_ = wrapped_;
    }
    out = Tensor::empty(s, x.dtype(), x.device());
    row_bytes_ = size_t(x.numel() / std::max<int64_t>(n, 1)) * itemsize(x.dtype());
    src_ = static_cast<const char*>(x.raw_data());
    dst_ = static_cast<char*>(out.raw_data());
  }

  RowGather(const RowGather&) = delete;  // rows_ may point into wrapped_
  RowGather& operator=(const RowGather&) = delete;

  size_t bytes() const { return rows_.size() * row_bytes_; }

  // Rows [k0, k1) of the selection.
  void copy(int64_t k0, int64_t k1) const {
    const int64_t count = int64_t(rows_.size());
    for (int64_t k = k0; k < k1; ++k) {
      // Shuffled rows are scattered over the whole dataset (188 MB for Fashion-MNIST), so each
      // one starts with a cache miss that the hardware prefetcher cannot foresee: ask for the
      // row a few ahead while this one is copied. A training epoch's gathering took 47 -> 34 ms.
      if (k + kPrefetchAhead < count) {
        const char* next = src_ + size_t(rows_[size_t(k + kPrefetchAhead)]) * row_bytes_;
        for (size_t at = 0; at < row_bytes_; at += kCacheLine) __builtin_prefetch(next + at);
      }
      std::memcpy(dst_ + size_t(k) * row_bytes_, src_ + size_t(rows_[size_t(k)]) * row_bytes_,
                  row_bytes_);
    }
  }

  Tensor out;

 private:
  std::span<const int64_t> rows_;
  std::vector<int64_t> wrapped_;  // the rows with negatives counted from the end, if any
  size_t row_bytes_ = 0;
  const char* src_ = nullptr;
  char* dst_ = nullptr;
};

// Runs gathers of the same rows together: a training batch (128 Fashion-MNIST rows: 400 kB of
// images) is a few percent of a step, and gathered on one thread it would not shrink when the
// step's kernels run on several. Each thread copies the same share of every gather's rows, so
// a batch's labels come with its images instead of in a serial copy of their own (~2 us). Small
// gathers branch around the parallel region rather than giving it an if clause: libgomp starts
// and ends a team of one for a false if clause (~3 us here).
void run_gathers(std::initializer_list<const RowGather*> gathers, int64_t count) {
  size_t bytes = 0;
  for (const RowGather* g : gathers) bytes += g->bytes();
  if (bytes < kParallelCopyBytes || omp_in_parallel()) {
    for (const RowGather* g : gathers) g->copy(0, count);
    return;
  }
#pragma omp parallel
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    for (const RowGather* g : gathers) g->copy(count * t / nt, count * (t + 1) / nt);
  }
}

}  // namespace

Batch DataLoader::batch(int64_t i) const {
  FX_CHECK(i >= 0 && i < size(), "fx::data::DataLoader: batch ", i, " of ", size());
  int64_t start = i * opt_.batch, stop = std::min(n_, start + opt_.batch);
  std::span<const int64_t> rows(order_.data() + start, size_t(stop - start));
  const RowGather x(x_, rows), y(y_, rows);
  run_gathers({&x, &y}, int64_t(rows.size()));
  return {x.out, y.out};
}

Tensor take_rows(const Tensor& x, std::span<const int64_t> rows) {
  const RowGather g(x, rows);
  run_gathers({&g}, int64_t(rows.size()));
  return g.out;
}

Tensor onehot(const Tensor& labels, int64_t nclasses) {
  FX_CHECK(labels.defined(), "fx::data::onehot: undefined tensor");
  FX_CHECK(labels.dtype() == i64 || labels.dtype() == i32,
           "fx::data::onehot: labels must be i64 "
           "or i32, got ",
           dtype_name(labels.dtype()), " ", labels.shape());
  FX_CHECK(nclasses >= 1, "fx::data::onehot: nclasses must be at least 1, got ", nclasses);
  Tensor l = labels.is_contiguous() ? labels : labels.contiguous();
  Shape s = l.shape();
  s.push_back(nclasses);
  Tensor out = Tensor::empty(s, f32, l.device());
  float* o = out.data<float>();
  std::memset(o, 0, size_t(out.numel()) * sizeof(float));
  visit_dtype(l.dtype(), [&]<class T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* p = l.data<T>();
      for (int64_t i = 0, n = l.numel(); i < n; ++i) {
        FX_CHECK(p[i] >= 0 && p[i] < nclasses, "fx::data::onehot: label ", int64_t(p[i]),
                 " at index ", i, " is outside [0, ", nclasses, ") for labels ", l.shape());
        o[i * nclasses + int64_t(p[i])] = 1.0f;
      }
    }
  });
  return out;
}

Tensor onecold(const Tensor& scores) {
  FX_CHECK(scores.defined(), "fx::data::onecold: undefined tensor");
  FX_CHECK(scores.ndim() >= 1 && scores.shape().back() >= 1, "fx::data::onecold: scores ",
           scores.shape(), " need a non-empty last axis");
  Tensor x = scores.is_contiguous() ? scores : scores.contiguous();
  const int64_t c = x.shape().back(), rows = x.numel() / c;
  Shape s;
  for (int d = 0; d + 1 < x.ndim(); ++d) s.push_back(x.shape()[d]);
  Tensor out = Tensor::empty(s, i64, x.device());
  int64_t* o = out.data<int64_t>();
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* p = x.data<T>();
    for (int64_t r = 0; r < rows; ++r, p += c) {
      int64_t best = 0;
      for (int64_t j = 1; j < c; ++j) {
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(p[best])) break;
          if (p[j] > p[best] || std::isnan(p[j])) best = j;
        } else {
          if (p[j] > p[best]) best = j;
        }
      }
      o[r] = best;
    }
  });
  return out;
}

}  // namespace fx::data
