// Highway's contrib/math on the static target, with a <cmath> fallback per vector for lanes
// outside each polynomial's valid range (see vector_math.hpp).
#include "backend/cpu/vector_math.hpp"

#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <cmath>
#include <limits>

namespace fx::backend::cpu {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

template <class T>
T scalar_fn(VecFn fn, T x) {
  switch (fn) {
    case VecFn::exp: return std::exp(x);
    case VecFn::log: return std::log(x);
    case VecFn::log1p: return std::log1p(x);
    case VecFn::sin: return std::sin(x);
    case VecFn::cos: return std::cos(x);
    case VecFn::tanh: return std::tanh(x);
    case VecFn::sigmoid: return T(1) / (T(1) + std::exp(-x));
  }
  return x;
}

// [lo, hi]: where the polynomial is valid and agrees with std:: (exp: no overflow to inf and no
// denormal results; log: normal positive numbers).
template <class T>
void valid_range(VecFn fn, T& lo, T& hi) {
  constexpr bool f32 = sizeof(T) == 4;
  const T big = std::numeric_limits<T>::max();
  switch (fn) {
    case VecFn::exp:
      lo = f32 ? -87 : -708;
      hi = f32 ? 88 : 709;
      return;
    case VecFn::sigmoid:
      lo = f32 ? -88 : -709;
      hi = f32 ? 87 : 708;
      return;
    case VecFn::log:
      lo = std::numeric_limits<T>::min();
      hi = big;
      return;
    case VecFn::log1p:
      lo = 0;
      hi = big;
      return;
    case VecFn::sin:
    case VecFn::cos:
      lo = -39000;
      hi = 39000;
      return;
    case VecFn::tanh:
      lo = -big;
      hi = big;
      return;
  }
}

template <VecFn Fn, class D, class V>
V apply(D d, V x) {
  using T = hn::TFromD<D>;
  if constexpr (Fn == VecFn::exp) return hn::Exp(d, x);
  else if constexpr (Fn == VecFn::log) return hn::Log(d, x);
  else if constexpr (Fn == VecFn::log1p) return hn::Log1p(d, x);
  else if constexpr (Fn == VecFn::sin) return hn::Sin(d, x);
  else if constexpr (Fn == VecFn::cos) return hn::Cos(d, x);
  else if constexpr (Fn == VecFn::tanh) return hn::Tanh(d, x);
  else {
    const V one = hn::Set(d, T(1));
    return hn::Div(one, hn::Add(one, hn::Exp(d, hn::Neg(x))));
  }
}

// One loop per function, so each inlines only its own polynomial.
template <VecFn Fn, class T>
void map(const T* x, T* y, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t lanes = int64_t(hn::Lanes(d));
  T lo_s, hi_s;
  valid_range(Fn, lo_s, hi_s);
  const auto lo = hn::Set(d, lo_s), hi = hn::Set(d, hi_s);
  // exp is exactly +0 (in std:: too) below log of half the smallest denormal; such lanes are
  // common (log-sum-exp shifts, far mixture components) and need no scalar fallback.
  const auto exp_zero = hn::Set(d, sizeof(T) == 4 ? T(-104) : T(-746));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    // NaN fails both comparisons, so it takes the scalar path too.
    const auto in_range = hn::And(hn::Ge(v, lo), hn::Le(v, hi));
    if (hn::AllTrue(d, in_range)) [[likely]] {
      hn::StoreU(apply<Fn>(d, v), d, y + i);
    } else if (Fn == VecFn::exp && hn::AllTrue(d, hn::Lt(v, exp_zero))) {
      hn::StoreU(hn::Zero(d), d, y + i);  // all underflow: no polynomial at all
    } else if (Fn == VecFn::exp && hn::AllTrue(d, hn::Or(in_range, hn::Lt(v, exp_zero)))) {
      hn::StoreU(hn::IfThenElseZero(in_range, apply<Fn>(d, hn::Max(v, lo))), d, y + i);
    } else {
      for (int64_t j = i; j < i + lanes; ++j) y[j] = scalar_fn(Fn, x[j]);
    }
  }
  for (; i < n; ++i) y[i] = scalar_fn(Fn, x[i]);
}

template <class T>
void map(VecFn fn, const T* x, T* y, int64_t n) {
  switch (fn) {
    case VecFn::exp: return map<VecFn::exp>(x, y, n);
    case VecFn::log: return map<VecFn::log>(x, y, n);
    case VecFn::log1p: return map<VecFn::log1p>(x, y, n);
    case VecFn::sin: return map<VecFn::sin>(x, y, n);
    case VecFn::cos: return map<VecFn::cos>(x, y, n);
    case VecFn::tanh: return map<VecFn::tanh>(x, y, n);
    case VecFn::sigmoid: return map<VecFn::sigmoid>(x, y, n);
  }
}

}  // namespace

void vector_map(VecFn fn, const float* x, float* y, int64_t n) { map(fn, x, y, n); }
void vector_map(VecFn fn, const double* x, double* y, int64_t n) { map(fn, x, y, n); }

}  // namespace fx::backend::cpu
