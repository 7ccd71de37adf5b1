// The threaded half of fx::train::data_parallel_withgradient and fx::train::DataParallel: one
// share per OpenMP thread, then the size-weighted sum of the shares' gradients, split across the
// same threads; and DataParallel's split by the threads' measured speeds.
#include "fluxion/train/data_parallel.hpp"

#include "fluxion/ad/anomaly.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "ops/fused.hpp"  // sole_dense_handle

#include <omp.h>

#include <cmath>
#include <type_traits>

namespace fx::train::detail {

int data_parallel_shares(int64_t n) {
  if (omp_in_parallel()) return 1;
  return int(std::min<int64_t>(omp_get_max_threads(), n));
}

void check_batch_rows(const char* op, int64_t n, const Tensor& t) {
  FX_CHECK(t.defined() && t.ndim() >= 1 && t.shape()[0] == n, op, ": every batch argument needs ",
           n, " rows (the first argument's), got ",
           t.defined() ? t.shape().to_string() : "undefined");
}

std::vector<int64_t> even_bounds(int64_t n, int shares) {
  std::vector<int64_t> b(size_t(shares) + 1);
  for (int s = 0; s <= shares; ++s) b[size_t(s)] = n * s / shares;
  return b;
}

namespace {

// An allocation-free zero (fx::expanded_zeros_like): every stride 0.
bool is_broadcast_zero(const Tensor& t) {
  for (int d = 0; d < t.ndim(); ++d)
    if (t.stride(d) != 0 && t.shape()[d] != 1) return false;
  return t.numel() > 1;
}

// out[lo, hi) = sum_s w[s] * part[s][lo, hi) for dense parts of one dtype; out may be part[0].
// A chunk at a time, so that out's chunk stays in L1 from the first share's term to the last.
template <class T>
void weighted_sum(const std::vector<const T*>& parts, const std::vector<double>& w, T* out,
                  int64_t lo, int64_t hi) {
  constexpr int64_t kChunk = 2048;
  for (int64_t c = lo; c < hi; c += kChunk) {
    const int64_t e = std::min(hi, c + kChunk);
    const T w0 = T(w[0]);
    for (int64_t j = c; j < e; ++j) out[j] = w0 * parts[0][j];
    for (size_t s = 1; s < parts.size(); ++s) {
      const T ws = T(w[s]);
      const T* p = parts[s];
      for (int64_t j = c; j < e; ++j) out[j] += ws * p[j];
    }
  }
}

}  // namespace

void run_shares(int shares, const std::function<void(int)>& body,
                std::vector<std::vector<Tensor>>& leaves, const std::vector<double>& weights,
                std::vector<Tensor>& out, const std::function<void(int)>& release) {
  std::exception_ptr error;
  auto keep_first = [&error] {
#pragma omp critical(fx_data_parallel_error)
    if (!error) error = std::current_exception();
  };
  // Dense copies of what the sum reads (one per share and leaf).
  std::vector<std::vector<Tensor>> dense;
  const bool anomaly = anomaly_detection_enabled();  // the caller's fx::detect_anomaly, if any
#pragma omp parallel num_threads(shares)
  {
    const int s = omp_get_thread_num(), nt = omp_get_num_threads();
    try {
      const detect_anomaly scope(anomaly);  // per thread: every share is checked as the caller
      body(s);
    } catch (...) {
      keep_first();
    }
#pragma omp barrier
    // The calling thread allocates the outputs, so the caller's thread cache gets them back.
#pragma omp master
    if (!error) {
      try {
        const size_t nleaves = leaves[0].size();
        for (const auto& l : leaves)
          FX_CHECK(l.size() == nleaves,
                   "fx::train::data_parallel_withgradient: the shares' "
                   "gradients differ in structure");
        out.assign(nleaves, Tensor());
        dense.assign(nleaves, {});
        for (size_t i = 0; i < nleaves; ++i) {
          const Tensor& g0 = leaves[0][i];
          bool all_zero = true;
          for (const auto& l : leaves) all_zero &= is_broadcast_zero(l[i]);
          if (all_zero) {  // nothing flowed into this leaf in any share
            out[i] = g0;
          } else if (g0.dtype() != f32 && g0.dtype() != f64) {  // rare: ordinary ops
            Tensor acc = g0 * weights[0];
            for (size_t t = 1; t < leaves.size(); ++t) acc = acc + leaves[t][i] * weights[t];
            out[i] = acc;
          } else {
            // The first share's gradient, when nothing else holds it, takes the sum in place:
            // its buffer is still in this thread's cache, where a fresh one would be cold.
            const bool reuse = sole_dense_handle(g0);
            for (const auto& l : leaves) dense[i].push_back(l[i].astype(g0.dtype()).contiguous());
            out[i] = reuse ? g0 : Tensor::empty(g0.shape(), g0.dtype(), g0.device());
          }
        }
      } catch (...) {
        keep_first();
      }
    }
#pragma omp barrier
    if (!error) {
      for (size_t i = 0; i < dense.size(); ++i) {
        if (dense[i].empty()) continue;
        const int64_t n = out[i].numel(), lo = n * s / nt, hi = n * (s + 1) / nt;
        auto run = [&]<class T>() {
          std::vector<const T*> parts;
          for (const Tensor& d : dense[i]) parts.push_back(d.data<T>());
          weighted_sum<T>(parts, weights, out[i].data<T>(), lo, hi);
        };
        if (out[i].dtype() == f32) run.template operator()<float>();
        else run.template operator()<double>();
      }
    }
#pragma omp barrier
    // Each share's tensors are freed on the thread that made them (its allocator cache), so a
    // worker's buffers do not pile up in the caller's cache step after step.
    for (auto& d : dense)
      if (size_t(s) < d.size()) d[size_t(s)] = Tensor();
    leaves[size_t(s)].clear();
    release(s);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace fx::train::detail

namespace fx::train {

std::vector<int64_t> DataParallel::bounds(int64_t n, int shares) const {
  const size_t ns = size_t(shares);
  bool timed = seconds_per_row_.size() >= ns;
  for (size_t s = 0; timed && s < ns; ++s) timed = seconds_per_row_[s] > 0;
  constexpr int64_t kQuantum = 8;
  if (!timed || n < 2 * kQuantum * shares) return detail::even_bounds(n, shares);
  // Rows in proportion to speed (1 / seconds per row), at least one per share.
  std::vector<double> speed(ns);
  double total = 0;
  for (size_t s = 0; s < ns; ++s) total += speed[s] = 1.0 / seconds_per_row_[s];
  std::vector<int64_t> b(ns + 1, 0);
  double cumulative = 0;
  for (size_t s = 0; s + 1 < ns; ++s) {
    cumulative += speed[s] / total;
    // Bounds on multiples of kQuantum rows: few distinct share shapes, so the allocator's
    // cached blocks and the GEMM kernels' blockings keep fitting from step to step.
    const int64_t at = kQuantum * int64_t(std::llround(cumulative * double(n) / kQuantum));
    // Room for one row in this share and in each share after it.
    b[s + 1] = std::clamp<int64_t>(at, b[s] + 1, n - int64_t(ns - s - 1));
  }
  b[ns] = n;
  return b;
}

void DataParallel::observe(const std::vector<int64_t>& bounds, const std::vector<double>& seconds) {
  const size_t ns = seconds.size();
  FX_CHECK(bounds.size() == ns + 1, "fx::train::DataParallel::observe: ", bounds.size(),
           " bounds for ", ns, " shares' timings (want one bound more than timings)");
  if (seconds_per_row_.size() < ns) seconds_per_row_.resize(ns, 0.0);
  constexpr double kKeep = 0.75;  // weight of the history: about 4 steps
  for (size_t s = 0; s < ns; ++s) {
    const int64_t rows = bounds[s + 1] - bounds[s];
    if (rows <= 0 || !(seconds[s] > 0)) continue;
    const double now = seconds[s] / double(rows);
    double& avg = seconds_per_row_[s];
    avg = avg > 0 ? kKeep * avg + (1 - kKeep) * now : now;
  }
}

}  // namespace fx::train
