// Forward-mode AD for scalar C++ code: fx::Dual<T, N> is a value of type T carrying N tangent
// components (a chunk of N directional derivatives computed in one pass). T is double, fx::Real
// (forward over a reverse tape, for Hessians) or another Dual (higher derivatives).
//
//   fx::Dual<double> x(2.0, {1.0});                     // x = 2 + ε
//   auto y = x * sin(x);                                // y.value() = 2 sin 2, y.partial(0) = d/dx
//   fx::Dual<double, 3> v(1.0, {1.0, 0.0, 0.0});        // three tangents at once
//   fx::Dual<fx::Dual<double>> z(fx::Dual<double>(2.0, {1.0}), {1.0});   // second derivatives
//   double d = fx::derivative([](auto t) { return exp(sin(t)); }, 0.3);  // scalar_derivatives.hpp
//
// Generic code written for double works unchanged: arithmetic with numbers, fx::Real and other
// Duals, comparisons (by value), and the <cmath> functions fx::Real supports are found by
// argument-dependent lookup. fx::value(d) is the double underneath any nesting.
//
// Perturbation levels. Every Dual type carries its perturbation's level L (a template argument,
// by default one above its value type's). Duals of different levels are different
// perturbations: x (level 1) + y (level 2) is a Dual<Dual<double, 1, 1>, 1, 2> that keeps both
// apart, higher levels outside. This is what makes nested derivatives correct (no "perturbation
// confusion"): fx::derivative picks a level above every perturbation its function's result
// carries, so d/dx [x · d/dy (x + y)] is 1, not 2. Two Duals of one level are one perturbation.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <compare>
#include <ostream>
#include <span>
#include <type_traits>

#include "fluxion/ad/scalar.hpp"

namespace fx {

template <class T, int N, int L>
class Dual;

// A leaf of FX_FIELDS structures (fluxion/core/leaves.hpp), as double is.
template <class T, int N, int L>
struct is_number_type<Dual<T, N, L>> : std::true_type {};

namespace ad {

template <class T>
struct dual_traits {
  static constexpr bool is_dual = false;
  static constexpr int level = 0;
};
template <class T, int N, int L>
struct dual_traits<Dual<T, N, L>> {
  static constexpr bool is_dual = true;
  static constexpr int level = L;
};

template <class T>
inline constexpr bool is_dual_v = dual_traits<std::remove_cvref_t<T>>::is_dual;
// The perturbation level of a type: 0 for numbers and fx::Real.
template <class T>
inline constexpr int level_v = dual_traits<std::remove_cvref_t<T>>::level;

// A level-0 scalar: a number or fx::Real.
template <class T>
concept PlainScalar =
    std::is_arithmetic_v<std::remove_cvref_t<T>> || std::is_same_v<std::remove_cvref_t<T>, Real>;
// Anything a Dual computes with.
template <class T>
concept DualScalar = PlainScalar<T> || is_dual_v<T>;

// Tangent storage, element by element: for fx::Real and nested Duals (and any T without the
// vector extensions below).
template <class T, int N, bool Packed>
struct Tangents {
  static constexpr bool packed = false;
  std::array<T, N> e{};
  constexpr T& operator[](int i) { return e[i]; }
  constexpr const T& operator[](int i) const { return e[i]; }
  constexpr const T* data() const { return e.data(); }
};

#if defined(__GNUC__)  // GCC and Clang: vector extensions
// Groups only pass by value into and out of always-inlined functions (load, store, the
// operators' expressions), so GCC's warning that a 32-byte vector returned without AVX enabled
// has another ABI concerns no real call; it is silenced to the end of this header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
// double and float tangents (N >= 2) in whole groups of 16 or 32 bytes, zero-padded, which the
// operators process as vector-extension types: one vector instruction per group. Kept in a
// std::array, GCC splits the tangents into N scalars and vectorises them back poorly (mostly
// scalar code and shuffles): the ADBench BA Jacobian on Dual<double, 15> took 2x as long.
// Padding lanes start at zero and are never read.
template <class T, int N>
struct Tangents<T, N, true> {
  static constexpr bool packed = true;
  static constexpr int bytes = N * int(sizeof(T)) <= 16 ? 16 : 32;
  static constexpr int lanes = bytes / int(sizeof(T));
  static constexpr int groups = (N + lanes - 1) / lanes;
  typedef T Group __attribute__((vector_size(bytes)));

  // The storage is only T-aligned: aligning it to whole groups made the BA Jacobian ~50% slower
  // with GCC 12 (larger Duals, copied more). So groups are moved in and out by value (single
  // unaligned vector moves) and never referenced in place: a reference to a group would claim
  // the vector type's alignment, which compilers may assume (Clang emits aligned moves).
  T e[groups * lanes]{};
  constexpr T& operator[](int i) { return e[i]; }
  constexpr const T& operator[](int i) const { return e[i]; }
  constexpr const T* data() const { return e; }
  [[gnu::always_inline]] Group load(int k) const {
    Group g;
    __builtin_memcpy(&g, e + k * lanes, sizeof g);
    return g;
  }
  [[gnu::always_inline]] void store(int k, const Group& g) {
    __builtin_memcpy(e + k * lanes, &g, sizeof g);
  }
};
template <class T, int N>
inline constexpr bool packs_tangents = (std::is_same_v<T, double> || std::is_same_v<T, float>)&&N >=
                                       2;
#else
template <class T, int N>
inline constexpr bool packs_tangents = false;
#endif

}  // namespace ad

template <class T, int N = 1, int L = ad::level_v<T> + 1>
class Dual {
  static_assert(N >= 1, "fx::Dual: at least one tangent component");
  static_assert(std::is_floating_point_v<T> || std::is_same_v<T, Real> || ad::is_dual_v<T>,
                "fx::Dual: the value type must be floating point, fx::Real or an fx::Dual");
  static_assert(L > ad::level_v<T>, "fx::Dual: the level must exceed the value type's level");

 public:
  using value_type = T;
  static constexpr int width = N;
  static constexpr int level = L;

  constexpr Dual() = default;
  constexpr Dual(const T& v) : v_(v) {}  // NOLINT: constants convert implicitly, as doubles do
  // Lower-level values (numbers, Reals, Duals of lower levels) are constants at this level.
  template <class S>
    requires(ad::DualScalar<S> && !std::is_same_v<S, T> && ad::level_v<S> < L &&
             std::is_convertible_v<const S&, T>)
  constexpr Dual(const S& s) : v_(s) {}  // NOLINT
  // The same perturbation with a richer value type (Dual<double> -> Dual<Real>).
  template <class U>
    requires(!std::is_same_v<U, T> && std::is_convertible_v<const U&, T>)
  constexpr Dual(const Dual<U, N, L>& o) : v_(o.value()) {  // NOLINT
    for (int i = 0; i < N; ++i) d_[i] = o.partial(i);
  }
  constexpr Dual(const T& v, const std::array<T, N>& d) : v_(v) {
    for (int i = 0; i < N; ++i) d_[i] = d[i];
  }

  constexpr const T& value() const { return v_; }
  constexpr T& value() { return v_; }
  constexpr const T& partial(int i) const { return d_[i]; }
  constexpr T& partial(int i) { return d_[i]; }
  constexpr std::span<const T, N> partials() const { return std::span<const T, N>(d_.data(), N); }
  // The storage the operators work on (grouped into vectors for double and float).
  using Tangents = ad::Tangents<T, N, ad::packs_tangents<T, N>>;
  constexpr Tangents& tangents() { return d_; }
  constexpr const Tangents& tangents() const { return d_; }

  template <class S>
  Dual& operator+=(const S& o) {
    return *this = *this + o;
  }
  template <class S>
  Dual& operator-=(const S& o) {
    return *this = *this - o;
  }
  template <class S>
  Dual& operator*=(const S& o) {
    return *this = *this * o;
  }
  template <class S>
  Dual& operator/=(const S& o) {
    return *this = *this / o;
  }

 private:
  T v_{};
  Tangents d_{};
};

// The double underneath any nesting of Duals (and Reals).
template <class T, int N, int L>
constexpr double value(const Dual<T, N, L>& x) {
  return value(x.value());
}

namespace ad {
namespace detail {

// The level-0 scalar underneath (double or Real): what comparisons look at.
template <class X>
constexpr decltype(auto) primal(const X& x) {
  if constexpr (is_dual_v<X>) return primal(x.value());
  else return (x);
}

template <class T>
struct type_is {
  using type = T;
};

// The type a binary operation on A and B yields: the higher level outside.
template <class A, class B>
constexpr auto common_dual() {
  constexpr int la = level_v<A>, lb = level_v<B>;
  if constexpr (la == 0 && lb == 0) {
    if constexpr (std::is_same_v<A, Real> || std::is_same_v<B, Real>) return type_is<Real>{};
    else return type_is<std::common_type_t<A, B>>{};
  } else if constexpr (la == lb) {
    static_assert(A::width == B::width,
                  "fx::Dual: two Duals of one level must have the same number of tangents");
    using VA = typename A::value_type;
    using VB = typename B::value_type;
    using T = typename decltype(common_dual<VA, VB>())::type;
    return type_is<Dual<T, A::width, la>>{};
  } else if constexpr (la > lb) {
    using T = typename decltype(common_dual<typename A::value_type, B>())::type;
    return type_is<Dual<T, A::width, la>>{};
  } else {
    using T = typename decltype(common_dual<A, typename B::value_type>())::type;
    return type_is<Dual<T, B::width, lb>>{};
  }
}
template <class A, class B>
using common_dual_t =
    typename decltype(common_dual<std::remove_cvref_t<A>, std::remove_cvref_t<B>>())::type;

// x as an R (of x's level or above): the identity, a widening, or a constant.
template <class R, class X>
constexpr decltype(auto) dual_to(const X& x) {
  if constexpr (std::is_same_v<R, X>) {
    return (x);
  } else if constexpr (level_v<R> == 0) {
    return R(x);
  } else if constexpr (level_v<X> == level_v<R>) {
    using T = typename R::value_type;
    R r(dual_to<T>(x.value()));
    for (int i = 0; i < R::width; ++i) r.partial(i) = dual_to<T>(x.partial(i));
    return r;
  } else {
    return R(dual_to<typename R::value_type>(x));
  }
}

// True when x is a recorded-nothing zero (a constant fx::Real 0): products with it are skipped,
// so tangents of unseeded inputs cost no tape. Always false for numbers.
template <class T>
constexpr bool known_zero(const T& x) {
  if constexpr (std::is_same_v<T, Real>) return x.index() == 0 && x.value() == 0;
  else return false;
}

// The vectorised path of an operator with result R: R's tangents are packed (double, float) and
// each operand is an R or a number. Its loops run over whole tangent groups.
template <class R, class A, class B>
inline constexpr bool packed_op = R::Tangents::packed &&
                                  (std::is_same_v<A, R> ||
                                   std::is_arithmetic_v<A>)&&(std::is_same_v<B, R> ||
                                                              std::is_arithmetic_v<B>);
template <class R>
inline constexpr int groups_v = R::Tangents::groups;

// y = f(x) with f'(x) = df: the result's tangents are df times x's.
template <class T, int N, int L, class V, class D>
constexpr Dual<T, N, L> chain(const Dual<T, N, L>& x, const V& fx_, const D& df) {
  using R = Dual<T, N, L>;
  R r(dual_to<T>(fx_));
  if constexpr (R::Tangents::packed) {
    const T d = T(df);
    for (int k = 0; k < groups_v<R>; ++k) r.tangents().store(k, d * x.tangents().load(k));
  } else {
    for (int i = 0; i < N; ++i)
      if (!known_zero(x.partial(i))) r.partial(i) = dual_to<T>(df * x.partial(i));
  }
  return r;
}

template <class A, class B>
concept DualPair = DualScalar<A> && DualScalar<B> &&(is_dual_v<A> || is_dual_v<B>);

}  // namespace detail
}  // namespace ad

// ---- arithmetic: one template per operator covers Dual op Dual (any levels) and Dual op number.

template <class A, class B>
  requires ad::detail::DualPair<A, B>
constexpr auto operator+(const A& a, const B& b) {
  using namespace ad::detail;
  using R = common_dual_t<A, B>;
  using T = typename R::value_type;
  constexpr int la = ad::level_v<A>, lb = ad::level_v<B>;
  if constexpr (packed_op<R, A, B>) {
    if constexpr (la > lb) {  // a's tangents, unchanged
      R r = a;
      r.value() = T(a.value() + b);
      return r;
    } else if constexpr (la < lb) {
      R r = b;
      r.value() = T(a + b.value());
      return r;
    } else {
      R r(a.value() + b.value());
      for (int k = 0; k < groups_v<R>; ++k)
        r.tangents().store(k, a.tangents().load(k) + b.tangents().load(k));
      return r;
    }
  } else if constexpr (la == lb) {
    R r(dual_to<T>(a.value() + b.value()));
    for (int i = 0; i < R::width; ++i) r.partial(i) = dual_to<T>(a.partial(i) + b.partial(i));
    return r;
  } else if constexpr (la > lb) {
    R r(dual_to<T>(a.value() + b));
    for (int i = 0; i < R::width; ++i) r.partial(i) = dual_to<T>(a.partial(i));
    return r;
  } else {
    R r(dual_to<T>(a + b.value()));
    for (int i = 0; i < R::width; ++i) r.partial(i) = dual_to<T>(b.partial(i));
    return r;
  }
}

template <class A, class B>
  requires ad::detail::DualPair<A, B>
constexpr auto operator-(const A& a, const B& b) {
  using namespace ad::detail;
  using R = common_dual_t<A, B>;
  using T = typename R::value_type;
  constexpr int la = ad::level_v<A>, lb = ad::level_v<B>;
  if constexpr (packed_op<R, A, B>) {
    if constexpr (la > lb) {  // a's tangents, unchanged
      R r = a;
      r.value() = T(a.value() - b);
      return r;
    } else {
      R r(T(primal(a) - primal(b)));
      for (int k = 0; k < groups_v<R>; ++k) {
        if constexpr (la == lb) r.tangents().store(k, a.tangents().load(k) - b.tangents().load(k));
        else r.tangents().store(k, -b.tangents().load(k));
      }
      return r;
    }
  } else if constexpr (la == lb) {
    R r(dual_to<T>(a.value() - b.value()));
    for (int i = 0; i < R::width; ++i) r.partial(i) = dual_to<T>(a.partial(i) - b.partial(i));
    return r;
  } else if constexpr (la > lb) {
    R r(dual_to<T>(a.value() - b));
    for (int i = 0; i < R::width; ++i) r.partial(i) = dual_to<T>(a.partial(i));
    return r;
  } else {
    R r(dual_to<T>(a - b.value()));
    for (int i = 0; i < R::width; ++i) r.partial(i) = dual_to<T>(-b.partial(i));
    return r;
  }
}

template <class A, class B>
  requires ad::detail::DualPair<A, B>
constexpr auto operator*(const A& a, const B& b) {
  using namespace ad::detail;
  using R = common_dual_t<A, B>;
  using T = typename R::value_type;
  constexpr int la = ad::level_v<A>, lb = ad::level_v<B>;
  if constexpr (packed_op<R, A, B>) {
    R r(T(primal(a) * primal(b)));
    for (int k = 0; k < groups_v<R>; ++k) {
      if constexpr (la == lb)
        r.tangents().store(k, a.tangents().load(k) * b.value() + a.value() * b.tangents().load(k));
      else if constexpr (la > lb) r.tangents().store(k, a.tangents().load(k) * T(b));
      else r.tangents().store(k, T(a) * b.tangents().load(k));
    }
    return r;
  } else if constexpr (la == lb) {
    R r(dual_to<T>(a.value() * b.value()));
    for (int i = 0; i < R::width; ++i) {
      bool za = known_zero(a.partial(i)), zb = known_zero(b.partial(i));
      if (za && zb) continue;
      if (za) r.partial(i) = dual_to<T>(a.value() * b.partial(i));
      else if (zb) r.partial(i) = dual_to<T>(a.partial(i) * b.value());
      else r.partial(i) = dual_to<T>(a.partial(i) * b.value() + a.value() * b.partial(i));
    }
    return r;
  } else if constexpr (la > lb) {
    R r(dual_to<T>(a.value() * b));
    for (int i = 0; i < R::width; ++i)
      if (!known_zero(a.partial(i))) r.partial(i) = dual_to<T>(a.partial(i) * b);
    return r;
  } else {
    R r(dual_to<T>(a * b.value()));
    for (int i = 0; i < R::width; ++i)
      if (!known_zero(b.partial(i))) r.partial(i) = dual_to<T>(a * b.partial(i));
    return r;
  }
}

// The value is a / b exactly as in double code (branches must see the same numbers); tangents
// of a multi-component Dual reuse one reciprocal.
template <class A, class B>
  requires ad::detail::DualPair<A, B>
constexpr auto operator/(const A& a, const B& b) {
  using namespace ad::detail;
  using R = common_dual_t<A, B>;
  using T = typename R::value_type;
  constexpr int la = ad::level_v<A>, lb = ad::level_v<B>;
  if constexpr (packed_op<R, A, B>) {
    R r(T(primal(a) / primal(b)));
    const T y = r.value();
    for (int k = 0; k < groups_v<R>; ++k) {
      if constexpr (la == lb)
        r.tangents().store(k, (a.tangents().load(k) - y * b.tangents().load(k)) * (1 / b.value()));
      else if constexpr (la > lb) r.tangents().store(k, a.tangents().load(k) / T(b));
      else r.tangents().store(k, (-y / b.value()) * b.tangents().load(k));
    }
    return r;
  } else if constexpr (la == lb) {
    R r(dual_to<T>(a.value() / b.value()));
    const T& y = r.value();
    if constexpr (R::width == 1) {
      if (!(known_zero(a.partial(0)) && known_zero(b.partial(0))))
        r.partial(0) = dual_to<T>((a.partial(0) - y * b.partial(0)) / b.value());
    } else {
      T inv = dual_to<T>(1 / b.value());
      for (int i = 0; i < R::width; ++i) {
        bool za = known_zero(a.partial(i)), zb = known_zero(b.partial(i));
        if (za && zb) continue;
        if (za) r.partial(i) = dual_to<T>(-(y * b.partial(i)) * inv);
        else if (zb) r.partial(i) = dual_to<T>(a.partial(i) * inv);
        else r.partial(i) = dual_to<T>((a.partial(i) - y * b.partial(i)) * inv);
      }
    }
    return r;
  } else if constexpr (la > lb) {
    R r(dual_to<T>(a.value() / b));
    for (int i = 0; i < R::width; ++i)
      if (!known_zero(a.partial(i))) r.partial(i) = dual_to<T>(a.partial(i) / b);
    return r;
  } else {
    R r(dual_to<T>(a / b.value()));
    T f = dual_to<T>(-r.value() / b.value());  // d(a/b)/db
    for (int i = 0; i < R::width; ++i)
      if (!known_zero(b.partial(i))) r.partial(i) = dual_to<T>(f * b.partial(i));
    return r;
  }
}

template <class T, int N, int L>
constexpr Dual<T, N, L> operator-(const Dual<T, N, L>& a) {
  using R = Dual<T, N, L>;
  R r(-a.value());
  if constexpr (R::Tangents::packed) {
    for (int k = 0; k < ad::detail::groups_v<R>; ++k) r.tangents().store(k, -a.tangents().load(k));
  } else {
    for (int i = 0; i < N; ++i)
      if (!ad::detail::known_zero(a.partial(i))) r.partial(i) = -a.partial(i);
  }
  return r;
}
template <class T, int N, int L>
constexpr Dual<T, N, L> operator+(const Dual<T, N, L>& a) {
  return a;
}

// Comparisons look at values only, as branches in double code do.
template <class A, class B>
  requires ad::detail::DualPair<A, B>
constexpr bool operator==(const A& a, const B& b) {
  return ad::detail::primal(a) == ad::detail::primal(b);
}
template <class A, class B>
  requires ad::detail::DualPair<A, B>
constexpr auto operator<=>(const A& a, const B& b) {
  return ad::detail::primal(a) <=> ad::detail::primal(b);
}

// ---- <cmath>: each is the value and the derivative, both computed in T (so they differentiate
// again when T is itself a Dual or an fx::Real).

// The math functions of fluxion/ops/elementwise_defs.hpp, value and derivative from the table.
#define FX_DUAL_TABLE_UNARY(NAME)                                    \
  template <class T, int N, int L>                                   \
  Dual<T, N, L> NAME(const Dual<T, N, L>& x) {                       \
    using Op = elem::NAME##_op;                                      \
    const T y = Op::value(x.value());                                \
    return ad::detail::chain(x, y, T(Op::derivative(x.value(), y))); \
  }
FX_ELEMENTWISE_UNARY(FX_DUAL_TABLE_UNARY)
#undef FX_DUAL_TABLE_UNARY
// |x| has derivative sign(x), taken as 0 at 0 (as fx::Real does).
template <class T, int N, int L>
Dual<T, N, L> abs(const Dual<T, N, L>& x) {
  using std::abs;
  auto p = ad::detail::primal(x);
  if (p > 0) return x;
  if (p < 0) return -x;
  return Dual<T, N, L>(abs(x.value()));
}
template <class T, int N, int L>
Dual<T, N, L> fabs(const Dual<T, N, L>& x) {
  return abs(x);
}

// pow(a, b) for any mix of Duals (any levels) and numbers: the power rule for an exponent
// that is constant at a's level, the exponential rule for a constant base, both otherwise.
// As for fx::Real: the power term is 0 when the exponent is 0, the exponential term 0 when a <= 0.
template <class A, class B>
  requires ad::detail::DualPair<A, B>
auto pow(const A& a, const B& b) {
  using namespace ad::detail;
  using std::pow, std::log;
  using R = common_dual_t<A, B>;
  using T = typename R::value_type;
  constexpr int la = ad::level_v<A>, lb = ad::level_v<B>;
  if constexpr (la > lb) {
    R r(dual_to<T>(pow(a.value(), b)));
    if (primal(b) != 0) {
      T da = dual_to<T>(b * pow(a.value(), b - 1));
      for (int i = 0; i < R::width; ++i)
        if (!known_zero(a.partial(i))) r.partial(i) = dual_to<T>(da * a.partial(i));
    }
    return r;
  } else if constexpr (la < lb) {
    R r(dual_to<T>(pow(a, b.value())));
    if (primal(a) > 0) {
      T db = dual_to<T>(r.value() * log(a));
      for (int i = 0; i < R::width; ++i)
        if (!known_zero(b.partial(i))) r.partial(i) = dual_to<T>(db * b.partial(i));
    }
    return r;
  } else {
    R r(dual_to<T>(pow(a.value(), b.value())));
    T da = primal(b.value()) != 0 ? dual_to<T>(b.value() * pow(a.value(), b.value() - 1)) : T(0);
    T db = primal(a.value()) > 0 ? dual_to<T>(r.value() * log(a.value())) : T(0);
    for (int i = 0; i < R::width; ++i)
      r.partial(i) = dual_to<T>(da * a.partial(i) + db * b.partial(i));
    return r;
  }
}

// atan2, hypot, copysign from the table: both operands at the common level (a number or a
// lower-level Dual is a constant there).
#define FX_DUAL_TABLE_BINARY(NAME)                                                             \
  template <class A, class B>                                                                  \
    requires ad::detail::DualPair<A, B>                                                        \
  auto NAME(const A& a, const B& b) {                                                          \
    using namespace ad::detail;                                                                \
    using Op = elem::NAME##_op;                                                                \
    using R = common_dual_t<A, B>;                                                             \
    using T = typename R::value_type;                                                          \
    const R& ar = dual_to<R>(a);                                                               \
    const R& br = dual_to<R>(b);                                                               \
    R r(Op::value(ar.value(), br.value()));                                                    \
    const T da = Op::da(ar.value(), br.value(), r.value());                                    \
    const T db = elem::partial_b<Op>(ar.value(), br.value(), r.value());                       \
    for (int i = 0; i < R::width; ++i) r.partial(i) = da * ar.partial(i) + db * br.partial(i); \
    return r;                                                                                  \
  }
FX_ELEMENTWISE_BINARY(FX_DUAL_TABLE_BINARY)
#undef FX_DUAL_TABLE_BINARY

// max/min choose by value (a on ties, as fx::Real does); the same-type overloads are more
// specialised than std::max, so `using std::max; max(a, b)` picks them.
template <class T, int N, int L>
Dual<T, N, L> max(const Dual<T, N, L>& a, const Dual<T, N, L>& b) {
  return ad::detail::primal(a) >= ad::detail::primal(b) ? a : b;
}
template <class T, int N, int L>
Dual<T, N, L> min(const Dual<T, N, L>& a, const Dual<T, N, L>& b) {
  return ad::detail::primal(a) <= ad::detail::primal(b) ? a : b;
}
template <class A, class B>
  requires ad::detail::DualPair<A, B>
auto max(const A& a, const B& b) {
  using R = ad::detail::common_dual_t<A, B>;
  return ad::detail::primal(a) >= ad::detail::primal(b) ? R(ad::detail::dual_to<R>(a))
                                                        : R(ad::detail::dual_to<R>(b));
}
template <class A, class B>
  requires ad::detail::DualPair<A, B>
auto min(const A& a, const B& b) {
  using R = ad::detail::common_dual_t<A, B>;
  return ad::detail::primal(a) <= ad::detail::primal(b) ? R(ad::detail::dual_to<R>(a))
                                                        : R(ad::detail::dual_to<R>(b));
}
template <class A, class B>
  requires ad::detail::DualPair<A, B>
auto fmax(const A& a, const B& b) { return max(a, b); }
template <class A, class B>
  requires ad::detail::DualPair<A, B>
auto fmin(const A& a, const B& b) { return min(a, b); }

template <class T, int N, int L>
bool isfinite(const Dual<T, N, L>& x) {
  return std::isfinite(value(x));
}
template <class T, int N, int L>
bool isnan(const Dual<T, N, L>& x) {
  return std::isnan(value(x));
}

// Prints "value[d0 d1 ...]_L", nested for nested Duals.
template <class T, int N, int L>
std::ostream& operator<<(std::ostream& os, const Dual<T, N, L>& x) {
  os << x.value() << '[';
  for (int i = 0; i < N; ++i) os << (i ? " " : "") << x.partial(i);
  return os << "]_" << L;
}

namespace ad {

// The tangent of y along component i of the level-L perturbation: y's partial at level L,
// mapped through higher levels, and a zero when y does not carry level L (y is constant in it).
template <int L, class Y>
auto tangent(const Y& y, int i) {
  if constexpr (level_v<Y> < L) {
    if constexpr (std::is_integral_v<Y>) return 0.0;
    else return Y{};
  } else if constexpr (level_v<Y> == L) {
    return y.partial(i);
  } else {
    using T = decltype(tangent<L>(y.value(), i));
    Dual<T, Y::width, Y::level> r(tangent<L>(y.value(), i));
    for (int j = 0; j < Y::width; ++j) r.partial(j) = tangent<L>(y.partial(j), i);
    return r;
  }
}

// y with the level-L perturbation dropped (its value along every other level).
template <int L, class Y>
auto strip(const Y& y) {
  if constexpr (level_v<Y> < L) {
    return y;
  } else if constexpr (level_v<Y> == L) {
    return y.value();
  } else {
    using T = decltype(strip<L>(y.value()));
    Dual<T, Y::width, Y::level> r(strip<L>(y.value()));
    for (int j = 0; j < Y::width; ++j) r.partial(j) = strip<L>(y.partial(j));
    return r;
  }
}

}  // namespace ad
}  // namespace fx

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
