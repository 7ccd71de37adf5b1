// Cholesky (potrf) and reduced QR (geqrf + orgqr) as primitives with their pullbacks and
// pushforwards. Rules: Murray, "Differentiation of the Cholesky decomposition" (2016); Walter &
// Lehmann, "Algorithmic differentiation of linear algebra functions" (2018), as in JAX/PyTorch.
// On complex matrices the same rules hold with conjugate transposes (sym is the Hermitian part);
// the one change is the diagonal of dR R^-1 in qr, real because geqrf's R has a real diagonal.
// Each forward is a shape rule and a dispatch; the LAPACK kernels are in
// src/backend/cpu/linalg_factor.cpp.

#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg.hpp"
#include "fluxion/ops/linalg_lapack.hpp"
#include "fluxion/ops/primitives.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/batching.hpp"
#include "ops/linalg_attrs.hpp"
#include "ops/linalg_util.hpp"

namespace fx::linalg {

using detail::mH;
using detail::mT;
using detail::or_zeros;
using detail::QrShape;
using detail::sym;
using detail::tril;
using detail::triu;

namespace {

// Murray's Phi: the lower triangle with the diagonal halved.
Tensor phi(const Tensor& x) {
  return tril(x, -1) + 0.5 * (x * eye(x.shape()[x.ndim() - 1], x.dtype(), x.device()));
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

void check_differentiable(const QrShape& L, const char* mode) {
  FX_CHECK(L.m >= L.n, "fx::linalg::qr: the ", mode, " of the reduced QR of a (", L.m, ", ", L.n,
           ") matrix needs rows >= columns");
}

// l (..., n, n) with l l^H = (a + a^H) / 2; saves l.
Tensor cholesky_rule(const Primitive& p, std::span<const Tensor> in, Attrs attrs) {
  detail::check_operands(detail::is_matrix(in[0], true), "cholesky", in, "needs square matrices");
  return detail::allocate_and_dispatch(p, in, attrs, in[0].shape(), in[0].dtype());
}
void cholesky_pullback(const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
  // <dy, dL> with dL = L Phi(L^-1 dS L^-H), dS = sym(dA): dA = sym(L^-H Phi(L^H dy) L^-1).
  const Tensor& l = a.output();
  dx[0] = sym(sandwich_inverse(mH(l), phi(matmul(mH(l), dy)), true));
}
Tensor cholesky_jvp(const JvpArgs& a, const Tensor* dx) {
  const Tensor& l = a.output();
  return matmul(l, phi(sandwich_inverse(l, sym(dx[0]), false)));
}

// QrShape: the matrix shape (m, n). Outputs Q (..., m, k) and R (..., k, n).
void qr_rule(const Primitive& p, std::span<const Tensor> in, Attrs attrs, Tensor* out) {
  const QrShape& L = attrs.get<QrShape>();
  const Tensor& a = in[0];
  detail::check_operands(detail::is_matrix(a, false) && a.shape()[a.ndim() - 2] == L.m &&
                             a.shape()[a.ndim() - 1] == L.n,
                         "qr", in, "needs matrices of the attributes' shape (m, n)");
  detail::allocate_and_dispatch_n(p, in, attrs,
                                  {{detail::with_matrix(a.shape(), L.m, L.k()), a.dtype()},
                                   {detail::with_matrix(a.shape(), L.k(), L.n), a.dtype()}},
                                  out);
}
void qr_pullback(const PullbackArgs& a, const Tensor* dy, Tensor* dx) {
  // Adjoint of the pushforward below: with M = dR R^H - Q^H dQ,
  // dA = (dQ + Q qr_upper_adjoint(M)) R^-H.
  check_differentiable(a.attrs<QrShape>(), "derivative");
  const Tensor &q = a.output(0), &r = a.output(1);
  Tensor gq = or_zeros(dy[0], q), gr = or_zeros(dy[1], r);
  Tensor m = matmul(gr, mH(r)) - matmul(mH(q), gq);
  Tensor gy = gq + matmul(q, qr_upper_adjoint(m));
  dx[0] = mH(triangular_solve(r, mH(gy), true));
}
void qr_jvp(const JvpArgs& a, const Tensor* dx, Tensor* dy) {
  // Y = dA R^-1 and X = Q^H Y = Omega + dR R^-1 (see qr_upper), dQ = Y - Q (dR R^-1).
  check_differentiable(a.attrs<QrShape>(), "pushforward");
  if (!dx[0].defined()) return;
  const Tensor &q = a.output(0), &r = a.output(1);
  Tensor y = mT(triangular_solve(mT(r), mT(dx[0]), false));
  Tensor x = matmul(mH(q), y);
  Tensor upper = qr_upper(x);
  dy[0] = y - matmul(q, upper);
  dy[1] = matmul(upper, r);
}

}  // namespace

Tensor cholesky(const Tensor& a) {
  detail::check_matrix(a, "cholesky", true);
  return bind(linalg_cholesky_p, {a});
}

std::tuple<Tensor, Tensor> qr(const Tensor& a) {
  detail::check_matrix(a, "qr", false);
  const QrShape L{a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]};
  auto [q, r] = bind_n<2>(linalg_qr_p, {a}, L);
  return {q, r};
}

}  // namespace fx::linalg

namespace fx {

// Lower-triangular l with l l^H = (a + a^H) / 2; saves l.
Primitive linalg_cholesky_p{.name = "linalg_cholesky",
                            .forward = linalg::cholesky_rule,
                            .saves = saves::output,
                            .pullback = linalg::cholesky_pullback,
                            .jvp = linalg::cholesky_jvp,
                            .batch = detail::batch_leading};

// Reduced QR: outputs Q and R (QrShape); saves them.
Primitive linalg_qr_p{.name = "linalg_qr",
                      .saves = saves::output,
                      .num_outputs = 2,
                      .forward_n = linalg::qr_rule,
                      .pullback_n = linalg::qr_pullback,
                      .jvp_n = linalg::qr_jvp,
                      .batch_n = detail::batch_leading_n};

}  // namespace fx
