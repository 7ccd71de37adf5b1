// Tuned CPU sum (and sum_squares: the same loops on squared terms), max and min over one run of
// adjacent axes of a contiguous input, and matmul through OpenBLAS and oneDNN (rows of large
// products split across OpenMP threads). Anything else declines to the reference backend.
#include <cblas.h>
#include <dnnl.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/backends.hpp"
#include "backend/cpu/loops.hpp"
#include "backend/cpu/vector_math.hpp"
#include "ops/fused.hpp"

namespace fx::backend::cpu {
namespace {

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

// A reduction whose reduced axes are one run of adjacent dims of a contiguous input, seen as an
// (outer, reduced, inner) array: out[o][j] = reduce over r of x[o][r][j]. Sums over the last
// axes (inner = 1), the first ones (outer = 1) and the middle (unbroadcasting a batch) all fit.
struct SplitReduction {
  int64_t outer = 1, reduced = 1, inner = 1;
};

bool split_reduction(const KernelCall& c, SplitReduction& r) {
  const Tensor& x = c.in[0];
  if (!x.is_contiguous() || x.ndim() == 0) return false;
  const uint64_t mask = uint64_t(c.params.i[0]);
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

// Below this many elements a row (or block) is short enough that per-row loop overhead dominates.
constexpr int64_t kShortRun = 8;

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

// Rows of 8..16 values: the widths a sum over a short last axis (the GMM's D = 10) or an
// unbroadcast of a short trailing axis sees.
constexpr int64_t kFixedRowMax = 16;

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
      constexpr int64_t kBlock = 1024;  // outputs per block: stays in L1 across the j sweeps
      split_range((outer + kBlock - 1) / kBlock, threads, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0 * kBlock; b < std::min(outer, b1 * kBlock); b += kBlock) {
          const int64_t e = std::min(outer, b + kBlock);
          for (int64_t o = b; o < e; ++o)  // 0 + x: -0 sums to +0
            op[o] = T(0) + term<Square>(xp[o * red]);
          for (int64_t j = 1; j < red; ++j)
            for (int64_t o = b; o < e; ++o) op[o] += term<Square>(xp[o * red + j]);
        }
      });
    } else if (inner == 1 && red >= kShortRun && red <= kFixedRowMax &&
               std::is_same_v<T, Acc>) {
      with_width(red, [&](auto w) {  // red is 8..16 here
        split_range(outer, threads, [&](int64_t o0, int64_t o1) {
          sum_fixed_rows<decltype(w)::value, Square>(xp + o0 * red, o1 - o0, op + o0);
        });
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
              with_width(inner, [&](auto w) {
                sum_short_rows<decltype(w)::value, Square>(p, red, out);
              });
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
    // Over the last axes: each block is one contiguous run of red values.
    std::vector<T> t(static_cast<size_t>(red));
    for (int64_t o = 0; o < outer; ++o) {
      const T* p = xp + o * red;
      T m = p[0];
      for (int64_t j = 1; j < red; ++j) m = (p[j] > m || p[j] != p[j]) ? p[j] : m;
      if (std::isinf(m)) m = 0;
      for (int64_t j = 0; j < red; ++j) t[size_t(j)] = p[j] - m;
      vector_map(VecFn::exp, t.data(), t.data(), red);
      T s = 0;
      for (int64_t j = 0; j < red; ++j) s += t[size_t(j)];
      op[o] = std::log(s) + m;
    }
  };
  if (x.dtype() == f32) run.template operator()<float>();
  else run.template operator()<double>();
  return true;
}

// (dy, x, y) -> dy * exp(x - y) (ops/fused.hpp): logsumexp's pullback in one pass, the
// exponentials through the SIMD polynomials a chunk of a row at a time.
bool logsumexp_backward(const KernelCall& c) {
  const Tensor &dy = c.in[0], &x = c.in[1], &y = c.in[2];
  if (!is_floating(x.dtype())) return false;
  auto run = [&]<class T>() {
    const T *dp = dy.data<T>(), *xp = x.data<T>(), *yp = y.data<T>();
    T* o = c.out.data<T>();
    run_rows<4>(layout_of<4>(c.out, {&dy, &x, &y}),
                [&](const int64_t* off, int64_t n, const int64_t* st) {
                  constexpr int64_t kChunk = 256;
                  T t[kChunk];
                  for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
                    const int64_t len = std::min(kChunk, n - j0);
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

// A matrix operand as BLAS sees it: transposed or not, with a leading dimension.
struct BlasMatrix {
  bool trans;
  int64_t ld;
};

// Row-major (rows x cols) view with strides (rs, cs): usable by BLAS when one stride is 1.
bool as_blas(int64_t rows, int64_t cols, int64_t rs, int64_t cs, BlasMatrix& m) {
  if (cs == 1 && (rs >= std::max<int64_t>(cols, 1) || rows == 1)) {
    m = {false, std::max<int64_t>(rows == 1 ? cols : rs, 1)};
    return true;
  }
  if (rs == 1 && (cs >= std::max<int64_t>(rows, 1) || cols == 1)) {
    m = {true, std::max<int64_t>(cols == 1 ? rows : cs, 1)};
    return true;
  }
  return false;
}

// f32 products up to this size (m n k, about 400^3) go to oneDNN's sgemm, larger ones and every
// other dtype to OpenBLAS. Measured on the 2-core AMD EPYC machine, each library called directly
// (f32, interleaved, best of 7): oneDNN ran the MLP's five products (m, n, k from 128 to 784)
// 5% faster than OpenBLAS at one thread and 9% faster at two, and square products 5-40% faster
// up to n = 256; from n = 512 OpenBLAS was 2-8% faster.
constexpr int64_t kOnednnMaxGemm = int64_t(1) << 26;

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
          const T* b, int64_t ldb, T* c, int64_t ldc) {
  auto A = ta ? CblasTrans : CblasNoTrans, B = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    if (m * n * k <= kOnednnMaxGemm) {
      // Row-major, like cblas; inside one of our parallel regions its OpenMP build runs
      // single-threaded, as the OpenMP build of OpenBLAS does.
      const dnnl_status_t st =
          dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
      FX_CHECK(st == dnnl_success, "fx::matmul: oneDNN sgemm failed (status ", int(st), ") for (",
               m, ", ", k, ") @ (", k, ", ", n, ")");
      return;
    }
    cblas_sgemm(CblasRowMajor, A, B, int(m), int(n), int(k), 1.0f, a, int(lda), b, int(ldb),
                0.0f, c, int(ldc));
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, A, B, int(m), int(n), int(k), 1.0, a, int(lda), b, int(ldb), 0.0,
                c, int(ldc));
  } else {  // complex: alpha and beta by pointer; OpenBLAS takes the interleaved layout as is
    const T one = 1, zero = 0;
    using R = typename T::value_type;
    if constexpr (std::is_same_v<R, float>)
      cblas_cgemm(CblasRowMajor, A, B, int(m), int(n), int(k), &one, a, int(lda), b, int(ldb),
                  &zero, c, int(ldc));
    else
      cblas_zgemm(CblasRowMajor, A, B, int(m), int(n), int(k), &one, a, int(lda), b, int(ldb),
                  &zero, c, int(ldc));
  }
}

// OpenBLAS's own threading scaled an MLP's products (m, n, k from 10 to 784) only 1.0-1.5x on two
// cores: its threads wait on each other's packed panels. Giving each OpenMP thread its own block
// of rows of C, computed by one single-threaded call, scaled the same products 1.6-1.7x (an
// OpenMP build of OpenBLAS runs single-threaded inside a parallel region; a pthread build would
// start its own threads inside ours, so it keeps its own threading). k is never split: every
// element of C is summed by one call. Below kParallelGemm (m*n*k: a few microseconds of work) or
// kGemmRowsMin rows per thread the split costs more than it saves.
//
// When B is the largest of the three matrices (n > m and k > m: Dense's x @ W^T, W^T 784 x 256
// against a 128-row batch), C is split by columns instead, so each thread reads half of B, not
// all of it. For a layer's weight that half is the same every step, and it is the half that the
// thread's share of the optimiser loop (a static split of W's rows) and of W's gradient product
// (C = dW split by rows) touch too: W stays in that core's cache from one op to the next. With
// the row split every thread read all of W, half of it just written by the other core. A 2-thread
// MLP epoch with intra-op threading took 0.30 s instead of 0.33 s (1 thread: 0.49 s).
constexpr int64_t kParallelGemm = int64_t(1) << 17;
constexpr int64_t kGemmRowsMin = 4;

// Whether OpenBLAS is the OpenMP build (openblas_get_parallel() == 2), whose calls run
// single-threaded inside our team instead of starting threads of their own.
bool blas_runs_in_our_team() {
  static const bool yes = openblas_get_parallel() == 2;
  return yes;
}

// Threads for a product of m n k multiply-adds whose C is split into `split` rows (or columns).
int gemm_threads(int64_t split, int64_t mnk) {
  if (!blas_runs_in_our_team() || mnk < kParallelGemm || omp_in_parallel()) return 1;
  return int(std::min<int64_t>(omp_get_max_threads(), split / kGemmRowsMin));
}

// gemm with the rows (or columns) of C split across threads (see above); each thread's call reads
// its block of rows of op(A) (columns of op(B)) in place.
template <class T>
void gemm_split(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
               const T* b, int64_t ldb, T* c, int64_t ldc) {
  const bool by_cols = n > m && k > m;
  const int threads = gemm_threads(by_cols ? n : m, m * n * k);
  if (threads <= 1) return gemm<T>(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    if (by_cols) {
      const int64_t c0 = n * t / nt, c1 = n * (t + 1) / nt;
      // Column j of op(B): b + j when B is stored k x n, b + j * ldb when it is stored n x k.
      if (c1 > c0)
        gemm<T>(ta, tb, m, c1 - c0, k, a, lda, b + (tb ? c0 * ldb : c0), ldb, c + c0, ldc);
    } else {
      const int64_t r0 = m * t / nt, r1 = m * (t + 1) / nt;
      // Row r of op(A): a + r * lda when A is stored m x k, a + r when it is stored k x m.
      if (r1 > r0)
        gemm<T>(ta, tb, r1 - r0, n, k, a + (ta ? r0 : r0 * lda), lda, b, ldb, c + r0 * ldc, ldc);
    }
  }
}

// Products this small cost less as a plain loop than as a BLAS call (argument checks, thread
// dispatch): the LSTM overhead benchmark's 4-wide cells are the case in point.
constexpr int64_t kTinyGemm = 512;  // m * n * k
constexpr int64_t kSmallGemm = 1000000;  // m * n * k: OpenBLAS's small-matrix kernel range

template <class T>
void tiny_gemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t ars, int64_t acs,
               const T* b, int64_t brs, int64_t bcs, T* out) {
  if (bcs == 1) {
    // Rows of b are contiguous: accumulate whole rows of out so the inner loop vectorises. Each
    // element still sums its products in order p = 0..k-1, as the loop below does.
    for (int64_t i = 0; i < m; ++i) {
      T* o = out + i * n;
      for (int64_t j = 0; j < n; ++j) o[j] = 0;
      for (int64_t p = 0; p < k; ++p) {
        const T av = a[i * ars + p * acs];
        const T* br = b + p * brs;
        for (int64_t j = 0; j < n; ++j) o[j] += av * br[j];
      }
    }
    return;
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += a[i * ars + p * acs] * b[p * brs + j * bcs];
      out[i * n + j] = acc;
    }
}

// Narrow products: at most kNarrowCols columns of out and an inner dimension of at most
// kNarrowInner (the GMM's K batches of (N x D) @ (D x D), D = 10, forward and dA). OpenBLAS's
// small-matrix kernel ran these at 0.8 ns per output element with a batch in L2 but 1.35-1.4 ns
// once the (K, N, D) operand lived in L3 (it sweeps A once per panel of columns). Here a block of
// R rows of out stays in registers as whole vectors while p runs over the inner dimension, so A
// is read once and each packed row of B is used R times: 0.85 ns in L2 and L3 alike (x86-64-v3).
// Each element sums its products in order p = 0..k-1. Wider rows (D = 16) ran slower than
// OpenBLAS and stay with it.
constexpr int64_t kNarrowCols = 12;
constexpr int64_t kNarrowInner = 16;
constexpr int64_t kNarrowRowsPerTask = 256;  // rows of out per task when threads split the work

// out rows [i0, i1) (row-major, N columns) = A(i, :) b, A(i, p) = a[i ars + p acs], b packed
// row-major k x N.
template <int N, int R, class T>
void narrow_rows(int64_t i0, int64_t i1, int64_t k, const T* a, int64_t ars, int64_t acs,
                 const T* b, T* out) {
  int64_t i = i0;
  for (; i + R <= i1; i += R) {
    T acc[R][N] = {};
    for (int64_t p = 0; p < k; ++p) {
      const T* br = b + p * N;
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const T av = a[(i + r) * ars + p * acs];
        for (int j = 0; j < N; ++j) acc[r][j] = std::fma(av, br[j], acc[r][j]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < N; ++j) out[(i + r) * N + j] = acc[r][j];
  }
  for (; i < i1; ++i) {
    T acc[N] = {};
    for (int64_t p = 0; p < k; ++p) {
      const T av = a[i * ars + p * acs];
      for (int j = 0; j < N; ++j) acc[j] = std::fma(av, b[p * N + j], acc[j]);
    }
    for (int j = 0; j < N; ++j) out[i * N + j] = acc[j];
  }
}

// Rows per block: enough independent accumulators to cover the multiply-add latency, few
// enough that they stay in the 16 vector registers (4 rows of 10 spilled and ran 1.3x slower).
template <int N>
inline constexpr int kNarrowBlock = N <= 4 ? 8 : N <= 8 ? 4 : 3;

template <class T, int... Ns>
void narrow_dispatch(int64_t n, int64_t i0, int64_t i1, int64_t k, const T* a, int64_t ars,
                     int64_t acs, const T* b, T* out, std::integer_sequence<int, Ns...>) {
  ((n == Ns + 1 ? (narrow_rows<Ns + 1, kNarrowBlock<Ns + 1>, T>(i0, i1, k, a, ars, acs, b, out),
                   0)
                : 0),
   ...);
}

bool is_narrow(int64_t n, int64_t k) {
  return n >= 1 && n <= kNarrowCols && k >= 1 && k <= kNarrowInner;
}

// out rows [i0, i1) of A B (out row-major m x n, A(i, p) = a[i ars + p acs], B(p, j) =
// b[p brs + j bcs]) for a narrow product (is_narrow(n, k)).
template <class T>
void narrow_product(int64_t i0, int64_t i1, int64_t n, int64_t k, const T* a, int64_t ars,
                    int64_t acs, const T* b, int64_t brs, int64_t bcs, T* out) {
  T packed[kNarrowCols * kNarrowInner];
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) packed[p * n + j] = b[p * brs + j * bcs];
  narrow_dispatch<T>(n, i0, i1, k, a, ars, acs, packed, out,
                     std::make_integer_sequence<int, kNarrowCols>());
}

// The weight-side half of a narrow product's backward, dB = A^T G (k x N, row-major): A(i, p) =
// a[i ars + p acs] and G(i, j) = g[i grs + j] over a long i < m. R rows of dB stay in registers
// while i runs over m, so each row of G is loaded once per R rows of dB. OpenBLAS packed both
// operands for every batch of these (10 x 1000) @ (1000 x 10) products: the GMM's (d = 10,
// K = 25) gradient spent a quarter of its time there, 2.4x the time this takes.
template <int N, int R, class T>
void narrow_outer_rows(int64_t p0, int64_t m, const T* a, int64_t ars, int64_t acs, const T* g,
                       int64_t grs, T* out) {
  // Rows padded to whole 32-byte vectors: with N = 10 unpadded, GCC's vectoriser interleaved the
  // rows' partial vectors through shuffles and stack spills, 3x slower.
  constexpr int W = int(32 / sizeof(T)), P = (N + W - 1) / W * W;
  T acc[R][P] = {};
  for (int64_t i = 0; i < m; ++i) {
    T gi[P] = {};
    for (int j = 0; j < N; ++j) gi[j] = g[i * grs + j];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const T av = a[i * ars + (p0 + r) * acs];
      for (int j = 0; j < P; ++j) acc[r][j] = std::fma(av, gi[j], acc[r][j]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < N; ++j) out[(p0 + r) * N + j] = acc[r][j];
}

template <int N, class T>
void narrow_outer(int64_t m, int64_t k, const T* a, int64_t ars, int64_t acs, const T* g,
                  int64_t grs, T* out) {
  constexpr int R = kNarrowBlock<N> + 1;  // as narrow_rows, plus one: no B row to hold here
  int64_t p = 0;
  for (; p + R <= k; p += R) narrow_outer_rows<N, R, T>(p, m, a, ars, acs, g, grs, out);
  for (; p + 2 <= k; p += 2) narrow_outer_rows<N, 2, T>(p, m, a, ars, acs, g, grs, out);
  for (; p < k; ++p) narrow_outer_rows<N, 1, T>(p, m, a, ars, acs, g, grs, out);
}

template <class T, int... Ns>
void narrow_outer_dispatch(int64_t n, int64_t m, int64_t k, const T* a, int64_t ars, int64_t acs,
                           const T* g, int64_t grs, T* out, std::integer_sequence<int, Ns...>) {
  ((n == Ns + 1 ? (narrow_outer<Ns + 1, T>(m, k, a, ars, acs, g, grs, out), 0) : 0), ...);
}

// The narrow path (above) for c, or false when c is not such a product.
bool narrow_matmul(const KernelCall& c) {
  const Tensor &a = c.in[0], &b = c.in[1];
  if (a.dtype() != f32 && a.dtype() != f64) return false;
  const int nd = a.ndim();
  const int64_t m = a.shape()[nd - 2], k = a.shape()[nd - 1], n = b.shape()[nd - 1];
  if (!is_narrow(n, k)) return false;
  auto run = [&]<class T>() {
    int64_t batches = 1;
    for (int d = 0; d < nd - 2; ++d) batches *= a.shape()[d];
    const int64_t chunks = std::max<int64_t>(1, (m + kNarrowRowsPerTask - 1) / kNarrowRowsPerTask);
    const int threads = batches * m * n * k >= kParallelGemm && !omp_in_parallel()
                            ? omp_get_max_threads()
                            : 1;
    split_range(batches * chunks, threads, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t bi = t / chunks, ch = t % chunks;
        int64_t ao = 0, bo = 0, rem = bi;
        for (int d = nd - 3; d >= 0; --d) {
          ao += (rem % a.shape()[d]) * a.stride(d);
          bo += (rem % a.shape()[d]) * b.stride(d);
          rem /= a.shape()[d];
        }
        const int64_t i0 = ch * kNarrowRowsPerTask, i1 = std::min(m, i0 + kNarrowRowsPerTask);
        narrow_product<T>(i0, i1, n, k, a.data<T>() + ao, a.stride(nd - 2), a.stride(nd - 1),
                          b.data<T>() + bo, b.stride(nd - 2), b.stride(nd - 1),
                          c.out.data<T>() + bi * m * n);
      }
    });
  };
  if (a.dtype() == f32) run.template operator()<float>();
  else run.template operator()<double>();
  return true;
}

bool matmul(const KernelCall& c) {
  const Tensor &a = c.in[0], &b = c.in[1];
  if (!is_inexact(a.dtype())) return false;
  const int nd = a.ndim();
  const int64_t m = a.shape()[nd - 2], k = a.shape()[nd - 1], n = b.shape()[nd - 1];
  if (nd == 2 && m * n * k <= kTinyGemm) {
    auto tiny = [&]<class T>() {
      tiny_gemm<T>(m, n, k, a.data<T>(), a.stride(0), a.stride(1), b.data<T>(), b.stride(0),
                   b.stride(1), c.out.data<T>());
    };
    return floating_or_complex(a.dtype(), tiny);
  }
  if (narrow_matmul(c)) return true;
  BlasMatrix ma, mb;
  if (!as_blas(m, k, a.stride(nd - 2), a.stride(nd - 1), ma) ||
      !as_blas(k, n, b.stride(nd - 2), b.stride(nd - 1), mb))
    return false;  // the reference handles exotic strides (rare: views of views)
  // OpenBLAS runs small products (m n k <= 100^3) in its low-overhead "small matrix" kernels,
  // except a plain A times a transposed B (x @ W^T, the usual layer and GMM product), which it
  // sends through the packing GEMM path: 2-4x slower at these sizes. A transposed B that small
  // is cheap to transpose into a scratch buffer (k n copies against m n k multiply-adds), so the
  // call becomes plain times plain.
  const bool pack_b = !ma.trans && mb.trans && m >= 8 && m * n * k <= kSmallGemm;
  Tensor scratch = pack_b ? Tensor::empty({k, n}, a.dtype(), Device::cpu) : Tensor();
  auto run = [&]<class T>() {
    T* op = c.out.data<T>();
    if (k == 0) {
      std::fill_n(op, c.out.numel(), T(0));
      return;
    }
    int64_t batches = 1;
    for (int d = 0; d < nd - 2; ++d) batches *= a.shape()[d];
    for (int64_t bi = 0; bi < batches; ++bi) {
      int64_t ao = 0, bo = 0, rem = bi;
      for (int d = nd - 3; d >= 0; --d) {
        ao += (rem % a.shape()[d]) * a.stride(d);
        bo += (rem % a.shape()[d]) * b.stride(d);
        rem /= a.shape()[d];
      }
      const T* bp = b.data<T>() + bo;
      if (pack_b) {  // b(p, j) = bp[j * ld + p]
        T* s = scratch.data<T>();
        for (int64_t p = 0; p < k; ++p)
          for (int64_t j = 0; j < n; ++j) s[p * n + j] = bp[j * mb.ld + p];
        gemm_split<T>(false, false, m, n, k, a.data<T>() + ao, ma.ld, s,
                     std::max<int64_t>(n, 1), op + bi * m * n, std::max<int64_t>(n, 1));
        continue;
      }
      gemm_split<T>(ma.trans, mb.trans, m, n, k, a.data<T>() + ao, ma.ld, bp, mb.ld,
                   op + bi * m * n, std::max<int64_t>(n, 1));
    }
  };
  return floating_or_complex(a.dtype(), run);
}

// (dy, a, b) -> [dA | dB] (ops/fused.hpp): per batch dA = dy b^T, then dB = a^T dy while that
// batch of dy is still in cache. Declines what BLAS cannot take (the reference runs it).
// With params.i[0] set (ops/linalg.cpp: dy is a contiguous cotangent nothing else holds, shaped
// like dA), out is dB alone and dA overwrites dy: dB is taken first, then the narrow kernel
// writes each block of rows of dA over the rows of dy it has just read. A fresh (K, N, D) dA
// cost the GMM a read of its cache lines before the write (2.0 ms against 0.8 ms in place for
// 16 MB from L3); a product that is not narrow goes through a scratch batch instead.
bool matmul_backward(const KernelCall& c) {
  const Tensor &dy = c.in[0], &a = c.in[1], &b = c.in[2];
  if (a.dtype() != f32 && a.dtype() != f64) return false;
  const int nd = a.ndim();
  const int64_t m = a.shape()[nd - 2], k = a.shape()[nd - 1], n = b.shape()[nd - 1];
  if (m == 0 || k == 0 || n == 0) return false;
  if (nd == 2 && m * n * k <= kTinyGemm) {  // as in matmul: a plain loop beats a BLAS call
    auto tiny = [&]<class T>() {
      T* da = c.out.data<T>();
      const T *gp = dy.data<T>(), *ap = a.data<T>(), *bp = b.data<T>();
      tiny_gemm<T>(m, k, n, gp, dy.stride(0), dy.stride(1), bp, b.stride(1), b.stride(0), da);
      tiny_gemm<T>(k, n, m, ap, a.stride(1), a.stride(0), gp, dy.stride(0), dy.stride(1),
                   da + m * k);
    };
    if (a.dtype() == f32) tiny.template operator()<float>();
    else tiny.template operator()<double>();
    return true;
  }
  BlasMatrix g, bt, at;  // dy (m x n), b^T (n x k), a^T (k x m)
  if (!as_blas(m, n, dy.stride(nd - 2), dy.stride(nd - 1), g) ||
      !as_blas(n, k, b.stride(nd - 1), b.stride(nd - 2), bt) ||
      !as_blas(k, m, a.stride(nd - 1), a.stride(nd - 2), at))
    return false;
  const bool in_place = c.params.i[0] != 0;
  auto run = [&]<class T>() {
    int64_t batches = 1;
    for (int d = 0; d < nd - 2; ++d) batches *= a.shape()[d];
    T* da = c.out.data<T>();
    T* db = in_place ? da : da + batches * m * k;
    // Threads take whole batches; each product then runs single-threaded inside the team.
    const int threads = blas_runs_in_our_team() && batches > 1 &&
                                batches * m * n * k >= kParallelGemm && !omp_in_parallel()
                            ? omp_get_max_threads()
                            : 1;
    split_range(batches, threads, [&](int64_t b0, int64_t b1) {
      for (int64_t bi = b0; bi < b1; ++bi) {
        int64_t go = 0, ao = 0, bo = 0, rem = bi;
        for (int d = nd - 3; d >= 0; --d) {
          const int64_t i = rem % a.shape()[d];
          go += i * dy.stride(d);
          ao += i * a.stride(d);
          bo += i * b.stride(d);
          rem /= a.shape()[d];
        }
        const T* gp = dy.data<T>() + go;
        // dB = a^T dy (k x n): the narrow kernel when both are small and dy's rows are dense.
        auto weight_side = [&] {
          if (is_narrow(n, k) && dy.stride(nd - 1) == 1)
            narrow_outer_dispatch<T>(n, m, k, a.data<T>() + ao, a.stride(nd - 2),
                                     a.stride(nd - 1), gp, dy.stride(nd - 2), db + bi * k * n,
                                     std::make_integer_sequence<int, kNarrowCols>());
          else
            gemm_split<T>(at.trans, g.trans, k, n, m, a.data<T>() + ao, at.ld, gp, g.ld,
                         db + bi * k * n, n);
        };
        if (in_place) {
          weight_side();
          T* gw = const_cast<T*>(gp);  // dy is ours to overwrite (see above)
          if (is_narrow(k, n)) {
            narrow_product<T>(0, m, k, n, gp, dy.stride(nd - 2), 1, b.data<T>() + bo, b.stride(nd - 1),
                              b.stride(nd - 2), gw);
          } else {
            std::vector<T> scratch(static_cast<size_t>(m * k));
            gemm_split<T>(g.trans, bt.trans, m, k, n, gp, g.ld, b.data<T>() + bo, bt.ld,
                         scratch.data(), k);
            std::copy(scratch.begin(), scratch.end(), gw);
          }
          continue;
        }
        if (is_narrow(k, n))  // dA's rows have k columns and sum over n (see narrow_matmul)
          narrow_product<T>(0, m, k, n, gp, dy.stride(nd - 2), dy.stride(nd - 1), b.data<T>() + bo,
                            b.stride(nd - 1), b.stride(nd - 2), da + bi * m * k);
        else
          gemm_split<T>(g.trans, bt.trans, m, k, n, gp, g.ld, b.data<T>() + bo, bt.ld,
                       da + bi * m * k, k);
        weight_side();
      }
    });
  };
  if (a.dtype() == f32) run.template operator()<float>();
  else run.template operator()<double>();
  return true;
}

}  // namespace

void register_reduce_linalg() {
  register_kernel(matmul_backward_p, Device::cpu, kCpuRank, matmul_backward);
  register_kernel(sum_p, Device::cpu, kCpuRank, sum<false>);
  register_kernel(sum_squares_p, Device::cpu, kCpuRank, sum<true>);
  register_kernel(max_p, Device::cpu, kCpuRank, extremum<true>);
  register_kernel(min_p, Device::cpu, kCpuRank, extremum<false>);
  register_kernel(logsumexp_p, Device::cpu, kCpuRank, logsumexp);
  register_kernel(logsumexp_backward_p, Device::cpu, kCpuRank, logsumexp_backward);
  register_kernel(matmul_p, Device::cpu, kCpuRank, matmul);
}

void register_elementwise();
void register_complex();
void register_fft();
void register_index();

}  // namespace fx::backend::cpu

namespace fx::backend {
void register_cpu() {
  cpu::register_elementwise();
  cpu::register_reduce_linalg();
  cpu::register_complex();
  cpu::register_fft();
  cpu::register_index();
}
}  // namespace fx::backend
