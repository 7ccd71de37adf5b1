// LAPACKE calls by element type, so the batched kernels of linalg_*.cpp are one template each.
// Every call uses row-major layout on a dense buffer the kernel owns (LAPACK overwrites it).
#pragma once
#include <lapacke.h>

#include <cstdint>

namespace fx::lapack {

using I = lapack_int;
constexpr int kRow = LAPACK_ROW_MAJOR;

// LU with partial pivoting and solve: a (n, n) is overwritten by its factors, b (n, k) by x.
inline I gesv(I n, I k, double* a, I* piv, double* b) { return LAPACKE_dgesv(kRow, n, k, a, n, piv, b, k); }
inline I gesv(I n, I k, float* a, I* piv, float* b) { return LAPACKE_sgesv(kRow, n, k, a, n, piv, b, k); }
inline I getrf(I n, double* a, I* piv) { return LAPACKE_dgetrf(kRow, n, n, a, n, piv); }
inline I getrf(I n, float* a, I* piv) { return LAPACKE_sgetrf(kRow, n, n, a, n, piv); }
// Triangular solve, no transpose, non-unit diagonal.
inline I trtrs(char uplo, I n, I k, const double* a, double* b) {
  return LAPACKE_dtrtrs(kRow, uplo, 'N', 'N', n, k, a, n, b, k);
}
inline I trtrs(char uplo, I n, I k, const float* a, float* b) {
  return LAPACKE_strtrs(kRow, uplo, 'N', 'N', n, k, a, n, b, k);
}
inline I potrf(I n, double* a) { return LAPACKE_dpotrf(kRow, 'L', n, a, n); }
inline I potrf(I n, float* a) { return LAPACKE_spotrf(kRow, 'L', n, a, n); }
// QR: geqrf leaves R in the upper triangle and reflectors below; orgqr forms Q's first k columns.
inline I geqrf(I m, I n, double* a, double* tau) { return LAPACKE_dgeqrf(kRow, m, n, a, n, tau); }
inline I geqrf(I m, I n, float* a, float* tau) { return LAPACKE_sgeqrf(kRow, m, n, a, n, tau); }
inline I orgqr(I m, I k, I lda, double* a, const double* tau) {
  return LAPACKE_dorgqr(kRow, m, k, k, a, lda, tau);
}
inline I orgqr(I m, I k, I lda, float* a, const float* tau) {
  return LAPACKE_sorgqr(kRow, m, k, k, a, lda, tau);
}
// Symmetric eigen-decomposition (divide and conquer): eigenvectors overwrite a, by column.
inline I syevd(I n, double* a, double* w) { return LAPACKE_dsyevd(kRow, 'V', 'L', n, a, n, w); }
inline I syevd(I n, float* a, float* w) { return LAPACKE_ssyevd(kRow, 'V', 'L', n, a, n, w); }
// Reduced SVD (divide and conquer): u (m, k), vt (k, n), k = min(m, n).
inline I gesdd(I m, I n, double* a, double* s, double* u, double* vt) {
  const I k = m < n ? m : n;
  return LAPACKE_dgesdd(kRow, 'S', m, n, a, n, s, u, k, vt, n);
}
inline I gesdd(I m, I n, float* a, float* s, float* u, float* vt) {
  const I k = m < n ? m : n;
  return LAPACKE_sgesdd(kRow, 'S', m, n, a, n, s, u, k, vt, n);
}

}  // namespace fx::lapack
