// Elementwise math with broadcasting, comparisons, `where` and dtype conversion.
//
//   fx::Tensor x = fx::randn({4, 3}), a = fx::randn({4, 1}), b = fx::randn({3});
//   auto y = fx::tanh(x * 0.5 + 0.1);
//   auto z = a + b;                    // (4, 1) + (3,) -> (4, 3): inputs are expanded views
//   auto m = fx::where(x > 0, x, 0.0);
//   auto bad = fx::isnan(fx::log(x));  // bool, true where x < 0
//   auto e = fx::erfinv(fx::erf(x));   // x again; every math function differentiates
//
// Binary ops first expand both operands to the common shape (an `expand` view whose pullback
// sums back), so the elementwise rules only ever see equal shapes. Mixed dtypes promote
// (bool < i32 < i64 < f32 < f64); a C++ number takes the tensor's dtype.
#pragma once
#include "fluxion/core/tensor.hpp"
#include "fluxion/ops/elementwise_defs.hpp"

namespace fx {

// Math functions, one per entry of the table in elementwise_defs.hpp: exp, log, log1p, sin,
// cos, tanh, sigmoid, sqrt (these eight also on complex tensors), expm1, exp2, log2, log10, tan,
// asin, acos, atan, sinh, cosh, asinh, acosh, atanh, erf, erfc, erfinv, lgamma, digamma,
// trigamma, tetragamma (floating tensors); and atan2(a, b), hypot(a, b), copysign(a, b), broadcasting.
#define FX_DECLARE_UNARY(name) Tensor name(const Tensor& x);
#define FX_DECLARE_BINARY(name) Tensor name(const Tensor& a, const Tensor& b);
FX_ELEMENTWISE_UNARY(FX_DECLARE_UNARY)
FX_ELEMENTWISE_BINARY(FX_DECLARE_BINARY)
#undef FX_DECLARE_UNARY
#undef FX_DECLARE_BINARY

// Unary.
Tensor neg(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);  // -1, 0 or 1; its derivative is zero
// Composites.
Tensor square(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor softplus(const Tensor& x);  // log(1 + exp(x)), stable for large |x|
Tensor identity(const Tensor& x);

// Binary, broadcasting.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

// With a number (one op, no broadcast).
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor pow(const Tensor& a, double b);
Tensor clamp(const Tensor& x, double lo, double hi);

// Comparisons give bool tensors and are not differentiable.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);

// Where values are not finite: bool tensors shaped like x, not differentiable. A complex number
// is NaN (infinite) when either part is, finite when both are (as in NumPy and PyTorch); integer
// and bool tensors are always finite. fx::any / fx::all (reduce.hpp) summarise them, and
// fx::detect_anomaly (fluxion/ad/anomaly.hpp) finds the op that made them.
//   if (fx::any(fx::isnan(loss)).item<bool>()) ...
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);

// cond ? a : b elementwise; the three broadcast together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, double b);
Tensor where(const Tensor& cond, double a, const Tensor& b);

Tensor astype(const Tensor& x, DType dtype);

// Stops differentiation: the value passes through, its cotangent is zero.
Tensor stop_gradient(const Tensor& x);

inline Tensor operator-(const Tensor& x) { return neg(x); }
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator+(double a, const Tensor& b) { return add(b, a); }
inline Tensor operator-(const Tensor& a, double b) { return add(a, -b); }
inline Tensor operator-(double a, const Tensor& b) { return add(neg(b), a); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
inline Tensor operator/(const Tensor& a, double b) { return mul(a, 1.0 / b); }
inline Tensor operator/(double a, const Tensor& b) { return mul(reciprocal(b), a); }
inline Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, double b);
Tensor operator<(const Tensor& a, double b);
Tensor operator>(const Tensor& a, double b);
Tensor operator<=(const Tensor& a, double b);
Tensor operator>=(const Tensor& a, double b);

// True when a and b have equal shapes and every element differs by at most atol + rtol * |b|.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

}  // namespace fx
