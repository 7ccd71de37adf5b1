// LAPACKE calls by element type, so the batched CPU kernels of the fx::linalg primitives
// (linalg_solve.cpp, linalg_factor.cpp here) are one template each. Every call uses row-major
// layout on a dense buffer the kernel owns (LAPACK overwrites it).
// Complex elements are std::complex<float/double>, which C++ lays out as LAPACK's complex types
// (two reals, real part first): the pointers are passed on reinterpreted, whichever type
// lapacke.h was configured with. The Hermitian and unitary routines (potrf, heevd, ungqr) are
// the complex counterparts of the symmetric and orthogonal ones and share their overload names.
#pragma once
#include <lapacke.h>

#include <complex>
#include <cstdint>

namespace fx::backend::cpu::lapack {

using I = lapack_int;
constexpr int kRow = LAPACK_ROW_MAJOR;
using cf = std::complex<float>;
using cd = std::complex<double>;

// The real type of an element type: the type of eigenvalues and singular values.
template <class T>
struct RealOf {
  using type = T;
};
template <class T>
struct RealOf<std::complex<T>> {
  using type = T;
};
template <class T>
using Real = typename RealOf<T>::type;

inline lapack_complex_float* lc(cf* p) { return reinterpret_cast<lapack_complex_float*>(p); }
inline lapack_complex_double* lc(cd* p) { return reinterpret_cast<lapack_complex_double*>(p); }
inline const lapack_complex_float* lc(const cf* p) {
  return reinterpret_cast<const lapack_complex_float*>(p);
}
inline const lapack_complex_double* lc(const cd* p) {
  return reinterpret_cast<const lapack_complex_double*>(p);
}

// LU with partial pivoting and solve: a (n, n) is overwritten by its factors, b (n, k) by x.
inline I gesv(I n, I k, double* a, I* piv, double* b) {
  return LAPACKE_dgesv(kRow, n, k, a, n, piv, b, k);
}
inline I gesv(I n, I k, float* a, I* piv, float* b) {
  return LAPACKE_sgesv(kRow, n, k, a, n, piv, b, k);
}
inline I gesv(I n, I k, cd* a, I* piv, cd* b) {
  return LAPACKE_zgesv(kRow, n, k, lc(a), n, piv, lc(b), k);
}
inline I gesv(I n, I k, cf* a, I* piv, cf* b) {
  return LAPACKE_cgesv(kRow, n, k, lc(a), n, piv, lc(b), k);
}
inline I getrf(I n, double* a, I* piv) { return LAPACKE_dgetrf(kRow, n, n, a, n, piv); }
inline I getrf(I n, float* a, I* piv) { return LAPACKE_sgetrf(kRow, n, n, a, n, piv); }
inline I getrf(I n, cd* a, I* piv) { return LAPACKE_zgetrf(kRow, n, n, lc(a), n, piv); }
inline I getrf(I n, cf* a, I* piv) { return LAPACKE_cgetrf(kRow, n, n, lc(a), n, piv); }
// Triangular solve, no transpose, non-unit diagonal.
inline I trtrs(char uplo, I n, I k, const double* a, double* b) {
  return LAPACKE_dtrtrs(kRow, uplo, 'N', 'N', n, k, a, n, b, k);
}
inline I trtrs(char uplo, I n, I k, const float* a, float* b) {
  return LAPACKE_strtrs(kRow, uplo, 'N', 'N', n, k, a, n, b, k);
}
inline I trtrs(char uplo, I n, I k, const cd* a, cd* b) {
  return LAPACKE_ztrtrs(kRow, uplo, 'N', 'N', n, k, lc(a), n, lc(b), k);
}
inline I trtrs(char uplo, I n, I k, const cf* a, cf* b) {
  return LAPACKE_ctrtrs(kRow, uplo, 'N', 'N', n, k, lc(a), n, lc(b), k);
}
// Cholesky of a symmetric (Hermitian) positive definite matrix, from its lower triangle.
inline I potrf(I n, double* a) { return LAPACKE_dpotrf(kRow, 'L', n, a, n); }
inline I potrf(I n, float* a) { return LAPACKE_spotrf(kRow, 'L', n, a, n); }
inline I potrf(I n, cd* a) { return LAPACKE_zpotrf(kRow, 'L', n, lc(a), n); }
inline I potrf(I n, cf* a) { return LAPACKE_cpotrf(kRow, 'L', n, lc(a), n); }
// QR: geqrf leaves R in the upper triangle and reflectors below; orgqr (ungqr) forms Q's first
// k columns. The complex geqrf leaves R with a real diagonal.
inline I geqrf(I m, I n, double* a, double* tau) { return LAPACKE_dgeqrf(kRow, m, n, a, n, tau); }
inline I geqrf(I m, I n, float* a, float* tau) { return LAPACKE_sgeqrf(kRow, m, n, a, n, tau); }
inline I geqrf(I m, I n, cd* a, cd* tau) { return LAPACKE_zgeqrf(kRow, m, n, lc(a), n, lc(tau)); }
inline I geqrf(I m, I n, cf* a, cf* tau) { return LAPACKE_cgeqrf(kRow, m, n, lc(a), n, lc(tau)); }
inline I orgqr(I m, I k, I lda, double* a, const double* tau) {
  return LAPACKE_dorgqr(kRow, m, k, k, a, lda, tau);
}
inline I orgqr(I m, I k, I lda, float* a, const float* tau) {
  return LAPACKE_sorgqr(kRow, m, k, k, a, lda, tau);
}
inline I orgqr(I m, I k, I lda, cd* a, const cd* tau) {
  return LAPACKE_zungqr(kRow, m, k, k, lc(a), lda, lc(tau));
}
inline I orgqr(I m, I k, I lda, cf* a, const cf* tau) {
  return LAPACKE_cungqr(kRow, m, k, k, lc(a), lda, lc(tau));
}
// Symmetric (Hermitian) eigen-decomposition (divide and conquer): real eigenvalues in w,
// eigenvectors overwrite a, by column.
inline I syevd(I n, double* a, double* w) { return LAPACKE_dsyevd(kRow, 'V', 'L', n, a, n, w); }
inline I syevd(I n, float* a, float* w) { return LAPACKE_ssyevd(kRow, 'V', 'L', n, a, n, w); }
inline I syevd(I n, cd* a, double* w) { return LAPACKE_zheevd(kRow, 'V', 'L', n, lc(a), n, w); }
inline I syevd(I n, cf* a, float* w) { return LAPACKE_cheevd(kRow, 'V', 'L', n, lc(a), n, w); }
// Reduced SVD (divide and conquer): u (m, k), real s (k), vt (k, n) (V^H for complex),
// k = min(m, n).
inline I gesdd(I m, I n, double* a, double* s, double* u, double* vt) {
  const I k = m < n ? m : n;
  return LAPACKE_dgesdd(kRow, 'S', m, n, a, n, s, u, k, vt, n);
}
inline I gesdd(I m, I n, float* a, float* s, float* u, float* vt) {
  const I k = m < n ? m : n;
  return LAPACKE_sgesdd(kRow, 'S', m, n, a, n, s, u, k, vt, n);
}
inline I gesdd(I m, I n, cd* a, double* s, cd* u, cd* vt) {
  const I k = m < n ? m : n;
  return LAPACKE_zgesdd(kRow, 'S', m, n, lc(a), n, s, lc(u), k, lc(vt), n);
}
inline I gesdd(I m, I n, cf* a, float* s, cf* u, cf* vt) {
  const I k = m < n ? m : n;
  return LAPACKE_cgesdd(kRow, 'S', m, n, lc(a), n, s, lc(u), k, lc(vt), n);
}

}  // namespace fx::backend::cpu::lapack
