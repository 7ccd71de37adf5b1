// CPU kernels of the fx::linalg factorisations: linalg_cholesky (potrf), linalg_qr (geqrf +
// orgqr), linalg_eigh (syevd) and linalg_svd (gesdd); qr, eigh and svd write each result into its
// own output (c.outputs, shapes in src/ops/linalg_attrs.hpp). A matrix that is
// not positive definite, or a decomposition that does not converge, is an fx::Error naming the
// public function and the shape.
#include <algorithm>
#include <complex>
#include <type_traits>
#include <vector>

#include "backend/backends.hpp"
#include "backend/cpu/lapack.hpp"
#include "backend/cpu/linalg_dense.hpp"
#include "backend/cpu/loops.hpp"
#include "ops/linalg_attrs.hpp"

namespace fx::backend::cpu {
namespace {

using linalg::detail::EighShape;
using linalg::detail::QrShape;
using linalg::detail::SvdShape;

// l (..., n, n), lower triangular, with l l^H = (a + a^H) / 2: the symmetric part is formed in
// the output's lower triangle, potrf factors it in place, the upper triangle is zeroed.
bool cholesky(const KernelCall& c) {
  const Tensor& a = c.in[0];
  auto run = [&]<class T>() {
    const int64_t n = a.shape()[a.ndim() - 1];
    T* out = c.out.data<T>();
    for (int64_t m = 0, count = matrix_count(a); m < count; ++m) {
      T* l = out + m * n * n;
      gather_matrix(a, m, l);
      symmetrize_lower(l, n);
      const lapack::I info = lapack::potrf(n, l);
      FX_CHECK(info <= 0, "fx::linalg::cholesky: ", a.shape(), ": matrix ", m,
               " is not positive definite (its leading minor of order ", info, " is not positive)");
      FX_CHECK(info == 0, "fx::linalg::cholesky: LAPACK potrf rejected argument ", -info);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j) l[i * n + j] = T(0);
    }
  };
  return floating_or_complex(c.out.dtype(), run);
}

// Reduced QR: Q (m, k) and R (k, n) of each matrix.
bool qr(const KernelCall& c) {
  const Tensor& a = c.in[0];
  const QrShape& L = c.attrs.get<QrShape>();
  auto run = [&]<class T>() {
    const int64_t m = L.m, n = L.n, k = L.k();
    std::vector<T> x(static_cast<size_t>(m * n)), tau(static_cast<size_t>(k));
    for (int64_t b = 0, count = matrix_count(a); b < count; ++b) {
      T *q = c.outputs[0].data<T>() + b * m * k, *r = c.outputs[1].data<T>() + b * k * n;
      gather_matrix(a, b, x.data());
      lapack::I info = lapack::geqrf(m, n, x.data(), tau.data());
      FX_CHECK(info == 0, "fx::linalg::qr: LAPACK geqrf rejected argument ", -info);
      for (int64_t i = 0; i < k; ++i)  // R: the upper triangle geqrf leaves
        for (int64_t j = 0; j < n; ++j) r[i * n + j] = j >= i ? x[size_t(i * n + j)] : T(0);
      info = lapack::orgqr(m, k, n, x.data(), tau.data());
      FX_CHECK(info == 0, "fx::linalg::qr: LAPACK orgqr rejected argument ", -info);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j) q[i * k + j] = x[size_t(i * n + j)];
    }
  };
  return floating_or_complex(c.outputs[0].dtype(), run);
}

// Ascending eigenvalues w (n, real) and eigenvectors V (n, n) of (a + a^H) / 2.
bool eigh(const KernelCall& c) {
  const Tensor& a = c.in[0];
  const int64_t n = c.attrs.get<EighShape>().n;
  auto run = [&]<class T>() {
    for (int64_t b = 0, count = matrix_count(a); b < count; ++b) {
      T* v = c.outputs[1].data<T>() + b * n * n;  // syevd overwrites the matrix with V
      gather_matrix(a, b, v);
      symmetrize_lower(v, n);
      const lapack::I info = lapack::syevd(n, v, c.outputs[0].data<lapack::Real<T>>() + b * n);
      FX_CHECK(info <= 0, "fx::linalg::eigh: ", a.shape(), ": matrix ", b, " did not converge");
      FX_CHECK(info == 0, "fx::linalg::eigh: LAPACK syevd rejected argument ", -info);
    }
  };
  return floating_or_complex(c.outputs[1].dtype(), run);
}

// Reduced SVD: U (m, k), descending s (k, real) and V (n, k) = (V^H)^H of each matrix.
bool svd(const KernelCall& c) {
  const Tensor& a = c.in[0];
  const SvdShape& L = c.attrs.get<SvdShape>();
  auto run = [&]<class T>() {
    const int64_t m = L.m, n = L.n, k = L.k();
    if (k == 0) return;
    std::vector<T> x(static_cast<size_t>(m * n)), vt(static_cast<size_t>(k * n));
    for (int64_t b = 0, count = matrix_count(a); b < count; ++b) {
      T *u = c.outputs[0].data<T>() + b * m * k, *v = c.outputs[2].data<T>() + b * n * k;
      lapack::Real<T>* s = c.outputs[1].data<lapack::Real<T>>() + b * k;
      gather_matrix(a, b, x.data());
      const lapack::I info = lapack::gesdd(m, n, x.data(), s, u, vt.data());
      FX_CHECK(info <= 0, "fx::linalg::svd: ", a.shape(), ": matrix ", b, " did not converge");
      FX_CHECK(info == 0, "fx::linalg::svd: LAPACK gesdd rejected argument ", -info);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < k; ++j) v[i * k + j] = conj_of(vt[size_t(j * n + i)]);
    }
  };
  return floating_or_complex(c.outputs[0].dtype(), run);
}

}  // namespace

void register_linalg_factor() {
  register_kernel(linalg_cholesky_p, Device::cpu, kCpuRank, cholesky);
  register_kernel(linalg_qr_p, Device::cpu, kCpuRank, qr);
  register_kernel(linalg_eigh_p, Device::cpu, kCpuRank, eigh);
  register_kernel(linalg_svd_p, Device::cpu, kCpuRank, svd);
}

}  // namespace fx::backend::cpu
