// Tuned CPU sum over leading or trailing axes of contiguous input, and matmul through OpenBLAS.
// Anything else declines to the reference backend.
#include <cblas.h>

#include <cstring>
#include <vector>

#include "backend/backends.hpp"
#include "backend/cpu/loops.hpp"

namespace fx::backend::cpu {
namespace {

// Sum when the reduced axes form a prefix or a suffix of a contiguous input.
bool sum(const KernelCall& c) {
  const Tensor& x = c.in[0];
  if (!x.is_contiguous() || x.ndim() == 0) return false;
  const uint64_t mask = uint64_t(c.params.i[0]);
  const int nd = x.ndim();
  int lead = 0, trail = 0;
  while (lead < nd && ((mask >> lead) & 1u)) ++lead;
  while (trail < nd && ((mask >> (nd - 1 - trail)) & 1u)) ++trail;
  const int nred = __builtin_popcountll(mask);
  const bool suffix = trail == nred, prefix = lead == nred;
  if (!prefix && !suffix) return false;
  // suffix: outer kept dims, inner reduced; prefix: outer reduced dims, inner kept.
  const int split = suffix ? nd - trail : lead;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < nd; ++d) (d < split ? outer : inner) *= x.shape()[d];
  auto run = [&]<class T>() {
    const T* xp = x.data<T>();
    T* op = c.out.data<T>();
    if (suffix) {  // out[o] = sum of a contiguous block
#pragma omp parallel for if (outer * inner >= kParallelMin)
      for (int64_t o = 0; o < outer; ++o) {
        double acc = 0;
        const T* p = xp + o * inner;
        for (int64_t j = 0; j < inner; ++j) acc += p[j];
        op[o] = T(acc);
      }
    } else {  // out[j] = sum over rows: accumulate row by row (unit stride)
      std::memset(op, 0, size_t(inner) * sizeof(T));
      for (int64_t r = 0; r < outer; ++r) {
        const T* p = xp + r * inner;
        for (int64_t j = 0; j < inner; ++j) op[j] += p[j];
      }
    }
  };
  if (x.dtype() == f32) return run.template operator()<float>(), true;
  if (x.dtype() == f64) return run.template operator()<double>(), true;
  return false;
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

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
          const T* b, int64_t ldb, T* c, int64_t ldc) {
  auto A = ta ? CblasTrans : CblasNoTrans, B = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, A, B, int(m), int(n), int(k), 1.0f, a, int(lda), b, int(ldb),
                0.0f, c, int(ldc));
  else
    cblas_dgemm(CblasRowMajor, A, B, int(m), int(n), int(k), 1.0, a, int(lda), b, int(ldb), 0.0,
                c, int(ldc));
}

// Products this small cost less as a plain loop than as a BLAS call (argument checks, thread
// dispatch): the LSTM overhead benchmark's 4-wide cells are the case in point.
constexpr int64_t kTinyGemm = 512;  // m * n * k

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

bool matmul(const KernelCall& c) {
  const Tensor &a = c.in[0], &b = c.in[1];
  if (a.dtype() != f32 && a.dtype() != f64) return false;
  const int nd = a.ndim();
  const int64_t m = a.shape()[nd - 2], k = a.shape()[nd - 1], n = b.shape()[nd - 1];
  if (nd == 2 && m * n * k <= kTinyGemm) {
    auto tiny = [&]<class T>() {
      tiny_gemm<T>(m, n, k, a.data<T>(), a.stride(0), a.stride(1), b.data<T>(), b.stride(0),
                   b.stride(1), c.out.data<T>());
    };
    if (a.dtype() == f32) tiny.template operator()<float>();
    else tiny.template operator()<double>();
    return true;
  }
  BlasMatrix ma, mb;
  if (!as_blas(m, k, a.stride(nd - 2), a.stride(nd - 1), ma) ||
      !as_blas(k, n, b.stride(nd - 2), b.stride(nd - 1), mb))
    return false;  // the reference handles exotic strides (rare: views of views)
  auto run = [&]<class T>() {
    T* op = c.out.data<T>();
    if (k == 0) {
      std::memset(op, 0, size_t(c.out.numel()) * sizeof(T));
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
      gemm<T>(ma.trans, mb.trans, m, n, k, a.data<T>() + ao, ma.ld, b.data<T>() + bo, mb.ld,
              op + bi * m * n, std::max<int64_t>(n, 1));
    }
  };
  if (a.dtype() == f32) run.template operator()<float>();
  else run.template operator()<double>();
  return true;
}

}  // namespace

void register_reduce_linalg() {
  register_kernel(sum_p, Device::cpu, kCpuRank, sum);
  register_kernel(matmul_p, Device::cpu, kCpuRank, matmul);
}

void register_elementwise();

}  // namespace fx::backend::cpu

namespace fx::backend {
void register_cpu() {
  cpu::register_elementwise();
  cpu::register_reduce_linalg();
}
}  // namespace fx::backend
