// Linear systems and determinants on LU (getrf/gesv) and triangular solves (trtrs): the
// primitives linalg_solve, linalg_triangular_solve, linalg_logabsdet, linalg_det_sign and
// linalg_complex_logdet, and inv, det, slogdet, logdet built on them. Each forward is a shape
// rule and a dispatch; the LAPACK kernels are in src/backend/cpu/linalg_solve.cpp.
#include <complex>
#include <limits>
#include <tuple>

#include "fluxion/ops/complex.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg.hpp"
#include "fluxion/ops/linalg_lapack.hpp"
#include "fluxion/ops/primitives.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/batching.hpp"
#include "ops/linalg_attrs.hpp"
#include "ops/linalg_util.hpp"

namespace fx::linalg {

using detail::add_defined;
using detail::mH;
using detail::mT;
using detail::SolveAttrs;
using detail::TriangleAttrs;

namespace {

// Shape rule of both solves: x is shaped like b (..., n, k), a (..., n, n) of b's batch axes and
// dtype.
Tensor solve_forward(const Primitive& p, std::span<const Tensor> in, Attrs attrs, const char* op) {
  const Tensor &a = in[0], &b = in[1];
  detail::check_operands(detail::is_matrix(a, true) && b.defined() && b.ndim() == a.ndim() &&
                             b.dtype() == a.dtype() &&
                             detail::leading(b.shape(), 1) == detail::leading(a.shape(), 1),
                         op, in, "needs a (..., n, n) and b (..., n, k) of one batch and dtype");
  return detail::allocate_and_dispatch(p, in, attrs, b.shape(), b.dtype());
}

// Shape rule of the determinant family: one value per matrix of a (..., n, n).
Tensor det_forward(const Primitive& p, std::span<const Tensor> in, Attrs attrs, const char* op,
                   DType dtype) {
  detail::check_operands(detail::is_matrix(in[0], true), op, in, "needs square matrices");
  return detail::allocate_and_dispatch(p, in, attrs, detail::leading(in[0].shape(), 2), dtype);
}

// x = a^-1 b. SolveAttrs (or none): which public function binds it.
Tensor solve_rule(const Primitive& p, std::span<const Tensor> in, Attrs attrs) {
  return solve_forward(p, in, attrs, detail::solve_name(attrs));
}
void solve_pullback(const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
  Tensor g = bind(linalg_solve_p, {mH(a.input(0)), dy});  // A^-H dX
  if (a.wants(0)) dx[0] = -matmul(g, mH(a.output()));
  if (a.wants(1)) dx[1] = g;
}
Tensor solve_jvp(const JvpArgs& a, const Tensor* dx) {
  Tensor rhs = add_defined(dx[1], dx[0].defined() ? -matmul(dx[0], a.output()) : Tensor());
  return rhs.defined() ? bind(linalg_solve_p, {a.input(0), rhs}) : Tensor();
}

// TriangleAttrs. The other triangle of a is never read, so the derivatives with respect to a are
// masked to the triangle.
Tensor triangular_solve_rule(const Primitive& p, std::span<const Tensor> in, Attrs attrs) {
  return solve_forward(p, in, attrs, "triangular_solve");
}
void triangular_solve_pullback(const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
  const bool upper = a.attrs<TriangleAttrs>().upper;
  const TriangleAttrs flipped{!upper};
  Tensor g = bind(linalg_triangular_solve_p, {mH(a.input(0)), dy}, flipped);
  if (a.wants(0)) {
    Tensor ga = -matmul(g, mH(a.output()));
    dx[0] = upper ? detail::triu(ga) : detail::tril(ga);
  }
  if (a.wants(1)) dx[1] = g;
}
Tensor triangular_solve_jvp(const JvpArgs& a, const Tensor* dx) {
  const bool upper = a.attrs<TriangleAttrs>().upper;
  Tensor da = !dx[0].defined() ? Tensor() : upper ? detail::triu(dx[0]) : detail::tril(dx[0]);
  Tensor rhs = add_defined(dx[1], da.defined() ? -matmul(da, a.output()) : Tensor());
  return rhs.defined() ? bind(linalg_triangular_solve_p, {a.input(0), rhs}, a.attrs()) : Tensor();
}

// log|det a| (real) for a (..., n, n) -> (...).
Tensor logabsdet_rule(const Primitive& p, std::span<const Tensor> in, Attrs attrs) {
  return det_forward(p, in, attrs, "slogdet", real_dtype(in[0].dtype()));
}
void logabsdet_pullback(const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
  // d log|det A| = tr(A^-1 dA), so the cotangent is dy A^-T.
  dx[0] = unsqueeze(unsqueeze(dy, -1), -1) * mT(inv(a.input(0)));
}
Tensor logdet_jvp(const JvpArgs& a, const Tensor* dx) { return trace(solve(a.input(0), dx[0])); }

// The sign of det a, in a's dtype.
Tensor det_sign_rule(const Primitive& p, std::span<const Tensor> in, Attrs attrs) {
  return det_forward(p, in, attrs, "slogdet", in[0].dtype());
}

// log det a = log|det a| + i arg(det a) for complex a (..., n, n) -> (...).
Tensor complex_logdet_rule(const Primitive& p, std::span<const Tensor> in, Attrs attrs) {
  detail::check_operands(is_complex(in[0].dtype()), "logdet", in, "needs complex matrices");
  return det_forward(p, in, attrs, "logdet", in[0].dtype());
}
void complex_logdet_pullback(const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
  dx[0] = unsqueeze(unsqueeze(dy, -1), -1) * mH(inv(a.input(0)));
}

}  // namespace

Tensor solve(const Tensor& a0, const Tensor& b0) {
  detail::check_matrix(a0, "solve", true);
  Tensor a = a0, b = b0;
  bool vector = false;
  detail::broadcast_batch(a, b, "solve", vector);
  Tensor x = bind(linalg_solve_p, {a, b});
  return vector ? squeeze(x, -1) : x;
}

Tensor triangular_solve(const Tensor& a0, const Tensor& b0, bool upper) {
  detail::check_matrix(a0, "triangular_solve", true);
  Tensor a = a0, b = b0;
  bool vector = false;
  detail::broadcast_batch(a, b, "triangular_solve", vector);
  Tensor x = bind(linalg_triangular_solve_p, {a, b}, TriangleAttrs{upper});
  return vector ? squeeze(x, -1) : x;
}

Tensor inv(const Tensor& a) {
  detail::check_matrix(a, "inv", true);
  Tensor id = expand(eye(a.shape()[a.ndim() - 1], a.dtype(), a.device()), a.shape());
  return bind(linalg_solve_p, {a, id}, SolveAttrs{true});
}

std::tuple<Tensor, Tensor> slogdet(const Tensor& a) {
  detail::check_matrix(a, "slogdet", true);
  if (is_complex(a.dtype())) {
    // Both parts differentiate through log det: sign = exp(i arg det), logabs = Re log det.
    Tensor ld = bind(linalg_complex_logdet_p, {a});
    Tensor phase = imag(ld);
    Tensor sign = where(real(ld) == -std::numeric_limits<double>::infinity(), zeros_like(ld),
                        exp(complex(zeros_like(phase), phase)));
    return {sign, real(ld)};
  }
  return {bind(linalg_det_sign_p, {a}), bind(linalg_logabsdet_p, {a})};
}

Tensor det(const Tensor& a) {
  detail::check_matrix(a, "det", true);
  auto [sign, logabs] = slogdet(a);
  return sign * exp(logabs);
}

Tensor logdet(const Tensor& a) {
  detail::check_matrix(a, "logdet", true);
  // The principal log of a complex determinant, as torch.logdet.
  if (is_complex(a.dtype())) return bind(linalg_complex_logdet_p, {a});
  auto [sign, logabs] = slogdet(a);
  // log of a negative determinant is NaN, as torch.logdet.
  return where(sign < 0.0, std::numeric_limits<double>::quiet_NaN(), logabs);
}

}  // namespace fx::linalg

namespace fx {

// x = a^-1 b for a (..., n, n), b (..., n, k) of one batch shape.
Primitive linalg_solve_p{.name = "linalg_solve",
                         .forward = linalg::solve_rule,
                         .saves = saves::input(0) | saves::output,
                         .pullback = linalg::solve_pullback,
                         .jvp = linalg::solve_jvp,
                         .batch = detail::batch_leading};

// x = a^-1 b for triangular a: TriangleAttrs.
Primitive linalg_triangular_solve_p{.name = "linalg_triangular_solve",
                                    .forward = linalg::triangular_solve_rule,
                                    .saves = saves::input(0) | saves::output,
                                    .pullback = linalg::triangular_solve_pullback,
                                    .jvp = linalg::triangular_solve_jvp,
                                    .batch = detail::batch_leading};

// log|det a| for real a (..., n, n) -> (...).
Primitive linalg_logabsdet_p{.name = "linalg_logabsdet",
                             .forward = linalg::logabsdet_rule,
                             .saves = saves::input(0),
                             .pullback = linalg::logabsdet_pullback,
                             .jvp = linalg::logdet_jvp,
                             .batch = detail::batch_leading};

// The sign of det a for real a (..., n, n) -> (...): piecewise constant, so no pullback (its
// output is never tracked). A primitive so that vmap batches it like the others.
Primitive linalg_det_sign_p{
    .name = "linalg_det_sign", .forward = linalg::det_sign_rule, .batch = detail::batch_leading};

// log det a = log|det a| + i arg(det a) for complex a (..., n, n) -> (...), arg in (-pi, pi];
// -inf (+ 0i) where a is singular. Holomorphic away from there, with derivative A^-T: the
// cotangent is dy conj(A^-T) = dy A^-H.
Primitive linalg_complex_logdet_p{.name = "linalg_complex_logdet",
                                  .forward = linalg::complex_logdet_rule,
                                  .saves = saves::input(0),
                                  .pullback = linalg::complex_logdet_pullback,
                                  .jvp = linalg::logdet_jvp,
                                  .batch = detail::batch_leading};

}  // namespace fx
