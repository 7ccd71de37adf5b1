// Linear systems and determinants on LU (getrf/gesv) and triangular solves (trtrs): the
// primitives solve, triangular_solve and logabsdet, and inv, det, slogdet, logdet built on them.
#include <cmath>
#include <complex>
#include <limits>
#include <tuple>
#include <vector>

#include "fluxion/ops/complex.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg.hpp"
#include "fluxion/ops/linalg_lapack.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/batching.hpp"
#include "ops/lapack.hpp"
#include "ops/linalg_util.hpp"

namespace fx::linalg {

using detail::add_defined;
using detail::batch_count;
using detail::lapack_copy;
using detail::mH;
using detail::mT;

namespace {

// solve_p's attributes: which public function is asking, for the messages.
struct SolveAttrs {
  bool inv = false;
  FX_ATTRS(SolveAttrs, inv)
};
const char* solve_name(Attrs p) { return !p.empty() && p.get<SolveAttrs>().inv ? "inv" : "solve"; }
// triangular_solve_p's: which triangle of a is read.
struct TriangleAttrs {
  bool upper = false;
  FX_ATTRS(TriangleAttrs, upper)
};

template <class T>
void gesv_batch(Tensor& a, Tensor& x, const Shape& shape, const char* op) {
  const int64_t n = a.shape()[a.ndim() - 1], k = x.shape()[x.ndim() - 1];
  if (n == 0 || k == 0) return;
  std::vector<lapack::I> piv(static_cast<size_t>(n));
  T *pa = a.data<T>(), *px = x.data<T>();
  for (int64_t m = 0, count = batch_count(a); m < count; ++m) {
    const lapack::I info = lapack::gesv(n, k, pa + m * n * n, piv.data(), px + m * n * k);
    FX_CHECK(info <= 0, "fx::linalg::", op, ": ", shape, ": matrix ", m, " is singular (pivot ",
             info - 1, " of its LU factors is exactly zero)");
    FX_CHECK(info == 0, "fx::linalg::", op, ": LAPACK gesv rejected argument ", -info);
  }
}

template <class T>
void trtrs_batch(const Tensor& a, Tensor& x, bool upper, const Shape& shape) {
  const int64_t n = a.shape()[a.ndim() - 1], k = x.shape()[x.ndim() - 1];
  if (n == 0 || k == 0) return;
  const T* pa = a.data<T>();
  T* px = x.data<T>();
  for (int64_t m = 0, count = batch_count(a); m < count; ++m) {
    const lapack::I info = lapack::trtrs(upper ? 'U' : 'L', n, k, pa + m * n * n, px + m * n * k);
    FX_CHECK(info <= 0, "fx::linalg::triangular_solve: ", shape, ": matrix ", m,
             " is singular (diagonal entry ", info - 1, " is zero)");
    FX_CHECK(info == 0, "fx::linalg::triangular_solve: LAPACK trtrs rejected argument ", -info);
  }
}

// sign(det) and log|det| of each matrix from its LU factors (a is overwritten): sign is -1, 0
// or 1 for real matrices and det / |det| (0 where singular) for complex ones, in a's dtype;
// logabs is real, -inf where singular.
template <class T>
void lu_slogdet(Tensor& a, Tensor& sign, Tensor& logabs) {
  using R = lapack::Real<T>;
  const int64_t n = a.shape()[a.ndim() - 1];
  std::vector<lapack::I> piv(static_cast<size_t>(n));
  T* pa = a.data<T>();
  T* ps = sign.data<T>();
  R* pl = logabs.data<R>();
  for (int64_t m = 0, count = sign.numel(); m < count; ++m) {
    T* lu = pa + m * n * n;
    const lapack::I info = n ? lapack::getrf(n, lu, piv.data()) : 0;
    FX_CHECK(info >= 0, "fx::linalg::slogdet: LAPACK getrf rejected argument ", -info);
    T s(1);
    double l = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T u = lu[i * n + i];
      const double mod = double(std::abs(u));
      if (piv[size_t(i)] != i + 1) s = -s;  // a row interchange
      if (mod > 0) s *= u / T(R(mod));      // the sign (phase) of the pivot
      l += std::log(mod);
    }
    ps[m] = info > 0 ? T(0) : s / T(std::abs(s));  // renormalised: |s| drifts by rounding
    pl[m] = R(info > 0 ? -std::numeric_limits<double>::infinity() : l);
  }
}

// The LU slogdet of each matrix of x (dtype t) as (sign, logabs).
std::tuple<Tensor, Tensor> lu_slogdet(const Tensor& x) {
  const Shape batch = detail::leading(x.shape(), 2);
  Tensor a = lapack_copy(x);
  Tensor sign = Tensor::empty(batch, a.dtype());
  Tensor logabs = Tensor::empty(batch, real_dtype(a.dtype()));
  detail::visit_lapack(a.dtype(), [&]<class T>() { lu_slogdet<T>(a, sign, logabs); });
  return {sign, logabs};
}

}  // namespace

// x = a^-1 b for a (..., n, n), b (..., n, k) of one batch shape.
Primitive solve_p{
    .name = "linalg_solve",
    .forward =
        [](const Primitive&, std::span<const Tensor> in, Attrs pr) {
          Tensor a = lapack_copy(in[0]), x = lapack_copy(in[1]);
          detail::visit_lapack(
              a.dtype(), [&]<class T>() { gesv_batch<T>(a, x, in[0].shape(), solve_name(pr)); });
          return x;
        },
    .saves = saves::input(0) | saves::output,
    .pullback =
        [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
          Tensor g = bind(solve_p, {mH(a.input(0)), dy});  // A^-H dX
          if (a.wants(0)) dx[0] = -matmul(g, mH(a.output()));
          if (a.wants(1)) dx[1] = g;
        },
    .jvp =
        [](const JvpArgs& a, const Tensor* dx) {
          Tensor rhs = add_defined(dx[1], dx[0].defined() ? -matmul(dx[0], a.output()) : Tensor());
          return rhs.defined() ? bind(solve_p, {a.input(0), rhs}) : Tensor();
        },
    .batch = fx::detail::batch_leading};

// TriangleAttrs. The other triangle of a is never read, so the derivatives
// with respect to a are masked to the triangle.
Primitive triangular_solve_p{
    .name = "linalg_triangular_solve",
    .forward =
        [](const Primitive&, std::span<const Tensor> in, Attrs pr) {
          Tensor a = lapack_copy(in[0]), x = lapack_copy(in[1]);
          detail::visit_lapack(a.dtype(), [&]<class T>() {
            trtrs_batch<T>(a, x, pr.get<TriangleAttrs>().upper, in[0].shape());
          });
          return x;
        },
    .saves = saves::input(0) | saves::output,
    .pullback =
        [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
          const bool upper = a.attrs<TriangleAttrs>().upper;
          const TriangleAttrs flipped{!upper};
          Tensor g = bind(triangular_solve_p, {mH(a.input(0)), dy}, flipped);
          if (a.wants(0)) {
            Tensor ga = -matmul(g, mH(a.output()));
            dx[0] = upper ? detail::triu(ga) : detail::tril(ga);
          }
          if (a.wants(1)) dx[1] = g;
        },
    .jvp =
        [](const JvpArgs& a, const Tensor* dx) {
          const bool upper = a.attrs<TriangleAttrs>().upper;
          Tensor da = !dx[0].defined() ? Tensor()
                      : upper          ? detail::triu(dx[0])
                                       : detail::tril(dx[0]);
          Tensor rhs = add_defined(dx[1], da.defined() ? -matmul(da, a.output()) : Tensor());
          return rhs.defined() ? bind(triangular_solve_p, {a.input(0), rhs}, a.attrs()) : Tensor();
        },
    .batch = fx::detail::batch_leading};

// log|det a| for real a (..., n, n) -> (...).
Primitive logabsdet_p{
    .name = "linalg_logabsdet",
    .forward = [](const Primitive&, std::span<const Tensor> in,
                  Attrs) { return std::get<1>(lu_slogdet(in[0])); },
    .saves = saves::input(0),
    .pullback =
        [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
          // d log|det A| = tr(A^-1 dA), so the cotangent is dy A^-T.
          dx[0] = unsqueeze(unsqueeze(dy, -1), -1) * mT(inv(a.input(0)));
        },
    .jvp = [](const JvpArgs& a, const Tensor* dx) { return trace(solve(a.input(0), dx[0])); },
    .batch = fx::detail::batch_leading};

// The sign of det a for real a (..., n, n) -> (...): piecewise constant, so no pullback (its
// output is never tracked). A primitive so that vmap batches it like the others.
Primitive det_sign_p{.name = "linalg_det_sign",
                     .forward = [](const Primitive&, std::span<const Tensor> in,
                                   Attrs) { return std::get<0>(lu_slogdet(in[0])); },
                     .batch = fx::detail::batch_leading};

// log det a = log|det a| + i arg(det a) for complex a (..., n, n) -> (...), arg in (-pi, pi];
// -inf (+ 0i) where a is singular. Holomorphic away from there, with derivative A^-T: the
// cotangent is dy conj(A^-T) = dy A^-H.
Primitive complex_logdet_p{
    .name = "linalg_complex_logdet",
    .forward =
        [](const Primitive&, std::span<const Tensor> in, Attrs) {
          auto [sign, logabs] = lu_slogdet(in[0]);
          std::vector<std::complex<double>> s = to_vector<std::complex<double>>(sign);
          std::vector<double> l = to_vector<double>(logabs);
          std::vector<std::complex<double>> out(s.size());
          for (size_t i = 0; i < s.size(); ++i) out[i] = {l[i], s[i] == 0.0 ? 0.0 : std::arg(s[i])};
          return astype(from_vector(out, sign.shape()), sign.dtype());
        },
    .saves = saves::input(0),
    .pullback = [](const PullbackArgs& a, const Tensor& dy,
                   Tensor* dx) { dx[0] = unsqueeze(unsqueeze(dy, -1), -1) * mH(inv(a.input(0))); },
    .jvp = [](const JvpArgs& a, const Tensor* dx) { return trace(solve(a.input(0), dx[0])); },
    .batch = fx::detail::batch_leading};

Tensor solve(const Tensor& a0, const Tensor& b0) {
  detail::check_matrix(a0, "solve", true);
  Tensor a = a0, b = b0;
  bool vector = false;
  detail::broadcast_batch(a, b, "solve", vector);
  Tensor x = bind(solve_p, {a, b});
  return vector ? squeeze(x, -1) : x;
}

Tensor triangular_solve(const Tensor& a0, const Tensor& b0, bool upper) {
  detail::check_matrix(a0, "triangular_solve", true);
  Tensor a = a0, b = b0;
  bool vector = false;
  detail::broadcast_batch(a, b, "triangular_solve", vector);
  Tensor x = bind(triangular_solve_p, {a, b}, TriangleAttrs{upper});
  return vector ? squeeze(x, -1) : x;
}

Tensor inv(const Tensor& a) {
  detail::check_matrix(a, "inv", true);
  Tensor id = expand(eye(a.shape()[a.ndim() - 1], a.dtype()), a.shape());
  return bind(solve_p, {a, id}, SolveAttrs{true});
}

std::tuple<Tensor, Tensor> slogdet(const Tensor& a) {
  detail::check_matrix(a, "slogdet", true);
  if (is_complex(a.dtype())) {
    // Both parts differentiate through log det: sign = exp(i arg det), logabs = Re log det.
    Tensor ld = bind(complex_logdet_p, {a});
    Tensor phase = imag(ld);
    Tensor sign = where(real(ld) == -std::numeric_limits<double>::infinity(), zeros_like(ld),
                        exp(complex(zeros_like(phase), phase)));
    return {sign, real(ld)};
  }
  return {bind(det_sign_p, {a}), bind(logabsdet_p, {a})};
}

Tensor det(const Tensor& a) {
  detail::check_matrix(a, "det", true);
  auto [sign, logabs] = slogdet(a);
  return sign * exp(logabs);
}

Tensor logdet(const Tensor& a) {
  detail::check_matrix(a, "logdet", true);
  // The principal log of a complex determinant, as torch.logdet.
  if (is_complex(a.dtype())) return bind(complex_logdet_p, {a});
  auto [sign, logabs] = slogdet(a);
  // log of a negative determinant is NaN, as torch.logdet.
  return where(sign < 0.0, std::numeric_limits<double>::quiet_NaN(), logabs);
}

}  // namespace fx::linalg
