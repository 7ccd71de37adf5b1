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
// with zero imaginary parts.
#include <algorithm>
#include <complex>
#include <type_traits>
#include <vector>

#include "fluxion/ops/complex.hpp"
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
using detail::inverse_gaps;
using detail::lapack_copy;
using detail::mH;
using detail::mT;
using detail::real_part;
using detail::sym;
using detail::unpack;

namespace {

// w (n) then V (n, n) of each matrix, flat, into out (..., n + n n); w is real (stored in T).
template <class T>
void syevd_batch(Tensor& a, Tensor& out, const Shape& shape) {
  const int64_t n = a.shape()[a.ndim() - 1];
  std::vector<lapack::Real<T>> w(static_cast<size_t>(n));
  T *pa = a.data<T>(), *po = out.data<T>();
  for (int64_t b = 0, count = batch_count(a); b < count; ++b) {
    T* v = po + b * (n + n * n);
    const lapack::I info = lapack::syevd(n, pa + b * n * n, w.data());
    FX_CHECK(info <= 0, "fx::linalg::eigh: ", shape, ": matrix ", b, " did not converge");
    FX_CHECK(info == 0, "fx::linalg::eigh: LAPACK syevd rejected argument ", -info);
    std::copy(w.begin(), w.end(), v);
    std::copy(pa + b * n * n, pa + (b + 1) * n * n, v + n);
  }
}

// U (m, k), s (k) and V (n, k) of each matrix, flat, into out (..., m k + k + n k); s is real
// (stored in T), V = (V^H)^H.
template <class T>
void gesdd_batch(Tensor& a, Tensor& out, const Shape& shape) {
  const int64_t m = a.shape()[a.ndim() - 2], n = a.shape()[a.ndim() - 1], k = std::min(m, n);
  std::vector<T> vt(size_t(k * n));
  std::vector<lapack::Real<T>> sv(static_cast<size_t>(k));
  T *pa = a.data<T>(), *po = out.data<T>();
  for (int64_t b = 0, count = batch_count(a); b < count; ++b) {
    T *u = po + b * (m * k + k + n * k), *s = u + m * k, *v = s + k;
    const lapack::I info = lapack::gesdd(m, n, pa + b * m * n, sv.data(), u, vt.data());
    FX_CHECK(info <= 0, "fx::linalg::svd: ", shape, ": matrix ", b, " did not converge");
    FX_CHECK(info == 0, "fx::linalg::svd: LAPACK gesdd rejected argument ", -info);
    std::copy(sv.begin(), sv.end(), s);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) {
        const T x = vt[size_t(j * n + i)];
        if constexpr (std::is_same_v<T, lapack::Real<T>>) v[i * k + j] = x;
        else v[i * k + j] = std::conj(x);
      }
  }
}

// The parts of eigh_p's output (or of its cotangent) for n x n matrices; the eigenvalues as a
// real tensor.
Tensor eig_values(const Tensor& packed, int64_t n) { return real(slice(packed, -1, 0, n)); }
Tensor eig_vectors(const Tensor& packed, int64_t n) { return unpack(packed, n, n, n); }

// svd_p's attributes, the matrix shape; the parts of its output (or of its cotangent).
struct SvdShape {
  int64_t m = 0, n = 0;
  FX_ATTRS(SvdShape, m, n)
  int64_t k() const { return std::min(m, n); }
  Tensor u(const Tensor& packed) const { return unpack(packed, 0, m, k()); }
  Tensor s(const Tensor& packed) const {  // real
    return real(slice(packed, -1, m * k(), m * k() + k()));
  }
  Tensor v(const Tensor& packed) const { return unpack(packed, m * k() + k(), n, k()); }
};

// eigh_p's attributes: the matrix size n (the output packs n eigenvalues, then V).
struct EighAttrs {
  int64_t n = 0;
  FX_ATTRS(EighAttrs, n)
};

Tensor scale_columns(const Tensor& x, const Tensor& s) { return x * unsqueeze(s, -2); }
Tensor scale_rows(const Tensor& x, const Tensor& s) { return unsqueeze(s, -1) * x; }

}  // namespace

// Eigenvalues (ascending) and eigenvectors of (a + a^T) / 2; saves the output.
Primitive eigh_p{
    .name = "linalg_eigh",
    .forward =
        [](const Primitive&, std::span<const Tensor> in, Attrs) {
          const int64_t n = in[0].shape()[in[0].ndim() - 1];
          Shape s = detail::leading(in[0].shape(), 2);
          s.push_back(n + n * n);
          Tensor a = lapack_copy(sym(detail::untracked(in[0]))), out = Tensor::empty(s, a.dtype());
          detail::visit_lapack(a.dtype(),
                               [&]<class T>() { syevd_batch<T>(a, out, in[0].shape()); });
          return out;
        },
    .saves = saves::output,
    .pullback =
        [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
          // dA = sym(V (diag(dw) + F o (V^H dV)) V^H), F_ij = 1 / (w_j - w_i). F's zero diagonal
          // drops the (imaginary) diagonal of V^H dV, the phase part.
          const int64_t n = a.attrs<EighAttrs>().n;
          Tensor w = eig_values(a.output(), n), v = eig_vectors(a.output(), n);
          Tensor inner =
              diag_embed(eig_values(dy, n)) + inverse_gaps(w) * matmul(mH(v), eig_vectors(dy, n));
          dx[0] = sym(matmul(matmul(v, inner), mH(v)));
        },
    .jvp =
        [](const JvpArgs& a, const Tensor* dx) {
          // K = V^H dA V: dw = diag(K) (real), dV = V (F o K).
          const int64_t n = a.attrs<EighAttrs>().n;
          Tensor w = eig_values(a.output(), n), v = eig_vectors(a.output(), n);
          Tensor k = matmul(matmul(mH(v), sym(dx[0])), v);
          return concat({diagonal(real_part(k)), flat(matmul(v, inverse_gaps(w) * k))}, -1);
        },
    .batch = fx::detail::batch_leading};

// Reduced SVD; saves the output.
Primitive svd_p{
    .name = "linalg_svd",
    .forward =
        [](const Primitive&, std::span<const Tensor> in, Attrs pr) {
          const SvdShape& ss = pr.get<SvdShape>();
          Shape s = detail::leading(in[0].shape(), 2);
          s.push_back(ss.m * ss.k() + ss.k() + ss.n * ss.k());
          Tensor a = lapack_copy(in[0]), out = Tensor::empty(s, a.dtype());
          if (ss.k() > 0)
            detail::visit_lapack(a.dtype(),
                                 [&]<class T>() { gesdd_batch<T>(a, out, in[0].shape()); });
          return out;
        },
    .saves = saves::output,
    .pullback =
        [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
          // The adjoint of the pushforward below. With Mu = F o (U^H dU), Mv = F o (V^H dV):
          // dA = U (diag(ds) + (Mu + Mu^H) S + S (Mv + Mv^H) + i Im diag(U^H dU) S^-1) V^H
          //      + (I - U U^H) dU S^-1 V^H  (m > k)  +  U S^-1 dV^H (I - V V^H)  (n > k).
          // The imaginary-diagonal term (complex only) is the adjoint of the phase the pushforward
          // gives U; for a phase-invariant loss Im diag(U^H dU) = -Im diag(V^H dV), as torch checks.
          const SvdShape& ss = a.attrs<SvdShape>();
          const Tensor& out = a.output();
          Tensor u = ss.u(out), s = ss.s(out), v = ss.v(out), gu = ss.u(dy), gv = ss.v(dy);
          Tensor f = inverse_gaps(s * s);
          Tensor utgu = matmul(mH(u), gu), vtgv = matmul(mH(v), gv);
          Tensor mu = f * utgu, mv = f * vtgv;
          Tensor sinv = detail::safe_reciprocal(s);
          Tensor inner =
              diag_embed(ss.s(dy)) + scale_columns(mu + mH(mu), s) + scale_rows(mv + mH(mv), s);
          if (is_complex(u.dtype())) {
            Tensor im = imag(diagonal(utgu)) * sinv;
            inner = inner + diag_embed(complex(zeros_like(im), im));
          }
          Tensor ga = matmul(matmul(u, inner), mH(v));
          if (ss.m > ss.k()) ga = ga + matmul(scale_columns(gu - matmul(u, utgu), sinv), mH(v));
          if (ss.n > ss.k()) ga = ga + matmul(scale_columns(u, sinv), mH(gv - matmul(v, vtgv)));
          dx[0] = ga;
        },
    .jvp =
        [](const JvpArgs& a, const Tensor* dx) {
          // dP = U^H dA V: ds = Re diag(dP), U^H dU = F o (dP S + S dP^H) + i Im diag(dP) S^-1
          // (the phase change, on U alone), V^H dV = F o (S dP + dP^H S), and the parts outside
          // the spans: (I - U U^H) dA V S^-1, (I - V V^H) dA^H U S^-1.
          const SvdShape& ss = a.attrs<SvdShape>();
          const Tensor& out = a.output();
          Tensor u = ss.u(out), s = ss.s(out), v = ss.v(out);
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
          if (ss.m > ss.k()) du = du + scale_columns(dav - matmul(u, dp), sinv);
          if (ss.n > ss.k()) dv = dv + scale_columns(datu - matmul(v, mH(dp)), sinv);
          return concat({flat(du), diagonal(real_part(dp)), flat(dv)}, -1);
        },
    .batch = fx::detail::batch_leading};

std::tuple<Tensor, Tensor> eigh(const Tensor& a) {
  detail::check_matrix(a, "eigh", true);
  const int64_t n = a.shape()[a.ndim() - 1];
  Tensor out = bind(eigh_p, {a}, EighAttrs{n});
  return {eig_values(out, n), eig_vectors(out, n)};
}

Tensor eigvalsh(const Tensor& a) { return std::get<0>(eigh(a)); }

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a) {
  detail::check_matrix(a, "svd", false);
  const SvdShape ss{a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]};
  Tensor out = bind(svd_p, {a}, ss);
  return {ss.u(out), ss.s(out), mH(ss.v(out))};
}

Tensor svdvals(const Tensor& a) { return std::get<1>(svd(a)); }

}  // namespace fx::linalg
