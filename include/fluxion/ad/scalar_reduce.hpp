// Sums, dot products and squared norms of whole ranges, generic over the number type: with
// fx::Real each is ONE tape statement with an operand per element (Stan's dot_product, Adept's
// array sums), instead of one statement per `s += a[i] * b[i]`.
//
//   std::vector<double> x = {1, 2, 3}, w0 = {0.5, -1, 2};
//   auto energy = [&](const auto& w) {     // generic: w of double, Real, Dual, complex
//     return 0.5 * fx::squared_norm(w) + fx::dot_product(x, w);
//   };
//   std::vector<double> g = fx::gradient(energy, w0);          // w0 + x
//   std::vector<double> L_packed_by_rows = {1, 2, 3, 4, 5, 6}, v = {1, 1, 1}, y(3);  // L: 3 x 3
//   fx::lower_triangular_product(L_packed_by_rows, v, y);     // y = L v = (1, 5, 15)
//
// Any contiguous ranges work (std::vector, std::array, C arrays, std::span for sub-ranges:
// `fx::dot_product(std::span(row, j), std::span(v, j))`). With Real elements the recorded
// statement holds the partials (b_i for a_i, a_i for b_i, 2 v_i, 1), so the tape and its sweep
// do a few stores per element where an element-by-element loop does a whole statement (ADBench's
// GMM in bench/scalar_ad: 109M instead of 230M instructions per gradient). With other element
// types (double, fx::Dual, std::complex, ...) each is the plain loop. Ranges of different
// lengths throw fx::Error.
#pragma once
#include <cstddef>
#include <functional>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>

#include "fluxion/ad/scalar.hpp"
#include "fluxion/core/error.hpp"

namespace fx {
namespace ad {

// The recorded forms (src/ad/scalar_reduce.cpp): one statement each, or a constant Real when no
// element is recorded. Elements of another recording throw as in any Real expression.
Real record_sum(const Real* v, size_t n);
Real record_squared_norm(const Real* v, size_t n);
Real record_dot(const Real* a, const Real* b, size_t n);
Real record_dot(const double* a, const Real* b, size_t n);
// y[b] = Σ_{a <= b} L(b, a) x[a] for the rows of `packed`, one statement per row (a row of
// constants gives a constant); y must not overlap packed or x.
void record_lower_triangular_product(const Real* packed, const Real* x, Real* y, size_t n);

template <class R>
using element_t = std::remove_cvref_t<std::ranges::range_reference_t<R>>;

template <class A, class B>
void check_same_length(const char* op, const A& a, const B& b) {
  FX_CHECK(std::ranges::size(a) == std::ranges::size(b), op, ": the ranges have lengths ",
           std::ranges::size(a), " and ", std::ranges::size(b), "; they must be equal");
}

}  // namespace ad

// Σ v_i (the first element's type's zero, T{}, for an empty range).
template <std::ranges::contiguous_range R>
auto sum(const R& v) {
  using T = ad::element_t<R>;
  if constexpr (std::is_same_v<T, Real>) {
    return ad::record_sum(std::ranges::data(v), std::ranges::size(v));
  } else {
    auto it = std::ranges::begin(v), end = std::ranges::end(v);
    if (it == end) return T{};
    T s = *it;
    while (++it != end) s = s + *it;
    return s;
  }
}

// Σ v_i² (the squared Euclidean norm for real elements; v_i * v_i as written, not |v_i|², for
// complex ones).
template <std::ranges::contiguous_range R>
auto squared_norm(const R& v) {
  using T = ad::element_t<R>;
  if constexpr (std::is_same_v<T, Real>) {
    return ad::record_squared_norm(std::ranges::data(v), std::ranges::size(v));
  } else {
    using P = std::remove_cvref_t<decltype(std::declval<T>() * std::declval<T>())>;
    auto it = std::ranges::begin(v), end = std::ranges::end(v);
    if (it == end) return P{};
    P s = *it * *it;
    while (++it != end) s = s + *it * *it;
    return s;
  }
}

// Σ a_i b_i. Either range may hold plain doubles (data) while the other holds Reals.
template <std::ranges::contiguous_range A, std::ranges::contiguous_range B>
auto dot_product(const A& a, const B& b) {
  using TA = ad::element_t<A>;
  using TB = ad::element_t<B>;
  ad::check_same_length("fx::dot_product", a, b);
  const size_t n = std::ranges::size(a);
  const TA* pa = std::ranges::data(a);
  const TB* pb = std::ranges::data(b);
  if constexpr (std::is_same_v<TA, Real> && std::is_same_v<TB, Real>) {
    return ad::record_dot(pa, pb, n);
  } else if constexpr (std::is_same_v<TA, double> && std::is_same_v<TB, Real>) {
    return ad::record_dot(pa, pb, n);
  } else if constexpr (std::is_same_v<TA, Real> && std::is_same_v<TB, double>) {
    return ad::record_dot(pb, pa, n);
  } else {
    using T = std::remove_cvref_t<decltype(std::declval<TA>() * std::declval<TB>())>;
    if (n == 0) return T{};
    T s = pa[0] * pb[0];
    for (size_t i = 1; i < n; ++i) s = s + pa[i] * pb[i];
    return s;
  }
}

// y = L x for a lower-triangular n × n matrix L stored packed by rows: row b is
// L(b, 0), ..., L(b, b), starting at packed[b (b + 1) / 2] (so packed has n (n + 1) / 2
// elements). Cholesky factors and ADBench's GMM (Q = exp(diag) + strictly lower part) are such
// matrices. y has n elements and must not overlap packed or x. With Real elements each y[b] is
// a statement of its own, but the n rows are recorded as one block holding each element of L
// and x once (not x once per row), and the sweep sums x's adjoints before adding them; up to
// n = 16 both run fully unrolled. ADBench's GMM in bench/scalar_ad takes 65M instructions per
// gradient (4.7-4.95x its plain evaluation's time) this way, 109M (6.5x) with a dot product per
// row. With any other number type, and when only one side holds Reals, it is the plain loop
// (dot products).
template <std::ranges::contiguous_range L, std::ranges::contiguous_range X,
          std::ranges::contiguous_range Y>
void lower_triangular_product(const L& packed, const X& x, Y&& y) {
  using TL = ad::element_t<L>;
  using TX = ad::element_t<X>;
  const size_t n = std::ranges::size(x);
  FX_CHECK(std::ranges::size(packed) == n * (n + 1) / 2, "fx::lower_triangular_product: a ", n,
           " x ", n, " lower-triangular matrix packs into ", n * (n + 1) / 2,
           " elements; the range has ", std::ranges::size(packed));
  FX_CHECK(std::ranges::size(y) == n, "fx::lower_triangular_product: x has ", n,
           " elements and y has ", std::ranges::size(y), "; they must be equal");
  const TL* pl = std::ranges::data(packed);
  const TX* px = std::ranges::data(x);
  auto* py = std::ranges::data(y);
  auto overlaps = [&](const auto* p, size_t len) {
    const auto* a = reinterpret_cast<const char*>(p);
    const auto* b = reinterpret_cast<const char*>(py);
    return n != 0 && len != 0 && std::less<>{}(a, b + n * sizeof(*py)) &&
           std::less<>{}(b, a + len * sizeof(*p));
  };
  FX_CHECK(!overlaps(pl, n * (n + 1) / 2) && !overlaps(px, n),
           "fx::lower_triangular_product: y overlaps the matrix or x; write into another range");
  if constexpr (std::is_same_v<TL, Real> && std::is_same_v<TX, Real>) {
    ad::record_lower_triangular_product(pl, px, py, n);
  } else {
    for (size_t b = 0; b < n; ++b)
      py[b] = dot_product(std::span(pl + b * (b + 1) / 2, b + 1), std::span(px, b + 1));
  }
}

}  // namespace fx
