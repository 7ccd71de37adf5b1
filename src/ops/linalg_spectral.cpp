// Symmetric eigen-decomposition (syevd) and reduced SVD (gesdd) as primitives with pullbacks and
// pushforwards: the perturbation-theory rules used by JAX and PyTorch (for the SVD, Townsend,
// "Differentiating the singular value decomposition", 2016). See linalg_lapack.hpp for the
// degenerate cases. On complex (Hermitian) matrices the rules are the same with conjugate
// transposes, plus the gauge: each eigenvector, or each pair of singular vectors, is defined up
// to a phase e^{i theta}, so the imaginary diagonal of V^H dV (U^H dU + V^H dV) is not
// determined. Pushforwards fix it (eigh: no phase change; svd: the one phase change the values
// determine goes to U alone), and pullbacks are the adjoints of those pushforwards, exact for
// the losses that do not depend on the phases, the only ones with a derivative. The eigenvalues
// and singular values are real; the complex primitives carry them in their complex outputs
// with zero imaginary parts. Each forward is a shape rule and a dispatch; the LAPACK kernels are
// in src/backend/cpu/linalg_factor.cpp.

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

using detail::EighLayout;
using detail::flat;
using detail::inverse_gaps;
using detail::mH;
using detail::mT;
using detail::real_part;
using detail::SvdLayout;
using detail::sym;
using detail::unpack;

namespace {

// The parts of eigh_p's output (or of its cotangent), as views of the packed layout; the
// eigenvalues as a real tensor.
Tensor eig_values(const EighLayout& L, const Tensor& packed) {
  return real(slice(packed, -1, L.w_at(), L.w_at() + L.n));
}
Tensor eig_vectors(const EighLayout& L, const Tensor& packed) {
  return unpack(packed, L.v_at(), L.n, L.n);
}

// The parts of svd_p's output (or of its cotangent): U, s (real) and V (not V^H).
Tensor u_of(const SvdLayout& L, const Tensor& packed) {
  return unpack(packed, L.u_at(), L.m, L.k());
}
Tensor s_of(const SvdLayout& L, const Tensor& packed) {
  return real(slice(packed, -1, L.s_at(), L.s_at() + L.k()));
}
Tensor v_of(const SvdLayout& L, const Tensor& packed) {
  return unpack(packed, L.v_at(), L.n, L.k());
}

Tensor scale_columns(const Tensor& x, const Tensor& s) { return x * unsqueeze(s, -2); }
Tensor scale_rows(const Tensor& x, const Tensor& s) { return unsqueeze(s, -1) * x; }

// Shape rule of both: the packed layout's size on the last axis, in a's dtype (the real results
// are carried in it).
Tensor packed_forward(const Primitive& p, std::span<const Tensor> in, Attrs attrs, int64_t m,
                      int64_t n, int64_t size, const char* op) {
  const Tensor& a = in[0];
  detail::check_operands(
      detail::is_matrix(a, false) && a.shape()[a.ndim() - 2] == m && a.shape()[a.ndim() - 1] == n,
      op, in, "needs matrices of the attributes' shape");
  Shape s = detail::leading(a.shape(), 2);
  s.push_back(size);
  return detail::allocate_and_dispatch(p, in, attrs, s, a.dtype());
}

// Eigenvalues (ascending) and eigenvectors of (a + a^H) / 2, packed (EighLayout).
Tensor eigh_rule(const Primitive& p, std::span<const Tensor> in, Attrs attrs) {
  const EighLayout& L = attrs.get<EighLayout>();
  return packed_forward(p, in, attrs, L.n, L.n, L.size(), "eigh");
}
void eigh_pullback(const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
  // dA = sym(V (diag(dw) + F o (V^H dV)) V^H), F_ij = 1 / (w_j - w_i). F's zero diagonal drops
  // the (imaginary) diagonal of V^H dV, the phase part.
  const EighLayout& L = a.attrs<EighLayout>();
  Tensor w = eig_values(L, a.output()), v = eig_vectors(L, a.output());
  Tensor inner =
      diag_embed(eig_values(L, dy)) + inverse_gaps(w) * matmul(mH(v), eig_vectors(L, dy));
  dx[0] = sym(matmul(matmul(v, inner), mH(v)));
}
Tensor eigh_jvp(const JvpArgs& a, const Tensor* dx) {
  // K = V^H dA V: dw = diag(K) (real), dV = V (F o K).
  const EighLayout& L = a.attrs<EighLayout>();
  Tensor w = eig_values(L, a.output()), v = eig_vectors(L, a.output());
  Tensor k = matmul(matmul(mH(v), sym(dx[0])), v);
  return concat({diagonal(real_part(k)), flat(matmul(v, inverse_gaps(w) * k))}, -1);
}

// Reduced SVD, packed (SvdLayout).
Tensor svd_rule(const Primitive& p, std::span<const Tensor> in, Attrs attrs) {
  const SvdLayout& L = attrs.get<SvdLayout>();
  return packed_forward(p, in, attrs, L.m, L.n, L.size(), "svd");
}
void svd_pullback(const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
  // The adjoint of the pushforward below. With Mu = F o (U^H dU), Mv = F o (V^H dV):
  // dA = U (diag(ds) + (Mu + Mu^H) S + S (Mv + Mv^H) + i Im diag(U^H dU) S^-1) V^H
  //      + (I - U U^H) dU S^-1 V^H  (m > k)  +  U S^-1 dV^H (I - V V^H)  (n > k).
  // The imaginary-diagonal term (complex only) is the adjoint of the phase the pushforward gives
  // U; for a phase-invariant loss Im diag(U^H dU) = -Im diag(V^H dV), as torch checks.
  const SvdLayout& L = a.attrs<SvdLayout>();
  const Tensor& out = a.output();
  Tensor u = u_of(L, out), s = s_of(L, out), v = v_of(L, out), gu = u_of(L, dy), gv = v_of(L, dy);
  Tensor f = inverse_gaps(s * s);
  Tensor utgu = matmul(mH(u), gu), vtgv = matmul(mH(v), gv);
  Tensor mu = f * utgu, mv = f * vtgv;
  Tensor sinv = detail::safe_reciprocal(s);
  Tensor inner =
      diag_embed(s_of(L, dy)) + scale_columns(mu + mH(mu), s) + scale_rows(mv + mH(mv), s);
  if (is_complex(u.dtype())) {
    Tensor im = imag(diagonal(utgu)) * sinv;
    inner = inner + diag_embed(complex(zeros_like(im), im));
  }
  Tensor ga = matmul(matmul(u, inner), mH(v));
  if (L.m > L.k()) ga = ga + matmul(scale_columns(gu - matmul(u, utgu), sinv), mH(v));
  if (L.n > L.k()) ga = ga + matmul(scale_columns(u, sinv), mH(gv - matmul(v, vtgv)));
  dx[0] = ga;
}
Tensor svd_jvp(const JvpArgs& a, const Tensor* dx) {
  // dP = U^H dA V: ds = Re diag(dP), U^H dU = F o (dP S + S dP^H) + i Im diag(dP) S^-1 (the
  // phase change, on U alone), V^H dV = F o (S dP + dP^H S), and the parts outside the spans:
  // (I - U U^H) dA V S^-1, (I - V V^H) dA^H U S^-1.
  const SvdLayout& L = a.attrs<SvdLayout>();
  const Tensor& out = a.output();
  Tensor u = u_of(L, out), s = s_of(L, out), v = v_of(L, out);
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
  return concat({flat(du), diagonal(real_part(dp)), flat(dv)}, -1);
}

}  // namespace

std::tuple<Tensor, Tensor> eigh(const Tensor& a) {
  detail::check_matrix(a, "eigh", true);
  const EighLayout L{a.shape()[a.ndim() - 1]};
  Tensor out = bind(linalg_eigh_p, {a}, L);
  return {eig_values(L, out), eig_vectors(L, out)};
}

Tensor eigvalsh(const Tensor& a) { return std::get<0>(eigh(a)); }

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a) {
  detail::check_matrix(a, "svd", false);
  const SvdLayout L{a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]};
  Tensor out = bind(linalg_svd_p, {a}, L);
  return {u_of(L, out), s_of(L, out), mH(v_of(L, out))};
}

Tensor svdvals(const Tensor& a) { return std::get<1>(svd(a)); }

}  // namespace fx::linalg

namespace fx {

// Eigenvalues (ascending) and eigenvectors of (a + a^H) / 2, packed (EighLayout); saves the
// output.
Primitive linalg_eigh_p{.name = "linalg_eigh",
                        .forward = linalg::eigh_rule,
                        .saves = saves::output,
                        .pullback = linalg::eigh_pullback,
                        .jvp = linalg::eigh_jvp,
                        .batch = detail::batch_leading};

// Reduced SVD, U, s and V packed (SvdLayout); saves the output.
Primitive linalg_svd_p{.name = "linalg_svd",
                       .forward = linalg::svd_rule,
                       .saves = saves::output,
                       .pullback = linalg::svd_pullback,
                       .jvp = linalg::svd_jvp,
                       .batch = detail::batch_leading};

}  // namespace fx
