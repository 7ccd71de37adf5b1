// Scalar math of the elementwise primitives, defined once and shared by every CPU backend.
// Each functor says whether it needs a floating type; backends instantiate accordingly.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace fx::math {

#define FX_UNARY(Name, floating, expr)                 \
  struct Name {                                        \
    static constexpr bool floating_only = floating;    \
    template <class T>                                 \
    T operator()(T x) const { return expr; }           \
  };
FX_UNARY(Neg, false, -x)
FX_UNARY(Exp, true, std::exp(x))
FX_UNARY(Log, true, std::log(x))
FX_UNARY(Log1p, true, std::log1p(x))
FX_UNARY(Sin, true, std::sin(x))
FX_UNARY(Cos, true, std::cos(x))
FX_UNARY(Tanh, true, std::tanh(x))
FX_UNARY(Sigmoid, true, T(1) / (T(1) + std::exp(-x)))
FX_UNARY(Relu, false, x < T(0) ? T(0) : x)  // NaN stays NaN
FX_UNARY(Sqrt, true, std::sqrt(x))
FX_UNARY(Abs, false, x < T(0) ? T(-x) : x)
FX_UNARY(Sign, false, T((x > T(0)) - (x < T(0))))
#undef FX_UNARY

// Unary with a number operand s (Params::s).
#define FX_SCALAR(Name, floating, expr)                \
  struct Name {                                        \
    static constexpr bool floating_only = floating;    \
    double s;                                          \
    template <class T>                                 \
    T operator()(T x) const { return expr; }           \
  };
FX_SCALAR(AddScalar, false, T(x + T(s)))
FX_SCALAR(MulScalar, false, T(x * T(s)))
FX_SCALAR(PowScalar, true, T(std::pow(x, T(s))))
#undef FX_SCALAR

#define FX_BINARY(Name, floating, expr)                \
  struct Name {                                        \
    static constexpr bool floating_only = floating;    \
    template <class T>                                 \
    T operator()(T a, T b) const { return expr; }      \
  };
FX_BINARY(Add, false, T(a + b))
FX_BINARY(Sub, false, T(a - b))
FX_BINARY(Mul, false, T(a * b))
FX_BINARY(Div, false, T(a / b))
FX_BINARY(Pow, true, T(std::pow(a, b)))
// A NaN in either operand gives NaN (x != x only for NaN; ties pick a, as the pullback does).
FX_BINARY(Maximum, false, (a >= b || a != a) ? a : b)
FX_BINARY(Minimum, false, (a <= b || a != a) ? a : b)
// Fused pullbacks (src/ops/fused.hpp), a = dy, b = the saved output y; written in the order the
// composed public ops evaluate, so both give the same bits.
FX_BINARY(TanhBackward, true, T(a * (-(b * b) + T(1))))
FX_BINARY(SigmoidBackward, true, T(a * (b * (-b + T(1)))))
#undef FX_BINARY

#define FX_COMPARE(Name, op)                           \
  struct Name {                                        \
    template <class T>                                 \
    bool operator()(T a, T b) const { return a op b; } \
  };
FX_COMPARE(Eq, ==)
FX_COMPARE(Ne, !=)
FX_COMPARE(Lt, <)
FX_COMPARE(Le, <=)
FX_COMPARE(Gt, >)
FX_COMPARE(Ge, >=)
#undef FX_COMPARE

}  // namespace fx::math
