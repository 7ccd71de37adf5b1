// Symmetric eigen-decomposition (syevd) and reduced SVD (gesdd) as primitives with pullbacks and
// pushforwards: the perturbation-theory rules used by JAX and PyTorch (for the SVD, Townsend,
// "Differentiating the singular value decomposition", 2016). See linalg_lapack.hpp for the
// degenerate cases.
#include <algorithm>
#include <vector>

#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg.hpp"
#include "fluxion/ops/linalg_lapack.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/lapack.hpp"
#include "ops/linalg_util.hpp"

namespace fx::linalg {

using detail::batch_count;
using detail::flat;
using detail::inverse_gaps;
using detail::lapack_copy;
using detail::mT;
using detail::sym;
using detail::unpack;

namespace {

// w (n) then V (n, n) of each matrix, flat, into out (..., n + n n).
template <class T>
void syevd_batch(Tensor& a, Tensor& out, const Shape& shape) {
  const int64_t n = a.shape()[a.ndim() - 1];
  T *pa = a.data<T>(), *po = out.data<T>();
  for (int64_t b = 0, count = batch_count(a); b < count; ++b) {
    T* v = po + b * (n + n * n);
    const lapack::I info = lapack::syevd(n, pa + b * n * n, v);
    FX_CHECK(info <= 0, "fx::linalg::eigh: ", shape, ": matrix ", b, " did not converge");
    FX_CHECK(info == 0, "fx::linalg::eigh: LAPACK syevd rejected argument ", -info);
    std::copy(pa + b * n * n, pa + (b + 1) * n * n, v + n);
  }
}

// U (m, k), s (k) and V (n, k) of each matrix, flat, into out (..., m k + k + n k).
template <class T>
void gesdd_batch(Tensor& a, Tensor& out, const Shape& shape) {
  const int64_t m = a.shape()[a.ndim() - 2], n = a.shape()[a.ndim() - 1], k = std::min(m, n);
  std::vector<T> vt(size_t(k * n));
  T *pa = a.data<T>(), *po = out.data<T>();
  for (int64_t b = 0, count = batch_count(a); b < count; ++b) {
    T *u = po + b * (m * k + k + n * k), *s = u + m * k, *v = s + k;
    const lapack::I info = lapack::gesdd(m, n, pa + b * m * n, s, u, vt.data());
    FX_CHECK(info <= 0, "fx::linalg::svd: ", shape, ": matrix ", b, " did not converge");
    FX_CHECK(info == 0, "fx::linalg::svd: LAPACK gesdd rejected argument ", -info);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) v[i * k + j] = vt[size_t(j * n + i)];
  }
}

// The parts of eigh_p's output (or of its cotangent) for n x n matrices.
Tensor eig_values(const Tensor& packed, int64_t n) { return slice(packed, -1, 0, n); }
Tensor eig_vectors(const Tensor& packed, int64_t n) { return unpack(packed, n, n, n); }

// The parts of svd_p's output (or of its cotangent); params.i[0], i[1]: the matrix shape.
struct SvdShape {
  int64_t m, n;
  explicit SvdShape(const Params& p) : m(p.i[0]), n(p.i[1]) {}
  int64_t k() const { return std::min(m, n); }
  Tensor u(const Tensor& packed) const { return unpack(packed, 0, m, k()); }
  Tensor s(const Tensor& packed) const { return slice(packed, -1, m * k(), m * k() + k()); }
  Tensor v(const Tensor& packed) const { return unpack(packed, m * k() + k(), n, k()); }
};

Tensor scale_columns(const Tensor& x, const Tensor& s) { return x * unsqueeze(s, -2); }
Tensor scale_rows(const Tensor& x, const Tensor& s) { return unsqueeze(s, -1) * x; }

}  // namespace

// Eigenvalues (ascending) and eigenvectors of (a + a^T) / 2; saves the output.
Primitive eigh_p{
    .name = "linalg_eigh",
    .forward = [](const Primitive&, std::span<const Tensor> in, const Params&) {
      const int64_t n = in[0].shape()[in[0].ndim() - 1];
      Shape s = detail::leading(in[0].shape(), 2);
      s.push_back(n + n * n);
      Tensor a = lapack_copy(sym(detail::untracked(in[0]))), out = Tensor::empty(s, a.dtype());
      if (a.dtype() == f64) syevd_batch<double>(a, out, in[0].shape());
      else syevd_batch<float>(a, out, in[0].shape());
      return out;
    },
    .saves = saves::output,
    .pullback = [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
      // dA = sym(V (diag(dw) + F o (V^T dV)) V^T), F_ij = 1 / (w_j - w_i).
      const int64_t n = a.params().i[0];
      Tensor w = eig_values(a.output(), n), v = eig_vectors(a.output(), n);
      Tensor inner = diag_embed(eig_values(dy, n)) +
                     inverse_gaps(w) * matmul(mT(v), eig_vectors(dy, n));
      dx[0] = sym(matmul(matmul(v, inner), mT(v)));
    },
    .jvp = [](const JvpArgs& a, const Tensor* dx) {
      // K = V^T dA V: dw = diag(K), dV = V (F o K).
      const int64_t n = a.params().i[0];
      Tensor w = eig_values(a.output(), n), v = eig_vectors(a.output(), n);
      Tensor k = matmul(matmul(mT(v), sym(dx[0])), v);
      return concat({diagonal(k), flat(matmul(v, inverse_gaps(w) * k))}, -1);
    }};

// Reduced SVD; saves the output.
Primitive svd_p{
    .name = "linalg_svd",
    .forward = [](const Primitive&, std::span<const Tensor> in, const Params& pr) {
      SvdShape ss(pr);
      Shape s = detail::leading(in[0].shape(), 2);
      s.push_back(ss.m * ss.k() + ss.k() + ss.n * ss.k());
      Tensor a = lapack_copy(in[0]), out = Tensor::empty(s, a.dtype());
      if (ss.k() > 0) {
        if (a.dtype() == f64) gesdd_batch<double>(a, out, in[0].shape());
        else gesdd_batch<float>(a, out, in[0].shape());
      }
      return out;
    },
    .saves = saves::output,
    .pullback = [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
      // The adjoint of the pushforward below. With Mu = F o (U^T dU), Mv = F o (V^T dV):
      // dA = U (diag(ds) + (Mu + Mu^T) S + S (Mv + Mv^T)) V^T
      //      + (I - U U^T) dU S^-1 V^T  (m > k)  +  U S^-1 dV^T (I - V V^T)  (n > k).
      SvdShape ss(a.params());
      const Tensor& out = a.output();
      Tensor u = ss.u(out), s = ss.s(out), v = ss.v(out), gu = ss.u(dy), gv = ss.v(dy);
      Tensor f = inverse_gaps(s * s);
      Tensor utgu = matmul(mT(u), gu), vtgv = matmul(mT(v), gv);
      Tensor mu = f * utgu, mv = f * vtgv;
      Tensor inner = diag_embed(ss.s(dy)) + scale_columns(mu + mT(mu), s) +
                     scale_rows(mv + mT(mv), s);
      Tensor ga = matmul(matmul(u, inner), mT(v));
      Tensor sinv = detail::safe_reciprocal(s);
      if (ss.m > ss.k()) ga = ga + matmul(scale_columns(gu - matmul(u, utgu), sinv), mT(v));
      if (ss.n > ss.k()) ga = ga + matmul(scale_columns(u, sinv), mT(gv - matmul(v, vtgv)));
      dx[0] = ga;
    },
    .jvp = [](const JvpArgs& a, const Tensor* dx) {
      // dP = U^T dA V: ds = diag(dP), U^T dU = F o (dP S + S dP^T), V^T dV = F o (S dP + dP^T S),
      // and the parts outside the spans: (I - U U^T) dA V S^-1, (I - V V^T) dA^T U S^-1.
      SvdShape ss(a.params());
      const Tensor& out = a.output();
      Tensor u = ss.u(out), s = ss.s(out), v = ss.v(out);
      Tensor f = inverse_gaps(s * s);
      Tensor dav = matmul(dx[0], v), datu = matmul(mT(dx[0]), u);
      Tensor dp = matmul(mT(u), dav);
      Tensor du = matmul(u, f * (scale_columns(dp, s) + scale_rows(mT(dp), s)));
      Tensor dv = matmul(v, f * (scale_rows(dp, s) + scale_columns(mT(dp), s)));
      Tensor sinv = detail::safe_reciprocal(s);
      if (ss.m > ss.k()) du = du + scale_columns(dav - matmul(u, dp), sinv);
      if (ss.n > ss.k()) dv = dv + scale_columns(datu - matmul(v, mT(dp)), sinv);
      return concat({flat(du), diagonal(dp), flat(dv)}, -1);
    }};

std::tuple<Tensor, Tensor> eigh(const Tensor& a) {
  detail::check_matrix(a, "eigh", true);
  const int64_t n = a.shape()[a.ndim() - 1];
  Params p;
  p.i[0] = n;
  Tensor out = bind(eigh_p, {a}, p);
  return {eig_values(out, n), eig_vectors(out, n)};
}

Tensor eigvalsh(const Tensor& a) { return std::get<0>(eigh(a)); }

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a) {
  detail::check_matrix(a, "svd", false);
  Params p;
  p.i[0] = a.shape()[a.ndim() - 2];
  p.i[1] = a.shape()[a.ndim() - 1];
  SvdShape ss(p);
  Tensor out = bind(svd_p, {a}, p);
  return {ss.u(out), ss.s(out), mT(ss.v(out))};
}

Tensor svdvals(const Tensor& a) { return std::get<1>(svd(a)); }

}  // namespace fx::linalg
