// Which structures fluxion can walk, leaf by leaf: fx::zip_leaves visits every leaf, not only
// tensors (numbers, complex numbers, strings and any other value a struct lists in FX_FIELDS),
// in lockstep across structures of the same shape. Gradients use it to give each leaf its
// derivative (or a zero) instead of a copy, and scalar AD to rebind a class template S<double>
// to S<fx::Real> and back.
//
//   struct Params { fx::Tensor w; double s; int steps; FX_FIELDS(w, s, steps) };
//   Params params{fx::ones({2}), 0.5, 10};
//   fx::zip_leaves([](auto& leaf) { /* fx::Tensor&, double&, int& */ }, params);
//   static_assert(fx::Traversable<Params>);           // Tensor, numbers, containers, FX_FIELDS
//   fx::require_traversable<Params, "fx::gradient">(); // a clear compile error otherwise
//
// zip_leaves itself is in fluxion/core/fields.hpp, the one lockstep traversal (zip_tensors is
// it with a Tensor-only filter): containers walk into their elements, std::vector, std::array,
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
// What walks as holding no parameters: functions, and lambdas used as layers (`Chain(
// [](const Tensor& x) { return x * x; }, Dense(...))`). A lambda is empty, or (capturing) not
// copy-assignable, unlike a user's struct that forgot FX_FIELDS.
template <class T>
constexpr bool is_function_layer = std::is_pointer_v<T> || std::is_function_v<T> ||
                                   std::is_empty_v<T> ||
                                   (std::is_class_v<T> && !std::is_aggregate_v<T> &&
                                    !std::is_copy_assignable_v<T>);

template <class T>
struct traversable;
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
    else if constexpr (is_tuple_like<T>::value) return all_traversable(static_cast<T*>(nullptr));
    else return is_function_layer<T>;
  }();
};
template <class A, class B>
struct traversable<std::pair<A, B>> {
  static constexpr bool value =
      traversable<std::remove_cvref_t<A>>::value && traversable<std::remove_cvref_t<B>>::value;
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

}  // namespace fx
