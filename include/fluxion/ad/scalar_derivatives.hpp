// Derivative operators for scalar generic code (functions of a number or of a std::vector of
// numbers, written as templates or `auto` lambdas), built on fx::Dual (forward) and fx::Real
// (reverse).
//
//   auto f = [](const auto& x) { return x[0] * x[0] * x[1] + sin(x[1]); };
//   auto v2v = [](const auto& x) { return std::vector{x[0] * x[1], exp(x[0])}; };  // R^2 -> R^2
//   std::vector<double> x = {1.0, 2.0}, v = {1.0, 0.0};
//   double d = fx::derivative([](auto t) { return exp(sin(t)); }, 0.3);   // forward mode
//   double d3 = fx::nth_derivative<3>([](auto t) { return exp(sin(t)); }, 0.3);
//   auto g = fx::gradient_forward(f, x);            // forward, in chunks of 8 tangents
//   auto J = fx::jacobian_forward(v2v, x);          // J[i][j] = ∂f_i/∂x_j
//   auto Jr = fx::jacobian(v2v, x);                 // the same by reverse mode, a sweep per output
//   auto H = fx::hessian(f, x);                     // H[i][j] = ∂²f/∂x_i∂x_j, reverse over forward
//   auto Hv = fx::hvp(f, x, v);                     // H·v without forming H
//   auto h = fx::diaghessian(f, x);                 // H[i][i], forward over forward
//
// These operators nest with each other and with fx::gradient: each picks a perturbation level
// above every level its function's result already carries (the type f returns for the plain
// argument, asked in an unevaluated context, so f must compile for the plain type too, as code
// written for double does), so a derivative taken inside another derivative never confuses the
// two perturbations: d/dx [x · d/dy (x + y)] is 1. derivative, nth_derivative,
// gradient_forward, jacobian_forward and diaghessian accept numbers, fx::Real or Duals (so they
// can run inside other derivatives); hessian and hvp take doubles: they own a reverse-mode
// recording (their f may still call the forward operators inside).
//
// hessian and hvp run f on fx::Dual<fx::Real, N>: the forward tangents (∇f·e_k for a chunk of N
// directions) are themselves recorded on the scalar tape, and one reverse sweep from each
// tangent gives ∇(∇f·e_k) = H e_k. That is reverse over forward; forward over reverse would need a
// tape whose partials are Duals, which fx::Real (double partials) does not have.
#pragma once
#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/ad/dual.hpp"
#include "fluxion/ad/scalar.hpp"
#include "fluxion/core/error.hpp"

namespace fx {
namespace ad::detail {

// The highest perturbation level anywhere in R (a scalar or a container of scalars).
template <class R>
constexpr int result_level() {
  using U = std::remove_cvref_t<R>;
  if constexpr (DualScalar<U>) return level_v<U>;
  else if constexpr (requires { typename U::value_type; })
    return result_level<typename U::value_type>();
  else return 0;
}

// Numbers other than floating point are differentiated as doubles.
template <class X>
using dual_base_t = std::conditional_t<std::is_integral_v<X>, double, X>;

template <class X, int N>
struct scalar_seed {
  template <int L>
  using type = Dual<dual_base_t<X>, N, L>;
};
template <class X, int N>
struct vector_seed {
  template <int L>
  using type = std::vector<Dual<dual_base_t<X>, N, L>>;
};

// The level of a new perturbation for f at an argument of type Arg: above Arg's own level and
// above any level f's result carries when called with plain Arg (a Dual f captured from an
// enclosing derivative). A non-generic f that only takes lower-level Duals keeps the lowest level.
template <class F, class Arg, int ArgLevel, template <int> class Seeded>
constexpr int seed_level() {
  constexpr int base = ArgLevel + 1;
  if constexpr (std::is_invocable_v<F&, const Arg&>) {
    constexpr int lr = result_level<std::invoke_result_t<F&, const Arg&>>();
    if constexpr (lr >= base && std::is_invocable_v<F&, const Seeded<lr + 1>&>) return lr + 1;
    else return base;
  } else {
    return base;
  }
}

// tangent<L> mapped over a std::vector result.
template <int L, class Y>
auto tangents(const Y& y, int i) {
  if constexpr (DualScalar<Y>) {
    return tangent<L>(y, i);
  } else {
    using E = decltype(tangent<L>(y[0], i));
    std::vector<E> out;
    out.reserve(y.size());
    for (const auto& e : y) out.push_back(tangent<L>(e, i));
    return out;
  }
}

// f's output as a vector (a scalar output is a vector of one).
template <class Y>
size_t output_size(const Y& y) {
  if constexpr (DualScalar<Y>) return 1;
  else return y.size();
}
template <class Y>
const auto& output_at(const Y& y, size_t i) {
  if constexpr (DualScalar<Y>) return (void)i, y;
  else return y[i];
}

// The seeded copy of x: component j carries tangent e_(j - first) when first <= j < first + N.
template <int N, int L, class X>
std::vector<Dual<dual_base_t<X>, N, L>> seed_chunk(const std::vector<X>& x, size_t first) {
  using T = dual_base_t<X>;
  std::vector<Dual<T, N, L>> xd(x.size());
  for (size_t j = 0; j < x.size(); ++j) {
    xd[j].value() = T(x[j]);
    if (j >= first && j < first + N) xd[j].partial(int(j - first)) = T(1);
  }
  return xd;
}

// Runs f on x seeded as Dual<Real, N> in direction chunk `seed` (seed(j, k): tangent k of x_j)
// and calls column(k, adjoints, variables) for each k < count with the reverse sweep of tangent k.
template <int N, class F, class Seed, class Column>
void reverse_over_forward(F& f, const std::vector<double>& x, int count, Seed seed, Column column) {
  using D = Dual<Real, N, 1>;
  ScalarRecording rec;
  std::vector<D> xd(x.size());
  std::vector<uint32_t> index(x.size());
  for (size_t j = 0; j < x.size(); ++j) {
    Real v = rec.variable(x[j]);
    index[j] = v.index();
    std::array<Real, N> d{};
    for (int k = 0; k < N; ++k) d[k] = Real(seed(j, k));
    xd[j] = D(v, d);
  }
  auto y = f(std::as_const(xd));
  static_assert(DualScalar<decltype(y)>, "fx::hessian/hvp: the function must return a scalar");
  for (int k = 0; k < count; ++k) {
    auto t = tangent<1>(y, k);
    static_assert(PlainScalar<decltype(t)>,
                  "fx::hessian/hvp: the function's result carries a Dual it captured; take "
                  "hessians inside other derivatives with fx::diaghessian/jacobian_forward");
    Real tr(t);
    column(k, rec.adjoints(tr), index);
  }
}

}  // namespace ad::detail

// d/dx f(x) for a scalar x (a number, an fx::Real or a Dual); f may return a scalar or a
// std::vector of scalars (then the result is the vector of derivatives).
template <class F, class X>
  requires ad::DualScalar<X>
auto derivative(F&& f, const X& x) {
  using T = ad::detail::dual_base_t<X>;
  constexpr int L =
      ad::detail::seed_level<F, X, ad::level_v<X>, ad::detail::scalar_seed<X, 1>::template type>();
  const Dual<T, 1, L> xd(T(x), {T(1)});
  return ad::detail::tangents<L>(f(xd), 0);
}

// The K-th derivative of f: one evaluation on K nested Duals, x + ε₁ + ... + ε_K, whose
// ε₁···ε_K coefficient is f⁽ᴷ⁾(x) (Dual<Dual<Dual<double>>> for K = 3).
template <int K, class F, class X>
  requires(ad::DualScalar<X>&& K >= 0)
auto nth_derivative(F&& f, const X& x) {
  using T = ad::detail::dual_base_t<X>;
  if constexpr (K == 0) {
    return f(T(x));
  } else {
    constexpr int L0 = ad::detail::seed_level<F, X, ad::level_v<X>,
                                              ad::detail::scalar_seed<X, 1>::template type>();
    auto seed = [&]<int J>(auto& self, std::integral_constant<int, J>) {
      if constexpr (J == 0) {
        return T(x);
      } else {
        auto inner = self(self, std::integral_constant<int, J - 1>{});
        using I = decltype(inner);
        return Dual<I, 1, L0 + J - 1>(inner, {I(1)});
      }
    };
    auto y = f(seed(seed, std::integral_constant<int, K>{}));
    auto peel = [&]<int J>(auto& self, const auto& v, std::integral_constant<int, J>) {
      if constexpr (J == 0) return v;
      else return self(self, ad::tangent<L0 + J - 1>(v, 0), std::integral_constant<int, J - 1>{});
    };
    return peel(peel, y, std::integral_constant<int, K>{});
  }
}

// The gradient of a scalar f of a vector, by forward mode: ceil(n / N) evaluations of f on
// Dual<T, N>, each carrying N tangents.
template <int N = 8, class F, class X>
  requires ad::DualScalar<X>
auto gradient_forward(F&& f, const std::vector<X>& x) {
  constexpr int L = ad::detail::seed_level<F, std::vector<X>, ad::level_v<X>,
                                           ad::detail::vector_seed<X, N>::template type>();
  using D = Dual<ad::detail::dual_base_t<X>, N, L>;
  using E = decltype(ad::tangent<L>(f(std::declval<const std::vector<D>&>()), 0));
  std::vector<E> g(x.size());
  for (size_t first = 0; first < x.size(); first += N) {
    const std::vector<D> xd = ad::detail::seed_chunk<N, L>(x, first);
    auto y = f(xd);
    static_assert(ad::DualScalar<decltype(y)>, "fx::gradient_forward: f must return a scalar");
    for (size_t k = 0; k < N && first + k < x.size(); ++k) g[first + k] = ad::tangent<L>(y, int(k));
  }
  return g;
}

// The Jacobian of f: vector -> vector (or scalar), J[i][j] = ∂f_i/∂x_j, by forward mode in
// chunks of N columns. f must return the same number of outputs on every call.
template <int N = 8, class F, class X>
  requires ad::DualScalar<X>
auto jacobian_forward(F&& f, const std::vector<X>& x) {
  constexpr int L = ad::detail::seed_level<F, std::vector<X>, ad::level_v<X>,
                                           ad::detail::vector_seed<X, N>::template type>();
  using D = Dual<ad::detail::dual_base_t<X>, N, L>;
  using Y = std::remove_cvref_t<decltype(f(std::declval<const std::vector<D>&>()))>;
  using E = decltype(ad::tangent<L>(ad::detail::output_at(std::declval<const Y&>(), 0), 0));
  std::vector<std::vector<E>> J;
  size_t m = 0;
  for (size_t first = 0; first == 0 || first < x.size(); first += N) {
    const std::vector<D> xd = ad::detail::seed_chunk<N, L>(x, first);
    Y y = f(xd);
    if (first == 0) {
      m = ad::detail::output_size(y);
      J.assign(m, std::vector<E>(x.size()));
    }
    FX_CHECK(ad::detail::output_size(y) == m, "fx::jacobian_forward: f returned ", m,
             " outputs on its first call and ", ad::detail::output_size(y), " on a later one");
    for (size_t i = 0; i < m; ++i)
      for (size_t k = 0; k < N && first + k < x.size(); ++k)
        J[i][first + k] = ad::tangent<L>(ad::detail::output_at(y, i), int(k));
  }
  return J;
}

// The Jacobian of f: vector -> vector (or scalar), J[i][j] = ∂f_i/∂x_j, by reverse mode: one
// recording of f on fx::Real and one sweep per output, so it suits many inputs and few
// outputs (jacobian_forward the opposite).
template <class F, class X>
  requires std::is_arithmetic_v<X> std::vector<std::vector<double>> jacobian(
      F&& f, const std::vector<X>& x) {
    ad::ScalarRecording rec;
    std::vector<Real> xr(x.size());
    for (size_t j = 0; j < x.size(); ++j) xr[j] = rec.variable(double(x[j]));
    const auto y = f(std::as_const(xr));
    const size_t m = ad::detail::output_size(y);
    std::vector<std::vector<double>> J(m, std::vector<double>(x.size()));
    for (size_t i = 0; i < m; ++i) {
      const Real yi = ad::detail::output_at(y, i);
      const std::vector<double>& adj = rec.adjoints(yi);
      for (size_t j = 0; j < x.size(); ++j) J[i][j] = adj[xr[j].index()];
    }
    return J;
  }

// The diagonal of f's Hessian: n evaluations on second-order Duals (x_j + ε₁ + ε₂), forward
// over forward; cost about 4 primal evaluations each, no tape.
template <class F, class X>
  requires ad::DualScalar<X>
auto diaghessian(F&& f, const std::vector<X>& x) {
  using T = ad::detail::dual_base_t<X>;
  constexpr int L = ad::detail::seed_level<F, std::vector<X>, ad::level_v<X>,
                                           ad::detail::vector_seed<X, 1>::template type>();
  using D1 = Dual<T, 1, L>;
  using D2 = Dual<D1, 1, L + 1>;
  std::vector<D2> xd(x.size());
  for (size_t j = 0; j < x.size(); ++j) xd[j] = D2(D1(T(x[j])));
  using E = decltype(ad::tangent<L>(ad::tangent<L + 1>(f(std::as_const(xd)), 0), 0));
  std::vector<E> h(x.size());
  for (size_t j = 0; j < x.size(); ++j) {
    xd[j] = D2(D1(T(x[j]), {T(1)}), {D1(T(1))});
    h[j] = ad::tangent<L>(ad::tangent<L + 1>(f(std::as_const(xd)), 0), 0);
    xd[j] = D2(D1(T(x[j])));
  }
  return h;
}

// The Hessian of a scalar f of a vector of doubles, H[i][j] = ∂²f/∂x_i∂x_j, reverse over
// forward: ceil(n / N) recordings of f on Dual<Real, N> and one reverse sweep per column. The
// result is symmetric up to rounding (columns come from different sweeps).
template <int N = 4, class F, class X>
  requires std::is_arithmetic_v<X> std::vector<std::vector<double>> hessian(
      F&& f, const std::vector<X>& x) {
    std::vector<double> xs(x.begin(), x.end());
    size_t n = xs.size();
    std::vector<std::vector<double>> H(n, std::vector<double>(n));
    for (size_t first = 0; first < n; first += N) {
      int count = int(std::min<size_t>(N, n - first));
      ad::detail::reverse_over_forward<N>(
          f, xs, count, [&](size_t j, int k) { return j == first + size_t(k) ? 1.0 : 0.0; },
          [&](int k, const std::vector<double>& adj, const std::vector<uint32_t>& index) {
            for (size_t i = 0; i < n; ++i) H[i][first + k] = adj[index[i]];
          });
    }
    return H;
  }

// The Hessian-vector product H(x)·v: one recording of f on Dual<Real, 1> seeded with v and one
// reverse sweep (about the cost of a few gradients, whatever n is).
template <class F, class X>
  requires std::is_arithmetic_v<X> std::vector<double> hvp(F&& f, const std::vector<X>& x,
                                                           const std::vector<double>& v) {
    FX_CHECK(v.size() == x.size(), "fx::hvp: x has ", x.size(), " elements but v has ", v.size());
    std::vector<double> xs(x.begin(), x.end());
    std::vector<double> hv(xs.size());
    ad::detail::reverse_over_forward<1>(
        f, xs, 1, [&](size_t j, int) { return v[j]; },
        [&](int, const std::vector<double>& adj, const std::vector<uint32_t>& index) {
          for (size_t i = 0; i < xs.size(); ++i) hv[i] = adj[index[i]];
        });
    return hv;
  }

}  // namespace fx
