// Every leaf of a structure, not only its tensors: numbers, complex numbers, strings and any
// other value a struct lists in FX_FIELDS, walked in lockstep across structures of the same
// shape. Gradients use it to give each leaf its derivative (or a zero) instead of a copy, and
// scalar AD to rebind a class template S<double> to S<fx::Real> and back.
//
//   struct Params { fx::Tensor w; double s; int steps; FX_FIELDS(w, s, steps) };
//   Params params{fx::ones({2}), 0.5, 10};
//   fx::zip_leaves([](auto& leaf) { /* fx::Tensor&, double&, int& */ }, params);
//   static_assert(fx::Traversable<Params>);           // Tensor, numbers, containers, FX_FIELDS
//   fx::require_traversable<Params, "fx::gradient">(); // a clear compile error otherwise
//
// Containers walk into their elements as in zip_tensors (fields.hpp): std::vector, std::array,
// std::tuple, std::pair, std::optional and the values of std::map / std::unordered_map.
#pragma once
#include <algorithm>
#include <complex>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "fluxion/core/fields.hpp"

namespace fx {

namespace detail {
template <class T> struct is_complex_number : std::false_type {};
template <class T> struct is_complex_number<std::complex<T>> : std::true_type {};

}  // namespace detail

// Number types of higher layers (fx::Real, fx::Dual) declare themselves leaves by specialising
// this beside their definition.
template <class T>
struct is_number_type : std::false_type {};

namespace detail {
// A leaf: a value the walkers do not look inside.
template <class T>
constexpr bool is_leaf_v = std::is_same_v<T, Tensor> || std::is_arithmetic_v<T> ||
                           is_complex_number<T>::value || std::is_same_v<T, std::string> ||
                           std::is_enum_v<T> || is_number_type<T>::value;

// What walks as holding no parameters: functions, and lambdas used as layers (`Chain(
// [](const Tensor& x) { return x * x; }, Dense(...))`). A lambda is empty, or (capturing) not
// copy-assignable, unlike a user's struct that forgot FX_FIELDS.
template <class T>
constexpr bool is_function_layer =
    std::is_pointer_v<T> || std::is_function_v<T> || std::is_empty_v<T> ||
    (std::is_class_v<T> && !std::is_aggregate_v<T> && !std::is_copy_assignable_v<T>);

template <class T> struct traversable;
template <class... Ts>
constexpr bool all_traversable(std::tuple<Ts...>*) {
  return (traversable<std::remove_cvref_t<Ts>>::value && ...);
}
// Whether every part of T is a leaf, a container of traversable values or a struct with
// FX_FIELDS whose fields are traversable, or a function (is_function_layer). A struct without
// FX_FIELDS is not: the walkers would see nothing in it, so a gradient would silently hold
// nothing (or a copy of its values).
template <class T>
struct traversable {
  static constexpr bool value = [] {
    if constexpr (is_leaf_v<T>) return true;
    else if constexpr (HasFields<T>)
      return all_traversable(static_cast<decltype(std::declval<T&>().fx_fields())*>(nullptr));
    else if constexpr (is_vector<T>::value || is_std_array<T>::value || is_optional<T>::value)
      return traversable<std::remove_cvref_t<typename T::value_type>>::value;
    else if constexpr (is_map<T>::value)
      return traversable<std::remove_cvref_t<typename T::mapped_type>>::value;
    else if constexpr (is_tuple_like<T>::value)
      return all_traversable(static_cast<T*>(nullptr));
    else return is_function_layer<T>;
  }();
};
template <class A, class B>
struct traversable<std::pair<A, B>> {
  static constexpr bool value = traversable<std::remove_cvref_t<A>>::value &&
                                traversable<std::remove_cvref_t<B>>::value;
};

// A string literal as a template argument (the name of the operation in an error message).
template <size_t N>
struct OpName {
  constexpr OpName(const char (&s)[N]) { std::copy_n(s, N, text); }  // NOLINT: implicit
  char text[N];
};
}  // namespace detail

template <class T>
concept Traversable = detail::traversable<std::remove_cvref_t<T>>::value;

// Fails to compile, naming T (in the instantiation of this function) and what to do, when T is
// not Traversable: a struct passed to gradient, update or summary must declare FX_FIELDS.
template <class T, detail::OpName Op>
constexpr void require_traversable() {
  static_assert(Traversable<T>,
                "this type cannot be walked by fluxion (gradient, pullback, optimisers, summary): "
                "a struct must list its parameters with FX_FIELDS(...), and every listed field "
                "must be a tensor, a number, a container of them or another FX_FIELDS struct");
}

// Calls fn(x_leaf, y_leaf...) for each leaf of x, with the leaves at the same place in ys.
template <class Fn, class T, class... Ts>
void zip_leaves(Fn&& fn, T& x, Ts&... ys);

namespace detail {
template <size_t I, class Fn, class TX, class... TYs>
void zip_leaf_element(Fn& fn, TX& tx, TYs&... tys) {
  zip_leaves(fn, std::get<I>(tx), std::get<I>(tys)...);
}
template <class Fn, size_t... I, class TX, class... TYs>
void zip_leaf_elements(Fn& fn, std::index_sequence<I...>, TX& tx, TYs&... tys) {
  (zip_leaf_element<I>(fn, tx, tys...), ...);
}
template <class Fn, class TX, class... TYs>
void zip_leaf_fields_of(Fn& fn, TX& tx, TYs... tys) {  // tys: std::tie tuples (cheap copies)
  zip_leaf_elements(fn, std::make_index_sequence<std::tuple_size_v<TX>>{}, tx, tys...);
}
}  // namespace detail

template <class Fn, class T, class... Ts>
void zip_leaves(Fn&& fn, T& x, Ts&... ys) {
  using U = std::remove_cvref_t<T>;
  if constexpr (detail::is_leaf_v<U>) {
    fn(x, ys...);
  } else if constexpr (HasFields<U>) {
    auto tx = x.fx_fields();
    detail::zip_leaf_fields_of(fn, tx, ys.fx_fields()...);
  } else if constexpr (detail::is_vector<U>::value || detail::is_std_array<U>::value) {
    (detail::check_same_size(x.size(), ys.size()), ...);
    for (size_t i = 0; i < x.size(); ++i) zip_leaves(fn, x[i], ys[i]...);
  } else if constexpr (detail::is_tuple_like<U>::value) {
    detail::zip_leaf_elements(fn, std::make_index_sequence<std::tuple_size_v<U>>{}, x, ys...);
  } else if constexpr (detail::is_optional<U>::value) {
    ((ys.has_value() == x.has_value() ? void()
                                      : detail::fail("fx::zip_leaves: optional values differ")),
     ...);
    if (x.has_value()) zip_leaves(fn, *x, *ys...);
  } else if constexpr (detail::is_map<U>::value) {
    (detail::check_same_size(x.size(), ys.size()), ...);
    for (auto& [k, v] : x) {
      ((ys.count(k) ? void() : detail::fail("fx::zip_leaves: a map key is missing")), ...);
      zip_leaves(fn, v, ys.find(k)->second...);
    }
  }
}

}  // namespace fx
