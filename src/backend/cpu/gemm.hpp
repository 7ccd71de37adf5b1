// The CPU backend's matrix products (matmul.cpp), for kernels that build on them (linear.cpp).
//
//   // C = A B with work on each block of C as soon as a thread has computed it:
//   GemmEpilogue epi{[](const void* ctx, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {...},
//                    &state};
//   matmul_into(a, b, out, epi);              // a (m, k), b (k, n), out (m, n) dense
//   // Or single BLAS calls inside a caller's own parallel region:
//   BlasMatrix ma;
//   if (as_blas(m, k, a.stride(0), a.stride(1), ma)) gemm<float>(ma.trans, false, ...);
#pragma once
#include <cstdint>

#include "fluxion/core/tensor.hpp"
#include "fluxion/ops/linalg.hpp"

namespace fx::backend::cpu {

// A matrix operand as BLAS sees it: transposed or not, with a leading dimension.
struct BlasMatrix {
  bool trans;
  int64_t ld;
};

// Row-major (rows x cols) view with strides (rs, cs): usable by BLAS when one stride is 1.
bool as_blas(int64_t rows, int64_t cols, int64_t rs, int64_t cs, BlasMatrix& m);

// One single-threaded-inside-our-team BLAS call, C = op(A) op(B), row-major (float: oneDNN from
// about 64^3 to 400^3 multiply-adds, OpenBLAS outside that; double: OpenBLAS). Instantiated for
// float and double.
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T* c, int64_t ldc);

// Threads worth using for a product of m n k multiply-adds whose output is split into `split`
// rows or columns: 1 below a few microseconds of work, inside a parallel region, or when BLAS
// threads itself.
int gemm_threads(int64_t split, int64_t mnk);

// Work on a block of C (rows [r0, r1), columns [c0, c1)) run by the thread that computed it,
// right after, while the block is in that core's cache: a layer's bias and activation, without a
// parallel region of their own or a second pass over C from memory.
struct GemmEpilogue {
  void (*fn)(const void* ctx, int64_t r0, int64_t r1, int64_t c0, int64_t c1) = nullptr;
  const void* ctx = nullptr;
  // The same work described, for a kernel that fuses it into its own loops (oneDNN's post-ops):
  // C += bias (one value per column, dense; null for none), then act. Set by whoever sets fn to
  // a bias and activation; an epilogue without a description is run through fn.
  bool described = false;
  const Tensor* bias = nullptr;
  Epilogue act = Epilogue::identity;
  void operator()(int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
    if (fn && r1 > r0 && c1 > c0) fn(ctx, r0, r1, c0, c1);
  }
};

// out = a @ b, then the described epilogue, through oneDNN's matmul primitive
// (onednn_matmul.cpp): taken for the f32 products of a layer's shape (a dense by rows, b a
// transposed weight) that it runs faster than sgemm; false (out untouched) for everything else.
bool onednn_matmul(const Tensor& a, const Tensor& b, const Tensor& out, const GemmEpilogue& epi);

// The matmul kernel: out = a @ b for 2-d a (m, k) and b (k, n) of one floating dtype and any
// BLAS-compatible strides, out dense (m, n); then epi on blocks covering out once. Returns false
// (out untouched) for what it declines: other dtypes, strides BLAS cannot take.
bool matmul_into(const Tensor& a, const Tensor& b, const Tensor& out, GemmEpilogue epi);

}  // namespace fx::backend::cpu
