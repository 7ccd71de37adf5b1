// The threaded half of fx::train::data_parallel_withgradient: one share per OpenMP thread, then
// the size-weighted sum of the shares' gradients, split across the same threads.
#include "fluxion/train/data_parallel.hpp"

#include "fluxion/ops/elementwise.hpp"

#include <omp.h>

#include <type_traits>

namespace fx::train::detail {

int data_parallel_shares(int64_t n) {
  if (omp_in_parallel()) return 1;
  return int(std::min<int64_t>(omp_get_max_threads(), n));
}

void check_batch_rows(int64_t n, const Tensor& t) {
  FX_CHECK(t.defined() && t.ndim() >= 1 && t.shape()[0] == n,
           "fx::train::data_parallel_withgradient: every batch argument needs ", n,
           " rows (the first argument's), got ", t.defined() ? t.shape().to_string() : "undefined");
}

namespace {

// An allocation-free zero (fx::expanded_zeros_like): every stride 0.
bool is_broadcast_zero(const Tensor& t) {
  for (int d = 0; d < t.ndim(); ++d)
    if (t.stride(d) != 0 && t.shape()[d] != 1) return false;
  return t.numel() > 1;
}

// out[lo, hi) = sum_s w[s] * part[s][lo, hi) for dense parts of one dtype.
template <class T>
void weighted_sum(const std::vector<const T*>& parts, const std::vector<double>& w, T* out,
                  int64_t lo, int64_t hi) {
  const T w0 = T(w[0]);
  for (int64_t j = lo; j < hi; ++j) out[j] = w0 * parts[0][j];
  for (size_t s = 1; s < parts.size(); ++s) {
    const T ws = T(w[s]);
    const T* p = parts[s];
    for (int64_t j = lo; j < hi; ++j) out[j] += ws * p[j];
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
#pragma omp parallel num_threads(shares)
  {
    const int s = omp_get_thread_num(), nt = omp_get_num_threads();
    try {
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
          FX_CHECK(l.size() == nleaves, "fx::train::data_parallel_withgradient: the shares' "
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
            for (const auto& l : leaves) dense[i].push_back(l[i].astype(g0.dtype()).contiguous());
            out[i] = Tensor::empty(g0.shape(), g0.dtype(), g0.device());
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
