// One definition of each elementwise function's math: its value and its derivative, written
// once in generic code. Everything else about the op is derived from this table: the primitive
// entry with its pullback and pushforward (src/ops/elementwise.cpp), the public fx::Tensor
// function (ops/elementwise.hpp), the reference and CPU kernels and the fused first-order
// pullback kernel (src/backend), the fused-epilogue derivative of linear (math::TanhBackward),
// the fx::Real and fx::Dual overloads (ad/scalar.hpp, ad/dual.hpp) and the test rows.
//
//   double y = fx::elem::tanh_op::value(0.5);           // tanh(0.5)
//   double d = fx::elem::tanh_op::derivative(0.5, y);   // 1 - y^2, from y
//   // fx::tanh(tensor), fx::tanh(fx::Real), fx::tanh(fx::Dual<double>) all come from tanh_op.
//
// `value` and `derivative` are templates called with float and double (kernels), std::complex
// (kernels of the ops whose domain is `inexact`), fx::Tensor (pullbacks and pushforwards, so
// they differentiate again), fx::Real and fx::Dual. So they call functions unqualified: the
// `using std::...` below serves numbers, argument-dependent lookup finds fx::exp(Tensor),
// fx::exp(Real), fx::exp(Dual). Constants go through num<T>(c): a T for numbers (no float to
// double round trip in f32 kernels), a double for Tensor, Real and Dual.
//
// An op declares which of x and y = f(x) its derivative reads (`reads`): the tape saves only
// that one, and the other argument is an undefined tensor (or NaN) that must not be used.
//
// Adding a unary function: write its struct below and add it to FX_ELEMENTWISE_UNARY (and give
// it a row in tests/oracle/torch_oracle_test.cpp where libtorch has it). docs/design.md says why.
#pragma once
#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>

namespace fx::elem {

// The table: FX_ELEMENTWISE_UNARY(X) calls X(name) for each op name_op below.
// clang-format off
#define FX_ELEMENTWISE_UNARY(X)                                                              \
  X(exp) X(log) X(log1p) X(sin) X(cos) X(tanh) X(sigmoid) X(sqrt) X(expm1) X(exp2) X(log2)   \
  X(log10) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(asinh) X(acosh) X(atanh) X(erf) \
  X(erfc) X(erfinv) X(lgamma) X(digamma) X(trigamma) X(tetragamma)
// Binary functions of two floating tensors (broadcasting), from name_op's value, da and db.
#define FX_ELEMENTWISE_BINARY(X) X(atan2) X(hypot) X(copysign)
// clang-format on

enum class Reads { input, output };  // what `derivative` reads: x or y = f(x)
enum class Domain {
  floating,  // f32, f64
  inexact,   // f32, f64, c64, c128 (holomorphic: the pullback multiplies by conj(f'))
};

template <class T>
inline constexpr bool is_std_complex = false;
template <class T>
inline constexpr bool is_std_complex<std::complex<T>> = true;

// The constant c in the arithmetic of T (see the header comment).
template <class T>
constexpr auto num(double c) {
  if constexpr (std::is_floating_point_v<T> || is_std_complex<T>) return T(c);
  else return c;
}

// Scalar forms of helpers that tensors have as ops (fx::where, fx::sign): the derivatives call
// them unqualified, and tensors find theirs by argument-dependent lookup.
template <class T>
T where(bool c, double a, const T& b) {
  return c ? T(a) : b;
}
template <class T>
T sign(const T& x) {
  return T(double((x > 0) - (x < 0)));
}

// ---- special functions that <cmath> lacks, in double (float converts)
namespace detail {

inline constexpr double kPi = 3.141592653589793238;

// erf^-1: M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2010), the
// single-precision polynomials in w = -log(1 - x^2), then two Halley steps on erf (erfc for
// x > 0.5, where 1 - x is exact) that take its ~1e-7 to full double precision.
inline double erfinv(double x) {
  if (std::isnan(x) || x < -1 || x > 1) return std::numeric_limits<double>::quiet_NaN();
  if (x == 1) return std::numeric_limits<double>::infinity();
  if (x == -1) return -std::numeric_limits<double>::infinity();
  if (x == 0) return x;  // keeps the sign of -0
  const double a = std::abs(x);
  double w = -std::log((1 - a) * (1 + a)), p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double y = p * a;
  // Halley on f(y) = erf(y) - a: f' = 2/sqrt(pi) e^-y^2, f'' = -2y f', so the step is
  // f / (f' + y f). Near 1, f = (1 - a) - erfc(y) instead, with f' of the same sign. Two steps
  // suffice where the polynomials are good (|x| < 1 - 1e-8); the far tail takes a few more.
  for (int it = 0; it < 8; ++it) {
    const double d = 1.1283791670955126 * std::exp(-y * y);
    const double f = a <= 0.5 ? std::erf(y) - a : (1 - a) - std::erfc(y);
    if (d == 0) break;  // the tail beyond where f' is representable: the estimate stands
    const double step = f / (d + y * f);
    y -= step;
    if (std::abs(step) <= 1e-16 * y) break;
  }
  return x < 0 ? -y : y;
}

// psi^(n)(x), n = 0..3: the recurrence psi^(n)(x) = psi^(n)(x + 1) + (-1)^(n+1) n! / x^(n+1)
// up to x >= 15, then the asymptotic series (Abramowitz & Stegun 6.3.18, 6.4.11)
//   psi(x) ~ ln x - 1/2x - sum B_2k / (2k x^2k),
//   psi^(n)(x) ~ (-1)^(n+1) [(n-1)!/x^n + n!/2x^(n+1) + sum B_2k (2k+n-1)! / ((2k)! x^(2k+n))],
// with eight Bernoulli terms (the next is below 1e-16 relative at x = 15); negative x by the
// reflection formula psi(1 - x) - psi(x) = pi cot(pi x), differentiated n times (A&S 6.4.7).
inline double polygamma(int n, double x) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(x)) return x;
  if (x <= 0 && x == std::floor(x)) return nan;  // poles
  if (x < 0) {
    const double s = std::sin(kPi * x), c = std::cos(kPi * x), p2 = kPi * kPi;
    const double csc2 = 1 / (s * s), cot = c / s;
    switch (n) {
      case 0: return polygamma(0, 1 - x) - kPi * cot;
      case 1: return p2 * csc2 - polygamma(1, 1 - x);
      case 2: return polygamma(2, 1 - x) - 2 * p2 * kPi * csc2 * cot;
      default: return 2 * p2 * p2 * csc2 * (2 * cot * cot + csc2) - polygamma(3, 1 - x);
    }
  }
  static constexpr double bernoulli[8] = {1.0 / 6,  -1.0 / 30,     1.0 / 42, -1.0 / 30,
                                          5.0 / 66, -691.0 / 2730, 7.0 / 6,  -3617.0 / 510};
  double nfact = 1;
  for (int k = 2; k <= n; ++k) nfact *= k;
  double acc = 0;
  for (; x < 15; x += 1) acc += n == 0 ? 1 / x : nfact / std::pow(x, n + 1);
  const double r = 1 / x, r2 = r * r;
  if (n == 0) {
    double s = 0, rk = 1;
    for (int k = 1; k <= 8; ++k) s += bernoulli[k - 1] / (2 * k) * (rk *= r2);
    return std::log(x) - 0.5 * r - s - acc;
  }
  double s = nfact / n * std::pow(r, n) + nfact / 2 * std::pow(r, n + 1), rk = std::pow(r, n);
  for (int k = 1; k <= 8; ++k) {
    double ratio = 1;  // (2k+n-1)! / (2k)!
    for (int j = 2 * k + 1; j <= 2 * k + n - 1; ++j) ratio *= j;
    s += bernoulli[k - 1] * ratio * (rk *= r2);
  }
  return n % 2 == 1 ? s + acc : -(s + acc);
}

}  // namespace detail

template <class T>
  requires std::is_floating_point_v<T> T erfinv(T x) { return T(detail::erfinv(double(x))); }
template <class T>
  requires std::is_floating_point_v<T> T digamma(T x) { return T(detail::polygamma(0, double(x))); }
template <class T>
  requires std::is_floating_point_v<T> T trigamma(T x) {
    return T(detail::polygamma(1, double(x)));
  }
template <class T>
  requires std::is_floating_point_v<T> T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }
template <class T>
  requires std::is_floating_point_v<T> T tetragamma(T x) {
    return T(detail::polygamma(2, double(x)));
  }
// tetragamma's derivative for numbers. Tensors have no pentagamma op: tetragamma_op says so
// (tensor_order = 0), and differentiating it on tensors is an fx::Error.
template <class T>
  requires std::is_floating_point_v<T> T pentagamma(T x) {
    return T(detail::polygamma(3, double(x)));
  }

using std::acos, std::acosh, std::asin, std::asinh, std::atan, std::atanh, std::cos, std::cosh,
    std::erf, std::erfc, std::exp, std::exp2, std::expm1, std::lgamma, std::log, std::log10,
    std::log1p, std::log2, std::sin, std::sinh, std::sqrt, std::tan, std::tanh, std::atan2,
    std::hypot, std::copysign;

// ---- the unary ops. lo, hi: the range the test rows draw arguments from (smooth there).
#define FX_ELEM_VALUE(expr)    \
  template <class T>           \
  static T value(const T& x) { \
    return expr;               \
  }
#define FX_ELEM_DERIVATIVE(expr)                                                  \
  template <class T>                                                              \
  static T derivative([[maybe_unused]] const T& x, [[maybe_unused]] const T& y) { \
    return expr;                                                                  \
  }

// The first eight are holomorphic and also take complex tensors.
struct exp_op {
  static constexpr Domain domain = Domain::inexact;
  static constexpr Reads reads = Reads::output;
  static constexpr double lo = -3, hi = 3;
  FX_ELEM_VALUE(exp(x))
  FX_ELEM_DERIVATIVE(y)
};
struct log_op {
  static constexpr Domain domain = Domain::inexact;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = 0.1, hi = 4;
  FX_ELEM_VALUE(log(x))
  FX_ELEM_DERIVATIVE(num<T>(1) / x)
};
struct log1p_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = -0.9, hi = 3;
  FX_ELEM_VALUE(log1p(x))
  FX_ELEM_DERIVATIVE(num<T>(1) / (x + num<T>(1)))
};
struct sin_op {
  static constexpr Domain domain = Domain::inexact;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = -4, hi = 4;
  FX_ELEM_VALUE(sin(x))
  FX_ELEM_DERIVATIVE(cos(x))
};
struct cos_op {
  static constexpr Domain domain = Domain::inexact;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = -4, hi = 4;
  FX_ELEM_VALUE(cos(x))
  FX_ELEM_DERIVATIVE(-sin(x))
};
struct tanh_op {
  static constexpr Domain domain = Domain::inexact;
  static constexpr Reads reads = Reads::output;
  static constexpr double lo = -3, hi = 3;
  FX_ELEM_VALUE(tanh(x))
  FX_ELEM_DERIVATIVE(num<T>(1) - y * y)
};
struct sigmoid_op {
  static constexpr Domain domain = Domain::inexact;
  static constexpr Reads reads = Reads::output;
  static constexpr double lo = -5, hi = 5;
  FX_ELEM_VALUE(num<T>(1) / (num<T>(1) + exp(-x)))
  FX_ELEM_DERIVATIVE(y*(num<T>(1) - y))
};
struct sqrt_op {
  static constexpr Domain domain = Domain::inexact;
  static constexpr Reads reads = Reads::output;
  static constexpr double lo = 0.1, hi = 4;
  FX_ELEM_VALUE(sqrt(x))
  FX_ELEM_DERIVATIVE(num<T>(0.5) / y)
};

struct expm1_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::output;
  static constexpr double lo = -3, hi = 3;
  FX_ELEM_VALUE(expm1(x))
  FX_ELEM_DERIVATIVE(y + num<T>(1))
};
struct exp2_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::output;
  static constexpr double lo = -3, hi = 3;
  FX_ELEM_VALUE(exp2(x))
  FX_ELEM_DERIVATIVE(y* num<T>(0.6931471805599453))  // ln 2
};
struct log2_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = 0.1, hi = 4;
  FX_ELEM_VALUE(log2(x))
  FX_ELEM_DERIVATIVE(num<T>(1.4426950408889634) / x)  // 1 / ln 2
};
struct log10_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = 0.1, hi = 4;
  FX_ELEM_VALUE(log10(x))
  FX_ELEM_DERIVATIVE(num<T>(0.4342944819032518) / x)  // 1 / ln 10
};
struct tan_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::output;
  static constexpr double lo = -1.2, hi = 1.2;
  FX_ELEM_VALUE(tan(x))
  FX_ELEM_DERIVATIVE(y* y + num<T>(1))
};
struct asin_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = -0.9, hi = 0.9;
  FX_ELEM_VALUE(asin(x))
  FX_ELEM_DERIVATIVE(num<T>(1) / sqrt(num<T>(1) - x * x))
};
struct acos_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = -0.9, hi = 0.9;
  FX_ELEM_VALUE(acos(x))
  FX_ELEM_DERIVATIVE(num<T>(-1) / sqrt(num<T>(1) - x * x))
};
struct atan_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = -3, hi = 3;
  FX_ELEM_VALUE(atan(x))
  FX_ELEM_DERIVATIVE(num<T>(1) / (x * x + num<T>(1)))
};
struct sinh_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = -3, hi = 3;
  FX_ELEM_VALUE(sinh(x))
  FX_ELEM_DERIVATIVE(cosh(x))
};
struct cosh_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = -3, hi = 3;
  FX_ELEM_VALUE(cosh(x))
  FX_ELEM_DERIVATIVE(sinh(x))
};
struct asinh_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = -3, hi = 3;
  FX_ELEM_VALUE(asinh(x))
  FX_ELEM_DERIVATIVE(num<T>(1) / sqrt(x * x + num<T>(1)))
};
struct acosh_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = 1.2, hi = 4;
  FX_ELEM_VALUE(acosh(x))
  FX_ELEM_DERIVATIVE(num<T>(1) / sqrt(x * x - num<T>(1)))
};
struct atanh_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = -0.9, hi = 0.9;
  FX_ELEM_VALUE(atanh(x))
  FX_ELEM_DERIVATIVE(num<T>(1) / (num<T>(1) - x * x))
};
struct erf_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = -2.5, hi = 2.5;
  FX_ELEM_VALUE(erf(x))
  FX_ELEM_DERIVATIVE(num<T>(1.1283791670955126) * exp(-(x * x)))  // 2/sqrt(pi) e^-x^2
};
struct erfc_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = -2.5, hi = 2.5;
  FX_ELEM_VALUE(erfc(x))
  FX_ELEM_DERIVATIVE(num<T>(-1.1283791670955126) * exp(-(x * x)))
};
struct erfinv_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::output;
  static constexpr double lo = -0.95, hi = 0.95;
  FX_ELEM_VALUE(erfinv(x))
  FX_ELEM_DERIVATIVE(num<T>(0.88622692545275801) * exp(y * y))  // sqrt(pi)/2 e^(erfinv(x)^2)
};
// lgamma: log |Gamma(x)|. std::lgamma may write the global signgam; glibc's is then a benign
// race under OpenMP, and the value is all we need.
struct lgamma_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = 0.2, hi = 6;
  FX_ELEM_VALUE(lgamma(x))
  FX_ELEM_DERIVATIVE(digamma(x))
};
struct digamma_op {
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = 0.2, hi = 6;
  FX_ELEM_VALUE(digamma(x))
  FX_ELEM_DERIVATIVE(trigamma(x))
};
struct trigamma_op {
  static constexpr int tensor_order = 1;  // its derivative, tetragamma, has none on tensors
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = 0.2, hi = 6;
  FX_ELEM_VALUE(trigamma(x))
  FX_ELEM_DERIVATIVE(tetragamma(x))
};
// psi''(x). The chain of derivatives ends here for tensors: each polygamma order would need a
// primitive of the next, so lgamma differentiates three times on tensors, digamma twice,
// trigamma once, tetragamma not at all (numbers, fx::Real and fx::Dual go one order further).
struct tetragamma_op {
  static constexpr int tensor_order = 0;
  static constexpr Domain domain = Domain::floating;
  static constexpr Reads reads = Reads::input;
  static constexpr double lo = 0.2, hi = 6;
  FX_ELEM_VALUE(tetragamma(x))
  FX_ELEM_DERIVATIVE(pentagamma(x))
};
#undef FX_ELEM_VALUE
#undef FX_ELEM_DERIVATIVE

// ---- binary ops: y = value(a, b) with partials da(a, b, y) and db(a, b, y); an op without
// db has a zero partial in b (no cotangent, no tangent). Floating tensors only.
struct atan2_op {  // atan2(a, b): the angle of the point (b, a)
  static constexpr double lo = -2, hi = 2;
  template <class T>
  static T value(const T& a, const T& b) {
    return atan2(a, b);
  }
  template <class T>
  static T da(const T& a, const T& b, const T&) {
    return b / (a * a + b * b);
  }
  template <class T>
  static T db(const T& a, const T& b, const T&) {
    return -a / (a * a + b * b);
  }
};
struct hypot_op {  // sqrt(a^2 + b^2); partials taken as 0 at the origin
  static constexpr double lo = -2, hi = 2;
  template <class T>
  static T value(const T& a, const T& b) {
    return hypot(a, b);
  }
  template <class T>
  static T da(const T& a, const T&, const T& y) {
    return where(y == 0, 0.0, a / y);
  }
  template <class T>
  static T db(const T&, const T& b, const T& y) {
    return where(y == 0, 0.0, b / y);
  }
};
struct copysign_op {  // |a| with the sign of b: partial sign(a) sign(y), taken as 0 at a = 0
  static constexpr double lo = -2, hi = 2;
  template <class T>
  static T value(const T& a, const T& b) {
    return copysign(a, b);
  }
  template <class T>
  static T da(const T& a, const T&, const T& y) {
    return sign(a) * sign(y);
  }
};

// How many times an op differentiates on tensors: without end (2 is what the test rows check)
// unless its struct says less (the end of the polygamma chain); 0 makes its pullback and
// pushforward an fx::Error.
template <class Op>
inline constexpr int tensor_order = [] {
  if constexpr (requires { Op::tensor_order; }) return Op::tensor_order;
  else return 2;
}();
template <class Op>
inline constexpr bool tensor_derivative = tensor_order<Op> > 0;

// Whether a binary op has a partial in b, and that partial (0 for ops without one).
template <class Op>
inline constexpr bool has_db = requires(double v) {
  Op::db(v, v, v);
};
template <class Op, class T>
T partial_b(const T& a, const T& b, const T& y) {
  if constexpr (has_db<Op>) return Op::db(a, b, y);
  else return T(0.0);
}

}  // namespace fx::elem
