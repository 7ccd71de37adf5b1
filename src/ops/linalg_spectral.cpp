// Symmetric eigen-decomposition (syevd) and reduced SVD (gesdd) as primitives with pullbacks and
// pushforwards: the perturbation-theory rules used by JAX and PyTorch (for the SVD, Townsend,
// "Differentiating the singular value decomposition", 2016). See linalg_lapack.hpp for the
// degenerate cases. On complex (Hermitian) matrices the rules are the same with conjugate
// transposes, plus the gauge: each eigenvector, or each pair of singular vectors, is defined up
// to a phase e^{i theta}, so the imaginary diagonal of V^H dV (U^H dU + V^H dV) is not
// determined. Pushforwards fix it (eigh: no phase change; svd: the one phase change the values
// determine goes to U alone), and pullbacks are the adjoints of those pushforwards, exact for
// the losses that do not depend on the phases, the only ones with a derivative. The eigenvalues
// and singular values are real outputs, also of complex matrices. Each forward is a shape rule and a dispatch; the LAPACK kernels are in
// src/backend/cpu/linalg_factor.cpp.

#include "fluxion/ops/complex.hpp"
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

using detail::EighShape;
using detail::inverse_gaps;
using detail::mH;
using detail::or_zeros;
using detail::SvdShape;
using detail::sym;

namespace {

Tensor scale_columns(const Tensor& x, const Tensor& s) { return x * unsqueeze(s, -2); }
Tensor scale_rows(const Tensor& x, const Tensor& s) { return unsqueeze(s, -1) * x; }

// Checks a primitive bound directly (not through its public function) gets (m, n) matrices.
void check_shape(std::span<const Tensor> in, int64_t m, int64_t n, const char* op) {
  const Tensor& a = in[0];
  detail::check_operands(
      detail::is_matrix(a, false) && a.shape()[a.ndim() - 2] == m && a.shape()[a.ndim() - 1] == n,
      op, in, "needs matrices of the attributes' shape");
}

// Eigenvalues w (..., n, ascending, real) and eigenvectors V (..., n, n) of (a + a^H) / 2.
void eigh_rule(const Primitive& p, std::span<const Tensor> in, Attrs attrs, Tensor* out) {
  const int64_t n = attrs.get<EighShape>().n;
  check_shape(in, n, n, "eigh");
  const Tensor& a = in[0];
  detail::allocate_and_dispatch_n(
      p, in, attrs,
      {{detail::leading(a.shape(), 1), real_dtype(a.dtype())}, {a.shape(), a.dtype()}}, out);
}
void eigh_pullback(const PullbackArgs& a, const Tensor* dy, Tensor* dx) {
  // dA = sym(V (diag(dw) + F o (V^H dV)) V^H), F_ij = 1 / (w_j - w_i). F's zero diagonal drops
  // the (imaginary) diagonal of V^H dV, the phase part.
  const Tensor &w = a.output(0), &v = a.output(1);
  Tensor inner = diag_embed(astype(or_zeros(dy[0], w), v.dtype()));
  if (dy[1].defined()) inner = inner + inverse_gaps(w) * matmul(mH(v), dy[1]);
  dx[0] = sym(matmul(matmul(v, inner), mH(v)));
}
void eigh_jvp(const JvpArgs& a, const Tensor* dx, Tensor* dy) {
  // K = V^H dA V: dw = diag(K) (real), dV = V (F o K).
  if (!dx[0].defined()) return;
  const Tensor &w = a.output(0), &v = a.output(1);
  Tensor k = matmul(matmul(mH(v), sym(dx[0])), v);
  dy[0] = real(diagonal(k));
  dy[1] = matmul(v, inverse_gaps(w) * k);
}

// Reduced SVD: U (..., m, k), s (..., k, descending, real) and V (..., n, k) (not V^H).
void svd_rule(const Primitive& p, std::span<const Tensor> in, Attrs attrs, Tensor* out) {
  const SvdShape& L = attrs.get<SvdShape>();
  check_shape(in, L.m, L.n, "svd");
  const Tensor& a = in[0];
  Shape s = detail::leading(a.shape(), 2);
  s.push_back(L.k());
  detail::allocate_and_dispatch_n(p, in, attrs,
                                  {{detail::with_matrix(a.shape(), L.m, L.k()), a.dtype()},
                                   {s, real_dtype(a.dtype())},
                                   {detail::with_matrix(a.shape(), L.n, L.k()), a.dtype()}},
                                  out);
}
void svd_pullback(const PullbackArgs& a, const Tensor* dy, Tensor* dx) {
  // The adjoint of the pushforward below. With Mu = F o (U^H dU), Mv = F o (V^H dV):
  // dA = U (diag(ds) + (Mu + Mu^H) S + S (Mv + Mv^H) + i Im diag(U^H dU) S^-1) V^H
  //      + (I - U U^H) dU S^-1 V^H  (m > k)  +  U S^-1 dV^H (I - V V^H)  (n > k).
  // The imaginary-diagonal term (complex only) is the adjoint of the phase the pushforward gives
  // U; for a phase-invariant loss Im diag(U^H dU) = -Im diag(V^H dV), as torch checks.
  const SvdShape& L = a.attrs<SvdShape>();
  const Tensor &u = a.output(0), &s = a.output(1), &v = a.output(2);
  Tensor gu = or_zeros(dy[0], u), gv = or_zeros(dy[2], v);
  Tensor f = inverse_gaps(s * s);
  Tensor utgu = matmul(mH(u), gu), vtgv = matmul(mH(v), gv);
  Tensor mu = f * utgu, mv = f * vtgv;
  Tensor sinv = detail::safe_reciprocal(s);
  Tensor inner = diag_embed(astype(or_zeros(dy[1], s), u.dtype())) + scale_columns(mu + mH(mu), s) +
                 scale_rows(mv + mH(mv), s);
  if (is_complex(u.dtype())) {
    Tensor im = imag(diagonal(utgu)) * sinv;
    inner = inner + diag_embed(complex(zeros_like(im), im));
  }
  Tensor ga = matmul(matmul(u, inner), mH(v));
  if (L.m > L.k()) ga = ga + matmul(scale_columns(gu - matmul(u, utgu), sinv), mH(v));
  if (L.n > L.k()) ga = ga + matmul(scale_columns(u, sinv), mH(gv - matmul(v, vtgv)));
  dx[0] = ga;
}
void svd_jvp(const JvpArgs& a, const Tensor* dx, Tensor* dy) {
  // dP = U^H dA V: ds = Re diag(dP), U^H dU = F o (dP S + S dP^H) + i Im diag(dP) S^-1 (the
  // phase change, on U alone), V^H dV = F o (S dP + dP^H S), and the parts outside the spans:
  // (I - U U^H) dA V S^-1, (I - V V^H) dA^H U S^-1.
  if (!dx[0].defined()) return;
  const SvdShape& L = a.attrs<SvdShape>();
  const Tensor &u = a.output(0), &s = a.output(1), &v = a.output(2);
  Tensor f = inverse_gaps(s * s);
  Tensor dav = matmul(dx[0], v), datu = matmul(mH(dx[0]), u);
  Tensor dp = matmul(mH(u), dav);
  Tensor sinv = detail::safe_reciprocal(s);
  Tensor omega_u = f * (scale_columns(dp, s) + scale_rows(mH(dp), s));
  if (is_complex(u.dtype())) {
    Tensor im = imag(diagonal(dp)) * sinv;
    omega_u = omega_u + diag_embed(complex(zeros_like(im), im));
  }
  Tensor du = matmul(u, omega_u);
  Tensor dv = matmul(v, f * (scale_rows(dp, s) + scale_columns(mH(dp), s)));
  if (L.m > L.k()) du = du + scale_columns(dav - matmul(u, dp), sinv);
  if (L.n > L.k()) dv = dv + scale_columns(datu - matmul(v, mH(dp)), sinv);
  dy[0] = du;
  dy[1] = real(diagonal(dp));
  dy[2] = dv;
}

}  // namespace

std::tuple<Tensor, Tensor> eigh(const Tensor& a) {
  detail::check_matrix(a, "eigh", true);
  auto [w, v] = bind_n<2>(linalg_eigh_p, {a}, EighShape{a.shape()[a.ndim() - 1]});
  return {w, v};
}

Tensor eigvalsh(const Tensor& a) { return std::get<0>(eigh(a)); }

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a) {
  detail::check_matrix(a, "svd", false);
  const SvdShape L{a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]};
  auto [u, s, v] = bind_n<3>(linalg_svd_p, {a}, L);
  return {u, s, mH(v)};
}

Tensor svdvals(const Tensor& a) { return std::get<1>(svd(a)); }

}  // namespace fx::linalg

namespace fx {

// Eigenvalues (ascending, real) and eigenvectors of (a + a^H) / 2 (EighShape); saves both.
Primitive linalg_eigh_p{.name = "linalg_eigh",
                        .saves = saves::output,
                        .num_outputs = 2,
                        .forward_n = linalg::eigh_rule,
                        .pullback_n = linalg::eigh_pullback,
                        .jvp_n = linalg::eigh_jvp,
                        .batch_n = detail::batch_leading_n};

// Reduced SVD: U, s (real) and V (SvdShape); saves them.
Primitive linalg_svd_p{.name = "linalg_svd",
                       .saves = saves::output,
                       .num_outputs = 3,
                       .forward_n = linalg::svd_rule,
                       .pullback_n = linalg::svd_pullback,
                       .jvp_n = linalg::svd_jvp,
                       .batch_n = detail::batch_leading_n};

}  // namespace fx
