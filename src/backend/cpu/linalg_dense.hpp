// What the LAPACK kernels (linalg_solve.cpp, linalg_factor.cpp) share: LAPACK overwrites dense
// row-major matrices, so each kernel first gathers the matrices of its inputs, whatever their
// layout (transposed, sliced, or expanded over a batch by fx::vmap), into buffers it owns or
// straight into its output, which the shape rule allocated dense.
#pragma once
#include <complex>
#include <cstdint>
#include <cstring>

#include "backend/backends.hpp"
#include "backend/cpu/lapack.hpp"
#include "fluxion/core/tensor.hpp"

namespace fx::backend::cpu {

// The number of matrices in a (..., r, c) tensor (0 when the matrices are empty).
inline int64_t matrix_count(const Tensor& x) {
  const int64_t rc = x.shape()[x.ndim() - 2] * x.shape()[x.ndim() - 1];
  return rc == 0 ? 0 : x.numel() / rc;
}

// Copies matrix `index` of x (..., r, c), in row-major order, to dst (r c elements).
template <class T>
void gather_matrix(const Tensor& x, int64_t index, T* dst) {
  const int nd = x.ndim();
  const int64_t r = x.shape()[nd - 2], c = x.shape()[nd - 1];
  if (r * c == 0) return;
  const int64_t sr = x.stride(nd - 2), sc = x.stride(nd - 1);
  const T* src = x.data<T>() + offset_of(index * r * c, x);  // its first element
  if (sc == 1 && sr == c) {
    std::memcpy(static_cast<void*>(dst), src, sizeof(T) * size_t(r * c));
    return;
  }
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) dst[i * c + j] = src[i * sr + j * sc];
}

template <class T>
T conj_of(T x) {
  return x;
}
template <class T>
std::complex<T> conj_of(std::complex<T> x) {
  return std::conj(x);
}

// Overwrites the lower triangle (diagonal included) of the n x n matrix a with that of its
// symmetric (Hermitian) part (a + a^H) / 2: what cholesky and eigh factor, and all that potrf
// and syevd ('L') read.
template <class T>
void symmetrize_lower(T* a, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j)
      a[i * n + j] = (a[i * n + j] + conj_of(a[j * n + i])) * lapack::Real<T>(0.5);
}

}  // namespace fx::backend::cpu
