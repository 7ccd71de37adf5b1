// Tuned CPU sum (and sum_squares: the same loops on squared terms), max, min, any and all over
// one run of adjacent axes of a contiguous input, and logsumexp. Anything else declines to the
// reference backend. Products are in matmul.cpp.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/backends.hpp"
#include "backend/cpu/loops.hpp"
#include "backend/cpu/thresholds.hpp"
#include "backend/cpu/vector_math.hpp"
#include "ops/fused.hpp"

namespace fx::backend::cpu {
namespace {

// A reduction whose reduced axes are one run of adjacent dims of a contiguous input, seen as an
// (outer, reduced, inner) array: out[o][j] = reduce over r of x[o][r][j]. Sums over the last
// axes (inner = 1), the first ones (outer = 1) and the middle (unbroadcasting a batch) all fit.
struct SplitReduction {
  int64_t outer = 1, reduced = 1, inner = 1;
};

bool split_reduction(const KernelCall& c, SplitReduction& r) {
  const Tensor& x = c.in[0];
  if (!x.is_contiguous() || x.ndim() == 0) return false;
  const uint64_t mask = c.attrs.get<ReduceAttrs>().axes;
  const int nd = x.ndim();
  int first = 0;
  while (first < nd && !((mask >> first) & 1u)) ++first;
  int last = first;
  while (last < nd && ((mask >> last) & 1u)) ++last;
  if (first == nd || (mask >> last) != 0) return false;  // nothing reduced, or two runs
  for (int d = 0; d < nd; ++d)
    (d < first ? r.outer : d < last ? r.reduced : r.inner) *= x.shape()[d];
  return true;
}

// Below kShortRun elements (thresholds.hpp) a row (or block) is short enough that per-row loop
// overhead dominates.

// A summed term: x for sum, x^2 for sum_squares (squared where it is loaded, so the squares are
// never stored). The two reductions share every loop below.
template <bool Square, class T>
inline T term(T v) {
  if constexpr (Square) return v * v;
  else return v;
}

// out[j] = the sum over `rows` rows of a row-major (rows, W) block. Four rows at a time into
// independent partial sums: one chain of dependent additions would be bound by their latency.
template <int W, bool Square, class T>
void sum_short_rows(const T* p, int64_t rows, T* out) {
  T acc[4][W] = {};
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4)
    for (int u = 0; u < 4; ++u)
      for (int j = 0; j < W; ++j) acc[u][j] += term<Square>(p[(r + u) * W + j]);
  for (; r < rows; ++r)
    for (int j = 0; j < W; ++j) acc[0][j] += term<Square>(p[r * W + j]);
  for (int j = 0; j < W; ++j) out[j] = (acc[0][j] + acc[1][j]) + (acc[2][j] + acc[3][j]);
}

// out[o] = the sum of the W contiguous values of row o, added in order 0..W-1 (as the generic
// loop does). With W a compile-time constant there is no loop per output: the additions of
// neighbouring outputs overlap instead of waiting on a loop branch per term.
template <int W, bool Square, class T>
void sum_fixed_rows(const T* p, int64_t rows, T* out) {
  for (int64_t o = 0; o < rows; ++o) {
    const T* r = p + o * W;
    T acc = T(0) + term<Square>(r[0]);
    for (int j = 1; j < W; ++j) acc += term<Square>(r[j]);
    out[o] = acc;
  }
}

// The sum of n contiguous values in Acc (double, for f32 and f64), in 16 independent partial sums
// combined pairwise at the end. One running sum is a chain of dependent additions bound by their
// latency (4 cycles each); sixteen overlap and vectorise. A conv layer's bias gradient sums rows
// of H x W = 784 values: 2048 such rows took 1.3 ms in one chain, a fifth of a depthwise conv
// layer's whole training step (bench/layer_table).
// Rows of at least kBlockSumMin values (see the caller).
constexpr int kBlockSumLanes = 16;
constexpr int64_t kBlockSumMin = 2 * kBlockSumLanes;
template <bool Square, class Acc, class T>
Acc block_sum(const T* p, int64_t n) {
  constexpr int L = kBlockSumLanes;
  Acc part[L] = {};
  int64_t j = 0;
  for (; j + L <= n; j += L)
    for (int k = 0; k < L; ++k) part[k] += term<Square>(Acc(p[j + k]));
  for (int w = L / 2; w > 0; w /= 2)
    for (int k = 0; k < w; ++k) part[k] += part[k + w];
  Acc acc = part[0];
  for (; j < n; ++j) acc += term<Square>(Acc(p[j]));
  return acc;
}

// Rows of kShortRun..kFixedRowMax (8..16) values: the widths a sum over a short last axis (the
// GMM's D = 10) or an unbroadcast of a short trailing axis sees.

// fn(std::integral_constant<int, w>) for w in kShortRun..kFixedRowMax.
template <class Fn, int... Ws>
void with_width(int64_t w, Fn&& fn, std::integer_sequence<int, Ws...>) {
  ((w == Ws + kShortRun ? (fn(std::integral_constant<int, Ws + kShortRun>{}), 0) : 0), ...);
}
template <class Fn>
void with_width(int64_t w, Fn&& fn) {
  with_width(w, fn, std::make_integer_sequence<int, kFixedRowMax - kShortRun + 1>());
}

// sum, or sum_squares (real floating tensors only) when Square.
template <bool Square>
bool sum(const KernelCall& c) {
  SplitReduction r;
  const Tensor& x = c.in[0];
  if ((Square && !is_floating(x.dtype())) || !split_reduction(c, r)) return false;
  const int64_t outer = r.outer, red = r.reduced, inner = r.inner;
  auto run = [&]<class T>() {
    // Accumulate in double precision (std::complex<double> for complex tensors).
    using Acc = std::conditional_t<is_complex_v<T>, std::complex<double>, double>;
    const T* xp = x.data<T>();
    T* op = c.out.data<T>();
    const int threads = team_for(outer * red * inner);
    if (inner == 1 && red > 0 && red < kShortRun && std::is_same_v<T, Acc>) {
      // A few terms per output (a sum over a short last axis): a loop per output costs more
      // than its additions, so add term j of every output at once. Same order of additions
      // as the loop below; only where the element type is already the accumulator type.
      // Blocks of kShortSumBlock outputs stay in L1 across the j sweeps.
      constexpr int64_t B = kShortSumBlock;
      split_range((outer + B - 1) / B, threads, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0 * B; b < std::min(outer, b1 * B); b += B) {
          const int64_t e = std::min(outer, b + B);
          for (int64_t o = b; o < e; ++o)  // 0 + x: -0 sums to +0
            op[o] = T(0) + term<Square>(xp[o * red]);
          for (int64_t j = 1; j < red; ++j)
            for (int64_t o = b; o < e; ++o) op[o] += term<Square>(xp[o * red + j]);
        }
      });
    } else if (inner == 1 && red >= kShortRun && red <= kFixedRowMax && std::is_same_v<T, Acc>) {
      with_width(red, [&](auto w) {  // red is 8..16 here
        split_range(outer, threads, [&](int64_t o0, int64_t o1) {
          sum_fixed_rows<decltype(w)::value, Square>(xp + o0 * red, o1 - o0, op + o0);
        });
      });
    } else if (inner == 1 && red >= kBlockSumMin && !is_complex_v<T>) {
      // Long contiguous blocks: partial sums (block_sum). Shorter ones (an f32 sum over a short
      // axis: upsampling's pullback sums pairs) keep the one chain below: there, setting up and
      // combining partial sums cost more than they save (upsample_nearest2d went from 0.73 to 5x
      // libtorch in bench/layer_table).
      split_range(outer, threads, [&](int64_t o0, int64_t o1) {
        if constexpr (!is_complex_v<T>)
          for (int64_t o = o0; o < o1; ++o) op[o] = T(block_sum<Square, Acc>(xp + o * red, red));
      });
    } else if (inner == 1) {  // out[o] = sum of a contiguous block
      split_range(outer, threads, [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o) {
          Acc acc = 0;
          const T* p = xp + o * red;
          for (int64_t j = 0; j < red; ++j) acc += term<Square>(Acc(p[j]));
          op[o] = T(acc);
        }
      });
    } else if (inner <= kFixedRowMax) {
      // Short rows (unbroadcasting a small trailing axis, the GMM's mu gradient at D = 10):
      // row-by-row accumulation would pay loop overhead per row, so the row width becomes a
      // compile-time constant (rows of 10: 4.5x faster than the row-by-row loop in L2).
      split_range(outer, threads, [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o) {
          const T* p = xp + o * red * inner;
          T* out = op + o * inner;
          switch (inner) {
            case 2: sum_short_rows<2, Square>(p, red, out); break;
            case 3: sum_short_rows<3, Square>(p, red, out); break;
            case 4: sum_short_rows<4, Square>(p, red, out); break;
            case 5: sum_short_rows<5, Square>(p, red, out); break;
            case 6: sum_short_rows<6, Square>(p, red, out); break;
            case 7: sum_short_rows<7, Square>(p, red, out); break;
            default:
              with_width(inner,
                         [&](auto w) { sum_short_rows<decltype(w)::value, Square>(p, red, out); });
          }
        }
      });
    } else {  // out[o][j] = sum over rows r: accumulate row by row (unit stride)
      // With fewer output rows than threads (a bias gradient: outer = 1) the columns are split
      // instead; each output still adds its terms in row order.
      const bool by_cols = outer < threads;
      split_range(by_cols ? inner : outer, threads, [&](int64_t a0, int64_t a1) {
        const int64_t o0 = by_cols ? 0 : a0, o1 = by_cols ? outer : a1;
        const int64_t j0 = by_cols ? a0 : 0, j1 = by_cols ? a1 : inner;
        for (int64_t o = o0; o < o1; ++o) {
          T* out = op + o * inner;
          std::fill(out + j0, out + j1, T(0));
          for (int64_t row = 0; row < red; ++row) {
            const T* p = xp + (o * red + row) * inner;
            for (int64_t j = j0; j < j1; ++j) out[j] += term<Square>(p[j]);
          }
        }
      });
    }
  };
  return floating_or_complex(x.dtype(), run);
}

// max / min of real floating tensors. A NaN wins and sticks, as in the reference backend.
template <bool Max>
bool extremum(const KernelCall& c) {
  SplitReduction r;
  const Tensor& x = c.in[0];
  if (!is_floating(x.dtype()) || x.numel() == 0 || !split_reduction(c, r)) return false;
  const int64_t outer = r.outer, red = r.reduced, inner = r.inner;
  auto run = [&]<class T>() {
    auto pick = [](T acc, T v) { return ((Max ? v > acc : v < acc) || v != v) ? v : acc; };
    const T* xp = x.data<T>();
    T* op = c.out.data<T>();
    const int threads = team_for(outer * red * inner);
    split_range(outer, threads, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        const T* block = xp + o * red * inner;
        if (inner == 1) {
          T acc = block[0];
          for (int64_t j = 1; j < red; ++j) acc = pick(acc, block[j]);
          op[o] = acc;
        } else {
          T* out = op + o * inner;
          std::memcpy(out, block, size_t(inner) * sizeof(T));
          for (int64_t row = 1; row < red; ++row) {
            const T* p = block + row * inner;
            for (int64_t j = 0; j < inner; ++j) out[j] = pick(out[j], p[j]);
          }
        }
      }
    });
  };
  if (x.dtype() == f32) run.template operator()<float>();
  else run.template operator()<double>();
  return true;
}

// any (Any) or all over one run of adjacent axes of a contiguous input, any dtype; an element
// counts as true when non-zero. The deciding elements (non-zero ones for any, zeros for all) are
// counted rather than branched on, so the loops vectorise.
template <bool Any>
bool any_all(const KernelCall& c) {
  SplitReduction r;
  if (!split_reduction(c, r)) return false;
  const int64_t outer = r.outer, red = r.reduced, inner = r.inner;
  auto run = [&]<class T>() {
    const T* xp = c.in[0].data<T>();
    bool* op = c.out.data<bool>();
    auto deciding = [](const T* p, int64_t n) {
      int64_t k = 0;
      for (int64_t j = 0; j < n; ++j) k += (p[j] != T(0)) == Any;
      return k;
    };
    const int threads = team_for(outer * red * inner);
    if (inner == 1 && outer < threads) {  // a few long runs (a whole-tensor test): split each
      for (int64_t o = 0; o < outer; ++o) {
        std::atomic<int64_t> count{0};
        split_range(red, threads, [&](int64_t lo, int64_t hi) {
          count.fetch_add(deciding(xp + o * red + lo, hi - lo), std::memory_order_relaxed);
        });
        op[o] = (count.load() > 0) == Any;
      }
      return;
    }
    split_range(outer, threads, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        const T* block = xp + o * red * inner;
        if (inner == 1) {
          op[o] = (deciding(block, red) > 0) == Any;
          continue;
        }
        bool* out = op + o * inner;
        for (int64_t j = 0; j < inner; ++j) out[j] = !Any;
        for (int64_t row = 0; row < red; ++row) {
          const T* p = block + row * inner;
          for (int64_t j = 0; j < inner; ++j)
            out[j] = Any ? (out[j] || p[j] != T(0)) : (out[j] && p[j] != T(0));
        }
      }
    });
  };
  visit_dtype_all(c.in[0].dtype(), run);
  return true;
}

// log sum exp over the rows of a row-major (red, inner) block into out (inner values); m and t
// are scratch of inner values. The exponentials go through the SIMD polynomials a row at a time.
// The shift is the maximum, or 0 where that is infinite (the result is then the infinity, as in
// the reference and PyTorch); a NaN maximum sticks and gives NaN.
template <class T>
void logsumexp_rows(const T* x, int64_t red, int64_t inner, T* out, T* m, T* t) {
  std::copy_n(x, inner, m);
  for (int64_t r = 1; r < red; ++r) {
    const T* p = x + r * inner;
    for (int64_t j = 0; j < inner; ++j) m[j] = (p[j] > m[j] || p[j] != p[j]) ? p[j] : m[j];
  }
  for (int64_t j = 0; j < inner; ++j) {
    if (std::isinf(m[j])) m[j] = 0;
    out[j] = 0;
  }
  for (int64_t r = 0; r < red; ++r) {
    const T* p = x + r * inner;
    for (int64_t j = 0; j < inner; ++j) t[j] = p[j] - m[j];
    vector_map(VecFn::exp, t, t, inner);
    for (int64_t j = 0; j < inner; ++j) out[j] += t[j];
  }
  for (int64_t j = 0; j < inner; ++j) out[j] = std::log(out[j]) + m[j];
}

// The largest of p[0..n), or NaN when any is NaN. Two running maxima that a NaN does not enter
// (a > b ? a : b is one vmaxss), the NaN test on the side: written as one select that also
// caught NaN, the chain went through general registers at ~6 cycles an element, most of a
// 128 x 10 classifier loss's logsumexp.
template <class T>
T row_max(const T* p, int64_t n) {
  if (n >= 64) {  // long rows (a 1000-class loss): an OpenMP SIMD reduction, one maximum per lane
    T m = p[0];
    int nan = 0;
#pragma omp simd reduction(max : m) reduction(| : nan)
    for (int64_t j = 0; j < n; ++j) {
      m = p[j] > m ? p[j] : m;
      nan |= p[j] != p[j];
    }
    return nan ? std::numeric_limits<T>::quiet_NaN() : m;
  }
  T m0 = p[0], m1 = p[n > 1 ? 1 : 0];
  bool nan = false;
  int64_t j = 0;
  for (; j + 2 <= n; j += 2) {
    m0 = p[j] > m0 ? p[j] : m0;
    m1 = p[j + 1] > m1 ? p[j + 1] : m1;
    nan |= (p[j] != p[j]) | (p[j + 1] != p[j + 1]);
  }
  if (j < n) {
    m0 = p[j] > m0 ? p[j] : m0;
    nan |= p[j] != p[j];
  }
  return nan ? std::numeric_limits<T>::quiet_NaN() : (m1 > m0 ? m1 : m0);
}

bool logsumexp(const KernelCall& c) {
  SplitReduction r;
  const Tensor& x = c.in[0];
  if (!is_floating(x.dtype()) || x.numel() == 0 || !split_reduction(c, r)) return false;
  const int64_t outer = r.outer, red = r.reduced, inner = r.inner;
  auto run = [&]<class T>() {
    const T* xp = x.data<T>();
    T* op = c.out.data<T>();
    if (inner > 1) {  // (the GMM's reduction over mixture components, axis 0 of (K, N))
      std::vector<T> scratch(static_cast<size_t>(2 * inner));
      for (int64_t o = 0; o < outer; ++o)
        logsumexp_rows(xp + o * red * inner, red, inner, op + o * inner, scratch.data(),
                       scratch.data() + inner);
      return;
    }
    // Over the last axes: each block is one contiguous run of red values. Blocks are shifted a
    // batch at a time and go through one vector_map call per batch: a classifier's loss has
    // blocks of 10 or so, where a call per block cost more than its exponentials (a 128 x 10
    // logitcrossentropy and its gradient: 11 us, of which a quarter was those calls).
    const int64_t rows = std::min(outer, std::max<int64_t>(1, kLogsumexpBatchValues / red));
    std::vector<T> t(static_cast<size_t>(rows * red)), shift(static_cast<size_t>(rows));
    for (int64_t o0 = 0; o0 < outer; o0 += rows) {
      const int64_t nr = std::min(rows, outer - o0);
      for (int64_t r = 0; r < nr; ++r) {
        const T* p = xp + (o0 + r) * red;
        T m = row_max(p, red);
        if (std::isinf(m)) m = 0;
        shift[size_t(r)] = m;
        T* tr = t.data() + r * red;
        for (int64_t j = 0; j < red; ++j) tr[j] = p[j] - m;
      }
      vector_map(VecFn::exp, t.data(), t.data(), nr * red);
      for (int64_t r = 0; r < nr; ++r) {
        const T* tr = t.data() + r * red;
        T s = 0;
        for (int64_t j = 0; j < red; ++j) s += tr[j];
        op[o0 + r] = std::log(s) + shift[size_t(r)];
      }
    }
  };
  if (x.dtype() == f32) run.template operator()<float>();
  else run.template operator()<double>();
  return true;
}

// The stride between rows of a 2-d operand that holds one value per row (its last axis has
// size 1 or stride 0), or -1 when it does not.
int64_t per_row_stride(const Tensor& t, int64_t rows) {
  if (t.ndim() != 2 || (t.shape()[1] != 1 && t.stride(1) != 0)) return -1;
  return t.shape()[0] == 1 && rows != 1 ? 0 : t.stride(0);
}

// (dy, x, y) -> dy * exp(x - y) (ops/fused.hpp): logsumexp's pullback in one pass, the
// exponentials through the SIMD polynomials a chunk of a row at a time, or, for a classifier's
// loss (x dense (rows, classes), dy and y one value per row), a batch of rows at a time, as in
// the forward.
bool logsumexp_backward(const KernelCall& c) {
  const Tensor &dy = c.in[0], &x = c.in[1], &y = c.in[2];
  if (!is_floating(x.dtype())) return false;
  auto run = [&]<class T>() {
    const T *dp = dy.data<T>(), *xp = x.data<T>(), *yp = y.data<T>();
    T* o = c.out.data<T>();
    const int64_t rows = x.ndim() == 2 ? x.shape()[0] : 0, red = x.ndim() == 2 ? x.shape()[1] : 0;
    const int64_t ds = per_row_stride(dy, rows), ys = per_row_stride(y, rows);
    if (red > 0 && red <= kLogsumexpChunk && ds >= 0 && ys >= 0 && x.is_contiguous() &&
        c.out.is_contiguous()) {
      const int64_t per = kLogsumexpChunk / red, batches = (rows + per - 1) / per;
      split_range(batches, team_for(rows * red), [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          T t[kLogsumexpChunk];
          const int64_t r0 = b * per, nr = std::min(per, rows - r0);
          for (int64_t r = 0; r < nr; ++r) {
            const T* xr = xp + (r0 + r) * red;
            const T yv = yp[(r0 + r) * ys];
            for (int64_t j = 0; j < red; ++j) t[r * red + j] = xr[j] - yv;
          }
          vector_map(VecFn::exp, t, t, nr * red);
          for (int64_t r = 0; r < nr; ++r) {
            T* orow = o + (r0 + r) * red;
            const T d = dp[(r0 + r) * ds];
            for (int64_t j = 0; j < red; ++j) orow[j] = d * t[r * red + j];
          }
        }
      });
      return;
    }
    run_rows<4>(layout_of<4>(c.out, {&dy, &x, &y}),
                [&](const int64_t* off, int64_t n, const int64_t* st) {
                  T t[kLogsumexpChunk];
                  for (int64_t j0 = 0; j0 < n; j0 += kLogsumexpChunk) {
                    const int64_t len = std::min(kLogsumexpChunk, n - j0);
                    const T* xr = xp + off[2] + j0 * st[2];
                    const T* yr = yp + off[3] + j0 * st[3];
                    for (int64_t j = 0; j < len; ++j) t[j] = xr[j * st[2]] - yr[j * st[3]];
                    vector_map(VecFn::exp, t, t, len);
                    const T* dr = dp + off[1] + j0 * st[1];
                    T* orow = o + off[0] + j0 * st[0];
                    for (int64_t j = 0; j < len; ++j) orow[j * st[0]] = dr[j * st[1]] * t[j];
                  }
                });
  };
  if (x.dtype() == f32) run.template operator()<float>();
  else run.template operator()<double>();
  return true;
}

// A row's sum as an OpenMP SIMD reduction, which vectorises (one running sum is a chain of
// dependent adds: a 128 x 1000 logitcrossentropy spent most of its time there, 1.8x libtorch's).
template <class T>
T lane_sum(const T* p, int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t j = 0; j < n; ++j) s += p[j];
  return s;
}

// The logits of a classifier's loss as the kernels below take them: (N, C) dense f32 or f64,
// labels (N,) dense i64 or i32, each label checked against C.
struct ClassProblem {
  int64_t rows = 0, classes = 0;
  std::vector<int64_t> labels;

  bool take(const Tensor& x, const Tensor& y) {
    if ((x.dtype() != f32 && x.dtype() != f64) || x.ndim() != 2 || !x.is_contiguous() ||
        y.ndim() != 1 || !y.is_contiguous() || (y.dtype() != i64 && y.dtype() != i32) ||
        y.shape()[0] != x.shape()[0])
      return false;
    rows = x.shape()[0];
    classes = x.shape()[1];
    labels.resize(size_t(rows));
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t v = y.dtype() == i64 ? y.data<int64_t>()[i] : int64_t(y.data<int32_t>()[i]);
      FX_CHECK(v >= 0 && v < classes, "fx::logitcrossentropy: label ", v, " at position ", i,
               " is out of range for ", classes, " classes");
      labels[size_t(i)] = v;
    }
    return true;
  }

  // fn(r0, nr, t, sums) for batches of rows r0..r0+nr: t holds exp(x - shift) of those rows
  // (shift each row's maximum, 0 where that is infinite, as in logsumexp) and sums their row
  // sums; shift[r] the shifts. Batches run across threads when the logits are large.
  template <class T, class Fn>
  void batches(const T* x, Fn fn) const {
    const int64_t per = std::max<int64_t>(1, kLogsumexpBatchValues / classes);
    const int64_t count = (rows + per - 1) / per;
    split_range(count, team_for(rows * classes), [&](int64_t b0, int64_t b1) {
      std::vector<T> t(static_cast<size_t>(per * classes));
      std::vector<T> shift(static_cast<size_t>(per)), sums(static_cast<size_t>(per));
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t r0 = b * per, nr = std::min(per, rows - r0);
        for (int64_t r = 0; r < nr; ++r) {
          const T* p = x + (r0 + r) * classes;
          T m = row_max(p, classes);
          if (std::isinf(m)) m = 0;
          shift[size_t(r)] = m;
          for (int64_t j = 0; j < classes; ++j) t[size_t(r * classes + j)] = p[j] - m;
        }
        vector_map(VecFn::exp, t.data(), t.data(), nr * classes);
        for (int64_t r = 0; r < nr; ++r)
          sums[size_t(r)] = lane_sum(t.data() + r * classes, classes);
        fn(r0, nr, t.data(), sums.data(), shift.data());
      }
    });
  }
};

// (x, labels) -> the mean over rows of logsumexp(x_i) - x_i[labels_i]: per-row losses, then
// their sum in row order (the same at any thread count).
bool logitcrossentropy(const KernelCall& c) {
  ClassProblem cp;
  if (!cp.take(c.in[0], c.in[1])) return false;
  auto run = [&]<class T>() {
    const T* x = c.in[0].data<T>();
    std::vector<double> loss(size_t(cp.rows));
    cp.batches(x, [&](int64_t r0, int64_t nr, const T*, T* sums, const T* shift) {
      vector_map(VecFn::log, sums, sums, nr);
      for (int64_t r = 0; r < nr; ++r) {
        const int64_t i = r0 + r;
        loss[size_t(i)] =
            double(sums[r] + shift[r]) - double(x[i * cp.classes + cp.labels[size_t(i)]]);
      }
    });
    double total = 0;
    for (double l : loss) total += l;
    *c.out.data<T>() = static_cast<T>(total / double(cp.rows));
  };
  if (c.in[0].dtype() == f32) run.template operator()<float>();
  else run.template operator()<double>();
  return true;
}

// (dy, x, labels) -> (softmax(x) - onehot(labels)) dy / N, dy 0-d: the loss's fused pullback.
bool logitcrossentropy_backward(const KernelCall& c) {
  const Tensor& dy = c.in[0];
  ClassProblem cp;
  if (dy.ndim() != 0 || dy.dtype() != c.in[1].dtype() || !c.out.is_contiguous() ||
      !cp.take(c.in[1], c.in[2]))
    return false;
  auto run = [&]<class T>() {
    const T g = T(double(*dy.data<T>()) / double(cp.rows));
    T* out = c.out.data<T>();
    cp.batches(c.in[1].data<T>(), [&](int64_t r0, int64_t nr, const T* t, const T* sums, const T*) {
      for (int64_t r = 0; r < nr; ++r) {
        const T scale = g / sums[r];
        T* o = out + (r0 + r) * cp.classes;
        for (int64_t j = 0; j < cp.classes; ++j) o[j] = t[r * cp.classes + j] * scale;
        o[cp.labels[size_t(r0 + r)]] -= g;
      }
    });
  };
  if (c.in[1].dtype() == f32) run.template operator()<float>();
  else run.template operator()<double>();
  return true;
}

}  // namespace

void register_reduce() {
  register_kernel(sum_p, Device::cpu, kCpuRank, sum<false>);
  register_kernel(sum_squares_p, Device::cpu, kCpuRank, sum<true>);
  register_kernel(max_p, Device::cpu, kCpuRank, extremum<true>);
  register_kernel(min_p, Device::cpu, kCpuRank, extremum<false>);
  register_kernel(logsumexp_p, Device::cpu, kCpuRank, logsumexp);
  register_kernel(logsumexp_backward_p, Device::cpu, kCpuRank, logsumexp_backward);
  register_kernel(logitcrossentropy_p, Device::cpu, kCpuRank, logitcrossentropy);
  register_kernel(logitcrossentropy_backward_p, Device::cpu, kCpuRank, logitcrossentropy_backward);
  register_kernel(any_p, Device::cpu, kCpuRank, any_all<true>);
  register_kernel(all_p, Device::cpu, kCpuRank, any_all<false>);
}

void register_elementwise();
void register_matmul();
void register_linear();
void register_conv();
void register_pool();
void register_complex();
void register_fft();
void register_index();
void register_linalg_solve();
void register_linalg_factor();

}  // namespace fx::backend::cpu

namespace fx::backend {
void register_cpu() {
  cpu::register_elementwise();
  cpu::register_reduce();
  cpu::register_matmul();
  cpu::register_linear();
  cpu::register_conv();
  cpu::register_pool();
  cpu::register_complex();
  cpu::register_fft();
  cpu::register_index();
  cpu::register_linalg_solve();
  cpu::register_linalg_factor();
}
}  // namespace fx::backend
