// Strided iteration for the tuned CPU kernels: operand layouts are collapsed to the fewest
// dimensions, then a row function runs over the innermost dimension with per-operand strides
// (unit strides take a vectorisable path). Large tensors split rows across OpenMP threads.
#pragma once
#include <omp.h>

#include <algorithm>
#include <array>
#include <complex>
#include <utility>

#include "backend/cpu/thresholds.hpp"
#include "fluxion/core/tensor.hpp"

namespace fx::backend::cpu {

// Runs run.template operator()<T>() for f32, f64, c64 and c128; declines anything else.
template <class Run>
bool floating_or_complex(DType t, Run& run) {
  switch (t) {
    case DType::f32: return run.template operator()<float>(), true;
    case DType::f64: return run.template operator()<double>(), true;
    case DType::c64: return run.template operator()<std::complex<float>>(), true;
    case DType::c128: return run.template operator()<std::complex<double>>(), true;
    default: return false;
  }
}

// Threads for `work` elements: the OpenMP team from `min` on, one below it and inside a parallel
// region (a share of fx::train::data_parallel_withgradient runs its ops on its own thread).
inline int team_for(int64_t work, int64_t min = kParallelMin) {
  return work >= min && !omp_in_parallel() ? omp_get_max_threads() : 1;
}

// body(lo, hi) over [0, n): called once on this thread when `threads` <= 1, else on equal parts
// across an OpenMP team. Kernels branch here rather than write `#pragma omp parallel if (...)`:
// libgomp starts and ends a team of one for a false if-clause, a futex syscall per call, which
// was most of the per-op cost of small reductions and slices (LSTM overhead benchmark).
template <class Body>
void split_range(int64_t n, int threads, const Body& body) {
  if (threads <= 1 || n < 2) return body(int64_t(0), n);
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    body(n * t / nt, n * (t + 1) / nt);
  }
}

template <int K>
struct Layout {
  int nd = 0;
  int64_t shape[kMaxDims];
  int64_t st[K][kMaxDims];
};

// Operand k has strides strides[k] over `shape`.
template <int K>
Layout<K> collapse(const Shape& shape, const std::array<const int64_t*, K>& strides) {
  Layout<K> L;
  for (int d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (L.nd > 0) {
      bool merge = true;
      for (int k = 0; k < K; ++k) merge &= L.st[k][L.nd - 1] == strides[k][d] * shape[d];
      if (merge) {
        L.shape[L.nd - 1] *= shape[d];
        for (int k = 0; k < K; ++k) L.st[k][L.nd - 1] = strides[k][d];
        continue;
      }
    }
    L.shape[L.nd] = shape[d];
    for (int k = 0; k < K; ++k) L.st[k][L.nd] = strides[k][d];
    ++L.nd;
  }
  if (L.nd == 0) {
    L.nd = 1;
    L.shape[0] = 1;
    for (int k = 0; k < K; ++k) L.st[k][0] = 1;
  }
  return L;
}

// True when some operand of a 2-d layout steps further along the inner axis than along the outer
// one: a transposed view beside contiguous operands (an activation's cotangent that a matmul
// pullback produced transposed). Walking whole rows then reads that operand one cache line per
// element, and a row of a few hundred elements evicts the lines before the next row reuses them.
template <int K>
bool disagree_on_unit_axis(const Layout<K>& L) {
  for (int k = 0; k < K; ++k) {
    const int64_t outer = L.st[k][0] < 0 ? -L.st[k][0] : L.st[k][0];
    const int64_t inner = L.st[k][1] < 0 ? -L.st[k][1] : L.st[k][1];
    if (inner > 1 && outer < inner) return true;
  }
  return false;
}

// A 2-d layout walked in square tiles (rows of kTransposeTile elements, kTransposeTile rows at a
// time), so the lines a transposed operand brings in are all used before they leave L1. Row tiles
// split across threads.
template <int K, class Row>
void run_tiles(const Layout<K>& L, Row& row, int threads) {
  const int64_t nrows = L.shape[0], inner = L.shape[1];
  const int64_t row_tiles = (nrows + kTransposeTile - 1) / kTransposeTile;
  int64_t inner_st[K];
  for (int k = 0; k < K; ++k) inner_st[k] = L.st[k][1];
  auto tiles = [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = b * kTransposeTile, r1 = std::min(nrows, r0 + kTransposeTile);
      for (int64_t j0 = 0; j0 < inner; j0 += kTransposeTile) {
        const int64_t n = std::min(kTransposeTile, inner - j0);
        for (int64_t r = r0; r < r1; ++r) {
          int64_t off[K];
          for (int k = 0; k < K; ++k) off[k] = r * L.st[k][0] + j0 * L.st[k][1];
          row(off, n, inner_st);
        }
      }
    }
  };
  if (threads <= 1 || row_tiles < 2) return tiles(0, row_tiles);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    tiles(row_tiles * t / nt, row_tiles * (t + 1) / nt);
  }
}

// Calls row(offsets[K], n, inner_strides[K]) for every innermost row of the layout.
// tiles = false keeps whole rows even where an operand steps further along the inner axis (rows
// of a folded layout are blocks of short rows, not elements: see fold_short_rows).
template <int K, class Row>
void run_rows(const Layout<K>& L, Row&& row, bool tiles = true) {
  const int nd = L.nd;
  const int64_t inner = L.shape[nd - 1];
  int64_t inner_st[K];
  for (int k = 0; k < K; ++k) inner_st[k] = L.st[k][nd - 1];
  int64_t nrows = 1;
  for (int d = 0; d < nd - 1; ++d) nrows *= L.shape[d];
  if (nrows == 0 || inner == 0) return;  // empty: the index arithmetic below would divide by 0

  auto rows = [&](int64_t r0, int64_t r1) {
    int64_t idx[kMaxDims] = {};
    int64_t off[K] = {};
    int64_t rem = r0;
    for (int d = nd - 2; d >= 0; --d) {
      idx[d] = rem % L.shape[d];
      rem /= L.shape[d];
      for (int k = 0; k < K; ++k) off[k] += idx[d] * L.st[k][d];
    }
    for (int64_t r = r0; r < r1; ++r) {
      row(off, inner, inner_st);
      for (int d = nd - 2; d >= 0; --d) {  // odometer increment
        for (int k = 0; k < K; ++k) off[k] += L.st[k][d];
        if (++idx[d] < L.shape[d]) break;
        for (int k = 0; k < K; ++k) off[k] -= L.st[k][d] * L.shape[d];
        idx[d] = 0;
      }
    }
  };

  const int64_t total = nrows * inner;
  const int threads = team_for(total);
  if (tiles && nd == 2 && nrows > 1 && inner > 1 && disagree_on_unit_axis(L)) {
    // A strided element costs ~4x a contiguous one (no vectors, a line per column): threads pay
    // from a quarter of the usual size (a 128 x 128 activation's pullback).
    run_tiles(L, row, team_for(total, kTiledParallelMin));
    return;
  }
  if (threads <= 1) {
    rows(0, nrows);
  } else if (nrows >= threads) {
#pragma omp parallel num_threads(threads)
    {
      int t = omp_get_thread_num(), n = omp_get_num_threads();
      rows(nrows * t / n, nrows * (t + 1) / n);
    }
  } else {
    // Few long rows: split each row's inner range instead.
    for (int64_t r = 0; r < nrows; ++r) {
      int64_t base[K] = {};
      int64_t rem = r;
      for (int d = nd - 2; d >= 0; --d) {
        for (int k = 0; k < K; ++k) base[k] += (rem % L.shape[d]) * L.st[k][d];
        rem /= L.shape[d];
      }
#pragma omp parallel num_threads(threads)
      {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        int64_t j0 = inner * t / n, j1 = inner * (t + 1) / n;
        int64_t off[K];
        for (int k = 0; k < K; ++k) off[k] = base[k] + j0 * inner_st[k];
        row(off, j1 - j0, inner_st);
      }
    }
  }
}

// Row-major dense (size-1 dims may have any stride); returns the element count, or -1 when not
// dense. With operands of one shape that are all dense, an elementwise kernel is a single flat
// loop: small tensors then skip the layout collapse and the row iteration, which cost more than
// the arithmetic at a few elements.
inline int64_t dense_numel(const Tensor& t) {
  const Shape& s = t.shape();
  const int64_t* st = t.strides();
  int64_t acc = 1;
  for (int i = s.size() - 1; i >= 0; --i) {
    if (s[i] != 1 && st[i] != acc) return -1;
    acc *= s[i];
  }
  return acc;
}

// The element count when out and every input (of out's shape) are dense and small enough to stay
// on this thread (threads pay only from kParallelMin elements); otherwise -1.
template <class... In>
int64_t flat_serial(const Tensor& out, const In&... ins) {
  const int64_t n = dense_numel(out);
  if (n < 0 || n >= kParallelMin) return -1;
  return ((dense_numel(ins) >= 0) && ...) ? n : -1;
}

// A short innermost row (broadcasting over a small trailing axis: (K, N, 2) - (N, 2)) pays the
// row call, stride tests and odometer step for two elements; an elementwise loop may run in any
// order, so a much longer dimension is moved innermost instead (one long strided loop per row).
// Only for rows of at most 4: the strided rows then still share cache lines, where rows of 10
// doubles would touch a new line per element and run slower than the short rows did.
template <int K>
void prefer_long_rows(Layout<K>& L) {
  const int last = L.nd - 1;
  if (last < 1 || L.shape[last] >= kShortRow) return;
  int best = last;
  for (int d = 0; d < last; ++d)
    if (L.shape[d] > L.shape[best]) best = d;
  if (L.shape[best] < kLongRowFactor * L.shape[last]) return;
  std::swap(L.shape[best], L.shape[last]);
  for (int k = 0; k < K; ++k) std::swap(L.st[k][best], L.st[k][last]);
}

// Short rows that prefer_long_rows left in place (5 to 15 elements): when the output's row is
// unit-stride and each input's is unit-stride or broadcast (stride 0, but not both), runs
// column(off, rows, row_strides, w, inner_strides) over the second-innermost dimension, the
// row loop inside, and returns true; otherwise returns false and does nothing.
template <class Column>
bool fold_short_rows(const Layout<3>& L, Column&& column) {
  const int last = L.nd - 1;
  if (last < 1 || L.shape[last] >= kFoldBelow || L.st[0][last] != 1) return false;
  const int64_t s1 = L.st[1][last], s2 = L.st[2][last];
  if ((s1 != 1 && s1 != 0) || (s2 != 1 && s2 != 0) || (s1 == 0 && s2 == 0)) return false;
  Layout<3> outer = L;
  outer.nd = last;  // rows of the folded layout run along the second-innermost dimension
  const int64_t w = L.shape[last];
  const int64_t inner_st[3] = {1, s1, s2};
  run_rows<3>(
      outer,
      [&](const int64_t* off, int64_t rows, const int64_t* rs) {
        column(off, rows, rs, w, inner_st);
      },
      /*tiles=*/false);
  return true;
}

// The iteration layout of an elementwise kernel: out and its inputs of out's shape.
template <int K>
Layout<K> layout_of(const Tensor& out, const std::array<const Tensor*, K - 1>& ins) {
  std::array<const int64_t*, K> st;
  st[0] = out.strides();
  for (int k = 1; k < K; ++k) st[k] = ins[k - 1]->strides();
  Layout<K> L = collapse<K>(out.shape(), st);
  prefer_long_rows(L);
  return L;
}

}  // namespace fx::backend::cpu
