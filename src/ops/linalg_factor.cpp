// Cholesky (potrf) and reduced QR (geqrf + orgqr) as primitives with their pullbacks and
// pushforwards. Rules: Murray, "Differentiation of the Cholesky decomposition" (2016); Walter &
// Lehmann, "Algorithmic differentiation of linear algebra functions" (2018), as in JAX/PyTorch.
// On complex matrices the same rules hold with conjugate transposes (sym is the Hermitian part);
// the one change is the diagonal of dR R^-1 in qr, real because geqrf's R has a real diagonal.
#include <algorithm>
#include <vector>

#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg.hpp"
#include "fluxion/ops/linalg_lapack.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/batching.hpp"
#include "ops/lapack.hpp"
#include "ops/linalg_util.hpp"

namespace fx::linalg {

using detail::batch_count;
using detail::flat;
using detail::lapack_copy;
using detail::mH;
using detail::mT;
using detail::sym;
using detail::tril;
using detail::triu;
using detail::unpack;

namespace {

template <class T>
void potrf_batch(Tensor& a, const Shape& shape) {
  const int64_t n = a.shape()[a.ndim() - 1];
  T* pa = a.data<T>();
  for (int64_t m = 0, count = batch_count(a); m < count; ++m) {
    T* l = pa + m * n * n;
    const lapack::I info = lapack::potrf(n, l);
    FX_CHECK(info <= 0, "fx::linalg::cholesky: ", shape, ": matrix ", m,
             " is not positive definite (its leading minor of order ", info, " is not positive)");
    FX_CHECK(info == 0, "fx::linalg::cholesky: LAPACK potrf rejected argument ", -info);
    for (int64_t i = 0; i < n; ++i)  // potrf leaves the upper triangle as it found it
      for (int64_t j = i + 1; j < n; ++j) l[i * n + j] = T(0);
  }
}

// Q (m, k) then R (k, n) of each matrix, flat, into out (..., m k + k n).
template <class T>
void qr_batch(Tensor& a, Tensor& out) {
  const int64_t m = a.shape()[a.ndim() - 2], n = a.shape()[a.ndim() - 1], k = std::min(m, n);
  std::vector<T> tau(static_cast<size_t>(k));
  T *pa = a.data<T>(), *po = out.data<T>();
  for (int64_t b = 0, count = batch_count(a); b < count; ++b) {
    T* x = pa + b * m * n;
    T *q = po + b * (m * k + k * n), *r = q + m * k;
    lapack::I info = lapack::geqrf(m, n, x, tau.data());
    FX_CHECK(info == 0, "fx::linalg::qr: LAPACK geqrf rejected argument ", -info);
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j) r[i * n + j] = j >= i ? x[i * n + j] : T(0);
    info = lapack::orgqr(m, k, n, x, tau.data());
    FX_CHECK(info == 0, "fx::linalg::qr: LAPACK orgqr rejected argument ", -info);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < k; ++j) q[i * k + j] = x[i * n + j];
  }
}

// Murray's Phi: the lower triangle with the diagonal halved.
Tensor phi(const Tensor& x) {
  return tril(x, -1) + 0.5 * (x * eye(x.shape()[x.ndim() - 1], x.dtype()));
}

// t^-1 x t^-H for triangular t, by two triangular solves.
Tensor sandwich_inverse(const Tensor& t, const Tensor& x, bool upper) {
  Tensor y = triangular_solve(t, x, upper);      // t^-1 x
  return mH(triangular_solve(t, mH(y), upper));  // (t^-1 y^H)^H = y t^-H
}

// dR R^-1 from X = Q^H dA R^-1 = Omega + dR R^-1, Omega = Q^H dQ skew-Hermitian and dR R^-1
// upper triangular with a real diagonal: triu(X, 1) + tril(X, -1)^H + Re diag(X).
Tensor qr_upper(const Tensor& x) { return triu(x, 1) + mH(tril(x, -1)) + detail::real_diag(x); }
// Its adjoint under <a, b> = Re tr(a^H b): triu(M, 1) + triu(M, 1)^H + Re diag(M).
Tensor qr_upper_adjoint(const Tensor& m) {
  return triu(m, 1) + mH(triu(m, 1)) + detail::real_diag(m);
}

// qr_p's attributes: the input's matrix shape (m, n). Q (m, k) and R (k, n) of its output or of
// its cotangent, packed flat.
struct QrShape {
  int64_t m = 0, n = 0;
  FX_ATTRS(QrShape, m, n)
  int64_t k() const { return std::min(m, n); }
  Tensor q(const Tensor& packed) const { return unpack(packed, 0, m, k()); }
  Tensor r(const Tensor& packed) const { return unpack(packed, m * k(), k(), n); }
  void check_differentiable(const char* mode) const {
    FX_CHECK(m >= n, "fx::linalg::qr: the ", mode, " of the reduced QR of a (", m, ", ", n,
             ") matrix needs rows >= columns");
  }
};

}  // namespace

// l with l l^T = (a + a^T) / 2; saves l.
Primitive cholesky_p{.name = "linalg_cholesky",
                     .forward =
                         [](const Primitive&, std::span<const Tensor> in, Attrs) {
                           Tensor l = lapack_copy(sym(detail::untracked(in[0])));
                           detail::visit_lapack(
                               l.dtype(), [&]<class T>() { potrf_batch<T>(l, in[0].shape()); });
                           return l;
                         },
                     .saves = saves::output,
                     .pullback =
                         [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
                           // <dy, dL> with dL = L Phi(L^-1 dS L^-H), dS = sym(dA): dA = sym(L^-H Phi(L^H dy) L^-1).
                           const Tensor& l = a.output();
                           dx[0] = sym(sandwich_inverse(mH(l), phi(matmul(mH(l), dy)), true));
                         },
                     .jvp =
                         [](const JvpArgs& a, const Tensor* dx) {
                           const Tensor& l = a.output();
                           return matmul(l, phi(sandwich_inverse(l, sym(dx[0]), false)));
                         },
                     .batch = fx::detail::batch_leading};

// QrShape: the matrix shape (m, n). Output: Q then R, flat.
Primitive qr_p{.name = "linalg_qr",
               .forward =
                   [](const Primitive&, std::span<const Tensor> in, Attrs pr) {
                     const QrShape& qs = pr.get<QrShape>();
                     Shape s = detail::leading(in[0].shape(), 2);
                     s.push_back(qs.m * qs.k() + qs.k() * qs.n);
                     Tensor a = lapack_copy(in[0]), out = Tensor::empty(s, in[0].dtype());
                     detail::visit_lapack(a.dtype(), [&]<class T>() { qr_batch<T>(a, out); });
                     return out;
                   },
               .saves = saves::output,
               .pullback =
                   [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
                     // Adjoint of the pushforward below: with M = dR R^H - Q^H dQ,
                     // dA = (dQ + Q qr_upper_adjoint(M)) R^-H.
                     const QrShape& qs = a.attrs<QrShape>();
                     qs.check_differentiable("derivative");
                     Tensor q = qs.q(a.output()), r = qs.r(a.output()), gq = qs.q(dy),
                            gr = qs.r(dy);
                     Tensor m = matmul(gr, mH(r)) - matmul(mH(q), gq);
                     Tensor gy = gq + matmul(q, qr_upper_adjoint(m));
                     dx[0] = mH(triangular_solve(r, mH(gy), true));
                   },
               .jvp =
                   [](const JvpArgs& a, const Tensor* dx) {
                     // Y = dA R^-1 and X = Q^H Y = Omega + dR R^-1 (see qr_upper), dQ = Y - Q (dR R^-1).
                     const QrShape& qs = a.attrs<QrShape>();
                     qs.check_differentiable("pushforward");
                     Tensor q = qs.q(a.output()), r = qs.r(a.output());
                     Tensor y = mT(triangular_solve(mT(r), mT(dx[0]), false));
                     Tensor x = matmul(mH(q), y);
                     Tensor upper = qr_upper(x);
                     return concat({flat(y - matmul(q, upper)), flat(matmul(upper, r))}, -1);
                   },
               .batch = fx::detail::batch_leading};

Tensor cholesky(const Tensor& a) {
  detail::check_matrix(a, "cholesky", true);
  return bind(cholesky_p, {a});
}

std::tuple<Tensor, Tensor> qr(const Tensor& a) {
  detail::check_matrix(a, "qr", false);
  const QrShape qs{a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]};
  Tensor out = bind(qr_p, {a}, qs);
  return {qs.q(out), qs.r(out)};
}

}  // namespace fx::linalg
