// Tuned CPU matmul through OpenBLAS and oneDNN: large products split C across OpenMP threads,
// small ones run in plain loops (tiny and narrow products), and both adjoints of a product come
// from one pass (matmul_backward). gemm.hpp exposes the pieces linear.cpp builds on. Anything
// else declines to the reference backend.
#include <cblas.h>
#include <dnnl.h>

#include <algorithm>
#include <complex>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/backends.hpp"
#include "backend/cpu/gemm.hpp"
#include "backend/cpu/loops.hpp"
#include "backend/cpu/thresholds.hpp"
#include "ops/fused.hpp"

namespace fx::backend::cpu {

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

// f32 products above kOnednnMinGemm and up to kOnednnMaxGemm (thresholds.hpp; m n k, about 64^3
// and 400^3) go to
// oneDNN's sgemm; smaller and larger ones and every other dtype to OpenBLAS. Measured on the
// 2-core AMD EPYC machine, each library called directly (f32, interleaved, best of 7): oneDNN ran
// the MLP's five products (m, n, k from 128 to 784) 5% faster than OpenBLAS at one thread and 9%
// faster at two, and square products 5-40% faster up to n = 256; from n = 512 OpenBLAS was 2-8%
// faster. Below about 64^3, OpenBLAS's small-matrix kernels (no packing, little code to bring
// into cache) won where it counts, in training: the MLP's classifier-layer pullback (dW = dz^T x,
// 10 x 128 x 128, and dx = dz W, 128 x 128 x 10) took 9.4-10.5 us at one thread against
// 15.1-16.0 us through oneDNN's sgemm, and 10.4-10.8 us against 14.5-14.8 us at two threads
// (the two side by side). Alone in a hot cache the two libraries ran these within 10% of each
// other.

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T* c, int64_t ldc) {
  auto A = ta ? CblasTrans : CblasNoTrans, B = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    if (m * n * k > kOnednnMinGemm && m * n * k <= kOnednnMaxGemm) {
      // Row-major, like cblas; inside one of our parallel regions its OpenMP build runs
      // single-threaded, as the OpenMP build of OpenBLAS does.
      const dnnl_status_t st =
          dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
      FX_CHECK(st == dnnl_success, "fx::matmul: oneDNN sgemm failed (status ", int(st), ") for (",
               m, ", ", k, ") @ (", k, ", ", n, ")");
      return;
    }
    cblas_sgemm(CblasRowMajor, A, B, int(m), int(n), int(k), 1.0f, a, int(lda), b, int(ldb), 0.0f,
                c, int(ldc));
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, A, B, int(m), int(n), int(k), 1.0, a, int(lda), b, int(ldb), 0.0, c,
                int(ldc));
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
// start its own threads inside ours, so it keeps its own threading). Our split never splits k:
// every element of C is summed by one call. Below kParallelGemm (m*n*k: a few microseconds of
// work) or kGemmRowsMin rows per thread (thresholds.hpp) the split costs more than it saves.
//
// When B is the largest of the three matrices (n > m and k > m: Dense's x @ W^T, W^T 784 x 256
// against a 128-row batch), C is split by columns instead, so each thread reads half of B, not
// all of it. For a layer's weight that half is the same every step, and it is the half that the
// thread's share of the optimiser loop (a static split of W's rows) and of W's gradient product
// (C = dW split by rows) touch too: W stays in that core's cache from one op to the next. With
// the row split every thread read all of W, half of it just written by the other core. A 2-thread
// MLP epoch with intra-op threading took 0.30 s instead of 0.33 s (1 thread: 0.49 s).
//
// An f32 product x @ W^T (A dense by rows, B a transposed weight) from about 50^3 to 400^3 goes
// to oneDNN's matmul primitive instead (onednn_matmul.cpp), on oneDNN's own threads. Another
// f32 product of that shape that oneDNN computes is better still left to oneDNN's threading:
// one dnnl_sgemm call from outside any parallel region, which runs on our OpenMP team, followed
// by the epilogue in a row split of its own. On the 2-core Intel Xeon VM, layer 1 of the
// Fashion-MNIST MLP (128 x 784 times 784 x 256) took 195-199 us that way against 205-214 us
// split by columns (each alone, in cache). In training, with 1- and 2-thread epochs of both
// kinds interleaved in one process (16 of each, in both orders), the median 2-thread speedup
// was 1.578-1.595 against 1.544 (a 2-thread step 768-772 us against 774-783). oneDNN's threading
// sums that product's terms in another order than its single-threaded call does, so such a
// product is not bit-identical at 1 and 2 threads (it agrees to rounding), nor is one through
// the matmul primitive; every other product is. For the other shapes our split was as fast or
// faster.
namespace {
// Whether OpenBLAS is the OpenMP build (openblas_get_parallel() == 2), whose calls run
// single-threaded inside our team instead of starting threads of their own.
bool blas_runs_in_our_team() {
  static const bool yes = openblas_get_parallel() == 2;
  return yes;
}
}  // namespace

// Threads for a product of m n k multiply-adds whose C is split into `split` rows (or columns).
int gemm_threads(int64_t split, int64_t mnk) {
  if (!blas_runs_in_our_team() || mnk < kParallelGemm || omp_in_parallel()) return 1;
  // At least one: a single-row product (a one-example gradient) must not get a team of none.
  return int(std::max<int64_t>(1, std::min<int64_t>(omp_get_max_threads(), split / kGemmRowsMin)));
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t,
                          const float*, int64_t, float*, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, const double*, int64_t,
                           const double*, int64_t, double*, int64_t);

namespace {

// gemm with the rows (or columns) of C split across threads (see above); each thread's call reads
// its block of rows of op(A) (columns of op(B)) in place, then runs epi on the block it wrote.
template <class T>
void gemm_split(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                const T* b, int64_t ldb, T* c, int64_t ldc, GemmEpilogue epi = {}) {
  const bool by_cols = n > m && k > m;
  const int threads = gemm_threads(by_cols ? n : m, m * n * k);
  if (threads <= 1) {
    gemm<T>(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
    return epi(0, m, 0, n);
  }
  if (by_cols && std::is_same_v<T, float> && m * n * k <= kOnednnMaxGemm) {
    gemm<T>(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);  // oneDNN's threads: see above
    if (!epi.fn) return;
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      epi(m * t / nt, m * (t + 1) / nt, 0, n);
    }
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    if (by_cols) {
      const int64_t c0 = n * t / nt, c1 = n * (t + 1) / nt;
      // Column j of op(B): b + j when B is stored k x n, b + j * ldb when it is stored n x k.
      if (c1 > c0)
        gemm<T>(ta, tb, m, c1 - c0, k, a, lda, b + (tb ? c0 * ldb : c0), ldb, c + c0, ldc);
      epi(0, m, c0, c1);
    } else {
      const int64_t r0 = m * t / nt, r1 = m * (t + 1) / nt;
      // Row r of op(A): a + r * lda when A is stored m x k, a + r when it is stored k x m.
      if (r1 > r0)
        gemm<T>(ta, tb, r1 - r0, n, k, a + (ta ? r0 : r0 * lda), lda, b, ldb, c + r0 * ldc, ldc);
      epi(r0, r1, 0, n);
    }
  }
}

// Products of at most kTinyGemm multiply-adds (thresholds.hpp) cost less as a plain loop than as
// a BLAS call (argument checks, thread dispatch): the LSTM overhead benchmark's 4-wide cells are
// the case in point.

template <class T>
void tiny_gemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t ars, int64_t acs, const T* b,
               int64_t brs, int64_t bcs, T* out) {
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

// Narrow products (thresholds.hpp): at most kNarrowCols columns of out and an inner dimension of
// at most kNarrowInner (the GMM's K batches of (N x D) @ (D x D), D = 10, forward and dA).
// OpenBLAS's small-matrix kernel ran these at 0.8 ns per output element with a batch in L2 but
// 1.35-1.4 ns once the (K, N, D) operand lived in L3 (it sweeps A once per panel of columns).
// Here a block of R rows of out stays in registers as whole vectors while p runs over the inner
// dimension, so A is read once and each packed row of B is used R times: 0.85 ns in L2 and L3
// alike (x86-64-v3). Each element sums its products in order p = 0..k-1. Wider rows (D = 16) ran
// slower than OpenBLAS and stay with it.

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

// kNarrowBlock<N> (thresholds.hpp), rows per block: enough independent accumulators to cover the
// multiply-add latency, few enough that they stay in the 16 vector registers (4 rows of 10
// spilled and ran 1.3x slower).
template <class T, int... Ns>
void narrow_dispatch(int64_t n, int64_t i0, int64_t i1, int64_t k, const T* a, int64_t ars,
                     int64_t acs, const T* b, T* out, std::integer_sequence<int, Ns...>) {
  ((n == Ns + 1 ? (narrow_rows<Ns + 1, kNarrowBlock<Ns + 1>, T>(i0, i1, k, a, ars, acs, b, out), 0)
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

// The narrow path (above) for out = a @ b, or false when it is not such a product.
bool narrow_matmul(const Tensor& a, const Tensor& b, const Tensor& out, GemmEpilogue epi) {
  if (a.dtype() != f32 && a.dtype() != f64) return false;
  const int nd = a.ndim();
  const int64_t m = a.shape()[nd - 2], k = a.shape()[nd - 1], n = b.shape()[nd - 1];
  if (!is_narrow(n, k)) return false;
  auto run = [&]<class T>() {
    int64_t batches = 1;
    for (int d = 0; d < nd - 2; ++d) batches *= a.shape()[d];
    const int64_t chunks = std::max<int64_t>(1, (m + kNarrowRowsPerTask - 1) / kNarrowRowsPerTask);
    const int threads =
        batches * m * n * k >= kParallelGemm && !omp_in_parallel() ? omp_get_max_threads() : 1;
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
                          out.data<T>() + bi * m * n);
        epi(i0, i1, 0, n);
      }
    });
  };
  if (a.dtype() == f32) run.template operator()<float>();
  else run.template operator()<double>();
  return true;
}

}  // namespace

// Batched products (a.ndim() > 2) come with no epilogue: its blocks index one 2-d C.
bool matmul_into(const Tensor& a, const Tensor& b, const Tensor& out, GemmEpilogue epi) {
  if (!is_inexact(a.dtype())) return false;
  const int nd = a.ndim();
  const int64_t m = a.shape()[nd - 2], k = a.shape()[nd - 1], n = b.shape()[nd - 1];
  if (nd == 2 && m * n * k <= kTinyGemm) {
    auto tiny = [&]<class T>() {
      tiny_gemm<T>(m, n, k, a.data<T>(), a.stride(0), a.stride(1), b.data<T>(), b.stride(0),
                   b.stride(1), out.data<T>());
      epi(0, m, 0, n);
    };
    return floating_or_complex(a.dtype(), tiny);
  }
  if (narrow_matmul(a, b, out, epi)) return true;
  if (onednn_matmul(a, b, out, epi)) return true;
  BlasMatrix ma, mb;
  if (!as_blas(m, k, a.stride(nd - 2), a.stride(nd - 1), ma) ||
      !as_blas(k, n, b.stride(nd - 2), b.stride(nd - 1), mb))
    return false;  // the reference handles exotic strides (rare: views of views)
  // OpenBLAS runs small products (m n k <= 100^3) in its low-overhead "small matrix" kernels,
  // except a plain A times a transposed B (x @ W^T, the usual layer and GMM product), which it
  // sends through the packing GEMM path: 2-4x slower at these sizes. A transposed B that small
  // is cheap to transpose into a scratch buffer (k n copies against m n k multiply-adds), so the
  // call becomes plain times plain.
  const bool pack_b = !ma.trans && mb.trans && m >= kPackBMinRows && m * n * k <= kSmallGemm;
  Tensor scratch = pack_b ? Tensor::empty({k, n}, a.dtype(), Device::cpu) : Tensor();
  auto run = [&]<class T>() {
    T* op = out.data<T>();
    if (k == 0) {
      std::fill_n(op, out.numel(), T(0));
      return epi(0, m, 0, n);
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
        gemm_split<T>(false, false, m, n, k, a.data<T>() + ao, ma.ld, s, std::max<int64_t>(n, 1),
                      op + bi * m * n, std::max<int64_t>(n, 1), epi);
        continue;
      }
      gemm_split<T>(ma.trans, mb.trans, m, n, k, a.data<T>() + ao, ma.ld, bp, mb.ld,
                    op + bi * m * n, std::max<int64_t>(n, 1), epi);
    }
  };
  return floating_or_complex(a.dtype(), run);
}

namespace {

bool matmul(const KernelCall& c) { return matmul_into(c.in[0], c.in[1], c.out, {}); }

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
  const bool in_place = c.attrs.get<MatmulBackwardAttrs>().dA_in_dy;
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
            narrow_outer_dispatch<T>(n, m, k, a.data<T>() + ao, a.stride(nd - 2), a.stride(nd - 1),
                                     gp, dy.stride(nd - 2), db + bi * k * n,
                                     std::make_integer_sequence<int, kNarrowCols>());
          else
            gemm_split<T>(at.trans, g.trans, k, n, m, a.data<T>() + ao, at.ld, gp, g.ld,
                          db + bi * k * n, n);
        };
        if (in_place) {
          weight_side();
          T* gw = const_cast<T*>(gp);  // dy is ours to overwrite (see above)
          if (is_narrow(k, n)) {
            narrow_product<T>(0, m, k, n, gp, dy.stride(nd - 2), 1, b.data<T>() + bo,
                              b.stride(nd - 1), b.stride(nd - 2), gw);
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

void register_matmul() {
  register_kernel(matmul_p, Device::cpu, kCpuRank, matmul);
  register_kernel(matmul_backward_p, Device::cpu, kCpuRank, matmul_backward);
}

}  // namespace fx::backend::cpu
