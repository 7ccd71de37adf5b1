// Complex numbers in scalar reverse mode: std::complex<fx::Real> in generic code, and
// derivatives of complex functions of one complex variable.
//
//   // Real-valued f of z = x + iy: fx::gradient returns ∂f/∂x + i ∂f/∂y (Zygote's convention).
//   std::complex<double> g = fx::gradient([](auto z) { return std::norm(z); }, std::complex<double>(1, 2));  // 2+4i
//   auto gv = fx::gradient([](const auto& v) { return std::abs(v[0] * v[1]); },
//                          std::vector<std::complex<double>>{{1, 2}, {3, -1}});
//
//   // Complex-valued f: the complex derivative of a holomorphic f, or both Wirtinger derivatives.
//   std::complex<double> d = fx::derivative_holomorphic([](auto z) { return z * z; }, z0);  // 2 z0
//   auto [dz, dzbar] = fx::wirtinger([](auto z) { return std::conj(z); }, z0);             // (0, 1)
//
// Generic code written for std::complex<double> runs on std::complex<fx::Real>: libstdc++'s
// generic std::complex<T> does the arithmetic and std::abs/arg/norm/conj/real/imag/exp/log/sqrt/
// sin/cos/.../pow(z, int), calling fx::Real's functions by argument-dependent lookup. What the
// standard templates cannot do, because they want both operands of one type, is mix
// std::complex<Real> with double or std::complex<double> (`z * 2.0`, `z + w0`): the overloads below
// add those, and faster abs/norm/arg/exp/log/pow, found by the same lookup when called
// unqualified (`abs(z)`, or `using std::abs; abs(z)`). `std::pow(z, 2.0)` spelled with `std::`
// does not compile for std::complex<Real> (the standard's pow wants the exponent's type to be
// Real); write `pow(z, 2.0)` or `std::pow(z, 2)`.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <type_traits>
#include <utility>

#include "fluxion/ad/scalar.hpp"
#include "fluxion/core/error.hpp"

namespace fx {

using ComplexReal = std::complex<Real>;

// ---- mixed arithmetic the std::complex templates do not deduce.
#define FX_COMPLEX_REAL_MIXED(OP)                                                         \
  inline ComplexReal operator OP(const ComplexReal& a, double b) { return a OP Real(b); } \
  inline ComplexReal operator OP(double a, const ComplexReal& b) { return Real(a) OP b; } \
  inline ComplexReal operator OP(const ComplexReal& a, const std::complex<double>& b) {   \
    return a OP ComplexReal(b.real(), b.imag());                                          \
  }                                                                                       \
  inline ComplexReal operator OP(const std::complex<double>& a, const ComplexReal& b) {   \
    return ComplexReal(a.real(), a.imag()) OP b;                                          \
  }
FX_COMPLEX_REAL_MIXED(+)
FX_COMPLEX_REAL_MIXED(-)
FX_COMPLEX_REAL_MIXED(*)
FX_COMPLEX_REAL_MIXED(/)
#undef FX_COMPLEX_REAL_MIXED

inline bool operator==(const ComplexReal& a, double b) { return a.real() == b && a.imag() == 0; }
inline bool operator==(const ComplexReal& a, const std::complex<double>& b) {
  return a.real() == b.real() && a.imag() == b.imag();
}

// ---- functions: one statement where libstdc++'s generic versions take several (and defined
// where the generic ones would not compile).
inline Real abs(const ComplexReal& z) { return hypot(z.real(), z.imag()); }
inline Real norm(const ComplexReal& z) { return z.real() * z.real() + z.imag() * z.imag(); }
inline Real arg(const ComplexReal& z) { return atan2(z.imag(), z.real()); }
inline ComplexReal conj(const ComplexReal& z) { return {z.real(), -z.imag()}; }
inline ComplexReal exp(const ComplexReal& z) {
  Real r = exp(z.real());
  return {r * cos(z.imag()), r * sin(z.imag())};
}
// The principal branch, as std::log: log|z| + i arg z.
inline ComplexReal log(const ComplexReal& z) { return {log(abs(z)), arg(z)}; }
inline ComplexReal pow(const ComplexReal& z, const ComplexReal& w) {
  if (z.real().value() == 0 && z.imag().value() == 0) return ComplexReal(0.0);
  return exp(w * log(z));
}
inline ComplexReal pow(const ComplexReal& z, const Real& w) {
  if (z.imag().value() == 0 && z.real().value() > 0) return {Real(pow(z.real(), w)), Real(0.0)};
  if (z.real().value() == 0 && z.imag().value() == 0) return ComplexReal(0.0);
  ComplexReal l = log(z);
  return std::polar<Real>(exp(w * l.real()), w * l.imag());
}
inline ComplexReal pow(const ComplexReal& z, double w) { return pow(z, Real(w)); }
inline ComplexReal pow(const ComplexReal& z, int n) { return std::pow(z, n); }

inline std::complex<double> value(const ComplexReal& z) {
  return {z.real().value(), z.imag().value()};
}
inline std::complex<double> value(const std::complex<double>& z) { return z; }

namespace ad::detail {

template <class T>
inline constexpr bool is_complex_v = false;
template <class T>
inline constexpr bool is_complex_v<std::complex<T>> = true;

// The real and imaginary parts of what a complex function returned (a real result has a
// constant zero imaginary part).
template <class W>
std::pair<Real, Real> complex_parts(const W& w, const char* op) {
  using U = std::remove_cvref_t<W>;
  if constexpr (std::is_same_v<U, ComplexReal>) {
    return {w.real(), w.imag()};
  } else if constexpr (RealOperand<U>) {
    return {Real(w), Real(0.0)};
  } else {
    static_assert(std::is_same_v<U, ComplexReal>,
                  "fx::derivative_holomorphic/wirtinger: f must return a number or a complex "
                  "number of the type it was given");
    (void)op;
    return {};
  }
}

// The four real partials of f at z: (∂u/∂x, ∂u/∂y, ∂v/∂x, ∂v/∂y) for f = u + iv, z = x + iy, from
// one recording and two reverse sweeps.
template <class F>
std::array<double, 4> complex_jacobian(F& f, std::complex<double> z, const char* op) {
  ScalarRecording rec;
  Real x = rec.variable(z.real()), y = rec.variable(z.imag());
  auto [u, v] = complex_parts(f(ComplexReal(x, y)), op);
  std::array<double, 4> j{};
  const std::vector<double>& du = rec.adjoints(u);
  j[0] = du[x.index()];
  j[1] = du[y.index()];
  const std::vector<double>& dv = rec.adjoints(v);
  j[2] = dv[x.index()];
  j[3] = dv[y.index()];
  return j;
}

}  // namespace ad::detail

// f'(z) for a holomorphic f of one complex variable, from the real gradients of Re f and Im f:
// f' = ∂u/∂x + i ∂v/∂x. The Cauchy-Riemann equations (∂u/∂x = ∂v/∂y, ∂u/∂y = -∂v/∂x) are checked
// on the same numbers; a function that breaks them at z (conj, abs, norm, ...) has no complex
// derivative there and is an fx::Error pointing to fx::wirtinger.
template <class F, class X>
std::complex<double> derivative_holomorphic(F&& f, const std::complex<X>& z) {
  static_assert(std::is_floating_point_v<X>,
                "fx::derivative_holomorphic: z must be a std::complex of a floating type");
  auto j = ad::detail::complex_jacobian(f, std::complex<double>(z), "derivative_holomorphic");
  const double ux = j[0], uy = j[1], vx = j[2], vy = j[3];
  const double scale = std::max({1.0, std::abs(ux), std::abs(uy), std::abs(vx), std::abs(vy)});
  FX_CHECK(std::abs(ux - vy) <= 1e-8 * scale && std::abs(uy + vx) <= 1e-8 * scale,
           "fx::derivative_holomorphic: f is not holomorphic at z = (", z.real(), ", ", z.imag(),
           "): Cauchy-Riemann fails (du/dx = ", ux, ", dv/dy = ", vy, ", du/dy = ", uy,
           ", dv/dx = ", vx, "); use fx::wirtinger for (df/dz, df/dzbar)");
  return {ux, vx};
}

// The Wirtinger derivatives (∂f/∂z, ∂f/∂z̄) of a complex (or real) f of one complex variable:
// ∂f/∂z = (∂f/∂x - i ∂f/∂y)/2 and ∂f/∂z̄ = (∂f/∂x + i ∂f/∂y)/2. A holomorphic f has ∂f/∂z̄ = 0 and
// ∂f/∂z = f'; conj(z) gives (0, 1); |z|² gives (z̄, z). For a real-valued f, 2 ∂f/∂z̄ is
// fx::gradient's ∂f/∂x + i ∂f/∂y.
template <class F, class X>
std::pair<std::complex<double>, std::complex<double>> wirtinger(F&& f, const std::complex<X>& z) {
  static_assert(std::is_floating_point_v<X>,
                "fx::wirtinger: z must be a std::complex of a floating type");
  auto j = ad::detail::complex_jacobian(f, std::complex<double>(z), "wirtinger");
  const std::complex<double> fx_(j[0], j[2]), fy(j[1], j[3]), i(0, 1);
  return {0.5 * (fx_ - i * fy), 0.5 * (fx_ + i * fy)};
}

}  // namespace fx
