// Scalar math of the elementwise primitives, defined once and shared by every CPU backend.
// Each functor says whether it needs a floating type and whether it is defined for
// std::complex (the holomorphic functions and arithmetic); backends instantiate accordingly.
#pragma once
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "fluxion/core/dtype.hpp"
#include "fluxion/ops/elementwise_defs.hpp"

namespace fx::math {

#define FX_UNARY(Name, floating, cplx, expr)        \
  struct Name {                                     \
    static constexpr bool floating_only = floating; \
    static constexpr bool complex_ok = cplx;        \
    template <class T>                              \
    T operator()(T x) const {                       \
      return expr;                                  \
    }                                               \
  };
FX_UNARY(Neg, false, true, -x)
FX_UNARY(Relu, false, false, x < T(0) ? T(0) : x)  // NaN stays NaN
FX_UNARY(Square, false, true, T(x* x))
FX_UNARY(Abs, false, false, x < T(0) ? T(-x) : x)
FX_UNARY(Sign, false, false, T((x > T(0)) - (x < T(0))))
#undef FX_UNARY

// Unary with a number operand s (ScalarAttrs::s).
#define FX_SCALAR(Name, floating, cplx, expr)       \
  struct Name {                                     \
    static constexpr bool floating_only = floating; \
    static constexpr bool complex_ok = cplx;        \
    double s;                                       \
    template <class T>                              \
    T operator()(T x) const {                       \
      return expr;                                  \
    }                                               \
  };
FX_SCALAR(AddScalar, false, true, T(x + T(s)))
FX_SCALAR(MulScalar, false, true, T(x* T(s)))
FX_SCALAR(PowScalar, true, true, T(std::pow(x, T(s))))
#undef FX_SCALAR

#define FX_BINARY(Name, floating, cplx, expr)       \
  struct Name {                                     \
    static constexpr bool floating_only = floating; \
    static constexpr bool complex_ok = cplx;        \
    template <class T>                              \
    T operator()(T a, T b) const {                  \
      return expr;                                  \
    }                                               \
  };
FX_BINARY(Add, false, true, T(a + b))
FX_BINARY(Sub, false, true, T(a - b))
FX_BINARY(Mul, false, true, T(a* b))
FX_BINARY(Div, false, true, T(a / b))
FX_BINARY(Pow, true, false, T(std::pow(a, b)))
// A NaN in either operand gives NaN (x != x only for NaN; ties pick a, as the pullback does).
FX_BINARY(Maximum, false, false, (a >= b || a != a) ? a : b)
FX_BINARY(Minimum, false, false, (a <= b || a != a) ? a : b)
// Fused pullbacks (src/ops/fused.hpp), a = dy, b = the saved input x of y = x^2; written in
// the order the composed public ops evaluate, so both give the same bits.
FX_BINARY(SquareBackward, true, false, T(a*(b* T(2))))

// where(y > 0, dy, 0) with the same bits as the composed form (+0 where y <= 0 or y is NaN), as
// a mask rather than a branch: on a strided cotangent (matmul pullbacks give transposed ones) the
// loop does not vectorise, and the sign of y is a coin flip that a branch mispredicts half the
// time (the branchy loop cost ~6 ns per element in the MLP benchmark).
struct ReluBackward {
  static constexpr bool floating_only = true;
  static constexpr bool complex_ok = false;
  template <class T>
  T operator()(T a, T b) const {
    using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
    return std::bit_cast<T>(std::bit_cast<U>(a) & (U(0) - U(b > T(0))));
  }
};
#undef FX_BINARY

// ---- the math functions of the table (fluxion/ops/elementwise_defs.hpp)
// y = f(x).
template <class Op>
struct Value {
  static constexpr bool floating_only = true;
  static constexpr bool complex_ok = Op::domain == elem::Domain::inexact;
  template <class T>
  T operator()(T x) const {
    return Op::value(x);
  }
};
// The fused first-order pullback (a = dy, b = the value the op's derivative reads, x or y):
// dy * f'. Real dtypes only: complex pullbacks take conjugates and run the composed ops. The
// argument the derivative does not read is NaN, so a wrong `reads` shows in every result.
template <class Op>
struct Backward {
  static constexpr bool floating_only = true;
  static constexpr bool complex_ok = false;
  template <class T>
  T operator()(T a, T b) const {
    constexpr T nan = std::numeric_limits<T>::quiet_NaN();
    if constexpr (Op::reads == elem::Reads::output) return T(a * Op::derivative(nan, b));
    else return T(a * Op::derivative(b, nan));
  }
};
template <class Op>
struct BinaryValue {
  static constexpr bool floating_only = true;
  static constexpr bool complex_ok = false;
  template <class T>
  T operator()(T a, T b) const {
    return Op::value(a, b);
  }
};
// The names other kernels use (linear's epilogue and its derivative, the reference linalg).
using Exp = Value<elem::exp_op>;
using Log = Value<elem::log_op>;
using Tanh = Value<elem::tanh_op>;
using Sigmoid = Value<elem::sigmoid_op>;
using TanhBackward = Backward<elem::tanh_op>;
using SigmoidBackward = Backward<elem::sigmoid_op>;

// Complex to complex or to real (the part types follow the input's precision).
struct Conj {
  template <class C>
  C operator()(C z) const {
    return std::conj(z);
  }
};
struct Real {
  template <class C>
  typename C::value_type operator()(C z) const {
    return z.real();
  }
};
struct Imag {
  template <class C>
  typename C::value_type operator()(C z) const {
    return z.imag();
  }
};
struct Angle {
  template <class C>
  typename C::value_type operator()(C z) const {
    return std::arg(z);
  }
};
struct ComplexAbs {
  template <class C>
  typename C::value_type operator()(C z) const {
    return std::abs(z);
  }
};

// Finiteness of any element type: a complex number is NaN (infinite) when either part is;
// integers and bools are always finite. Written with the std:: predicates, which stay exact
// because fluxion is not built with -ffinite-math-only.
#define FX_FINITE(Name, test, either, integer)                                       \
  struct Name {                                                                      \
    template <class T>                                                               \
    bool operator()(T x) const {                                                     \
      if constexpr (is_complex_v<T>) return Name{}(x.real())either Name{}(x.imag()); \
      else if constexpr (std::is_floating_point_v<T>) return test(x);                \
      else return integer;                                                           \
    }                                                                                \
  };
FX_FINITE(IsNan, std::isnan, ||, false)
FX_FINITE(IsInf, std::isinf, ||, false)
FX_FINITE(IsFinite, std::isfinite, &&, true)
#undef FX_FINITE

#define FX_COMPARE(Name, op)          \
  struct Name {                       \
    template <class T>                \
    bool operator()(T a, T b) const { \
      return a op b;                  \
    }                                 \
  };
FX_COMPARE(Eq, ==)
FX_COMPARE(Ne, !=)
FX_COMPARE(Lt, <)
FX_COMPARE(Le, <=)
FX_COMPARE(Gt, >)
FX_COMPARE(Ge, >=)
#undef FX_COMPARE

}  // namespace fx::math
