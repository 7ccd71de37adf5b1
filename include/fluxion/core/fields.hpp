// Structural traversal: a struct names its tensor fields once, and every walker (gradients,
// optimisers, fmap, save/load, printing) finds them the same way.
//
//   struct Affine {
//     fx::Tensor w, b;
//     double scale = 1;                 // not listed: a hyperparameter, never walked
//     FX_FIELDS(w, b)
//   };
//   Affine layer{fx::randn({3, 2}), fx::zeros({3})}, grad{fx::ones({3, 2}), fx::ones({3})};
//   fx::for_each_tensor(layer, [](fx::Tensor& t) { t = t * 2; });
//   fx::zip_tensors([](fx::Tensor& p, const fx::Tensor& g) { p = p - 0.1 * g; }, layer, grad);
//   fx::zip_leaves([](auto& leaf) { (void)leaf; }, layer);   // numbers and strings too
//
// Containers walk into their elements: std::vector, std::array, std::tuple, std::pair,
// std::optional and the values of std::map / std::unordered_map. Walking several objects in
// lockstep requires them to have the same structure; a mismatch throws fx::Error.
#pragma once
#include <array>
#include <complex>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fluxion/core/tensor.hpp"

#define FX_FIELDS(...)                                     \
  auto fx_fields() { return std::tie(__VA_ARGS__); }       \
  auto fx_fields() const { return std::tie(__VA_ARGS__); } \
  static constexpr std::string_view fx_field_names() { return #__VA_ARGS__; }

namespace fx {

template <class T>
concept HasFields = requires(T& t) {
  t.fx_fields();
};

namespace detail {
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_std_array : std::false_type {};
template <class T, size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};
template <class T>
struct is_tuple_like : std::false_type {};
template <class... T>
struct is_tuple_like<std::tuple<T...>> : std::true_type {};
template <class A, class B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_map : std::false_type {};
template <class K, class V, class C, class A>
struct is_map<std::map<K, V, C, A>> : std::true_type {};
template <class K, class V, class H, class E, class A>
struct is_map<std::unordered_map<K, V, H, E, A>> : std::true_type {};

// Splits "w, b" (the stringised FX_FIELDS list) into its I-th name.
constexpr std::string_view field_name(std::string_view names, size_t i) {
  size_t start = 0;
  for (size_t k = 0; k < i; ++k) start = names.find(',', start) + 1;
  while (start < names.size() && names[start] == ' ') ++start;
  size_t end = names.find(',', start);
  return names.substr(start, end == std::string_view::npos ? names.size() - start : end - start);
}
}  // namespace detail

// Number types of higher layers (fx::Real, fx::Dual) declare themselves leaves by specialising
// this beside their definition.
template <class T>
struct is_number_type : std::false_type {};

namespace detail {
template <class T>
struct is_complex_number : std::false_type {};
template <class T>
struct is_complex_number<std::complex<T>> : std::true_type {};

// A leaf: a value the walkers do not look inside.
template <class T>
constexpr bool is_leaf_v =
    std::is_same_v<T, Tensor> || std::is_arithmetic_v<T> || is_complex_number<T>::value ||
    std::is_same_v<T, std::string> || std::is_enum_v<T> || is_number_type<T>::value;
}  // namespace detail

// The one lockstep traversal: calls fn(x_leaf, y_leaf...) for each leaf of x (a tensor, number,
// complex number, string, enum or fx::is_number_type), with the leaves at the same place in ys.
// fluxion/core/leaves.hpp says which types it walks completely (fx::Traversable).
template <class Fn, class T, class... Ts>
void zip_leaves(Fn&& fn, T& x, Ts&... ys);

namespace detail {
// Element I of x and of each y (tuples, pairs, or the std::tie of FX_FIELDS), walked in lockstep.
// Plain function templates rather than nested generic lambdas: GCC 12 crashes on the latter.
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
inline void check_same_size(size_t a, size_t b) {
  if (a != b) fail("fx::zip_leaves: containers of sizes ", a, " and ", b, " differ");
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

// zip_leaves with only the tensor leaves of x passed on: fn(x_tensor, y_leaf...).
template <class Fn, class T, class... Ts>
void zip_tensors(Fn&& fn, T& x, Ts&... ys) {
  zip_leaves(
      [&fn](auto& leaf, auto&... others) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(leaf)>, Tensor>)
          fn(leaf, others...);
      },
      x, ys...);
}

template <class T, class Fn>
void for_each_tensor(T& x, Fn&& fn) {
  zip_tensors(fn, x);
}

// Calls fn(path, leaf) with a dotted path such as "layers.0.weight" for each tensor leaf.
template <class T, class Fn>
void for_each_named_tensor(T& x, Fn&& fn, const std::string& prefix = "");

namespace detail {
inline std::string join_path(const std::string& prefix, std::string_view part) {
  return prefix.empty() ? std::string(part) : prefix + "." + std::string(part);
}
template <class U, class Fn, class TX, size_t... I>
void named_fields(TX& tx, Fn& fn, const std::string& prefix, std::index_sequence<I...>) {
  (for_each_named_tensor(std::get<I>(tx), fn,
                         join_path(prefix, field_name(U::fx_field_names(), I))),
   ...);
}
template <class Fn, class TX, size_t... I>
void named_elements(TX& tx, Fn& fn, const std::string& prefix, std::index_sequence<I...>) {
  (for_each_named_tensor(std::get<I>(tx), fn, join_path(prefix, std::to_string(I))), ...);
}
}  // namespace detail

template <class T, class Fn>
void for_each_named_tensor(T& x, Fn&& fn, const std::string& prefix) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, Tensor>) {
    fn(prefix, x);
  } else if constexpr (HasFields<U>) {
    auto tx = x.fx_fields();
    detail::named_fields<U>(tx, fn, prefix,
                            std::make_index_sequence<std::tuple_size_v<decltype(tx)>>{});
  } else if constexpr (detail::is_vector<U>::value || detail::is_std_array<U>::value) {
    for (size_t i = 0; i < x.size(); ++i)
      for_each_named_tensor(x[i], fn, detail::join_path(prefix, std::to_string(i)));
  } else if constexpr (detail::is_tuple_like<U>::value) {
    detail::named_elements(x, fn, prefix, std::make_index_sequence<std::tuple_size_v<U>>{});
  } else if constexpr (detail::is_optional<U>::value) {
    if (x.has_value()) for_each_named_tensor(*x, fn, prefix);
  } else if constexpr (detail::is_map<U>::value) {
    for (auto& [k, v] : x) {
      std::string key;
      if constexpr (std::is_convertible_v<decltype(k), std::string>) key = k;
      else key = std::to_string(k);
      for_each_named_tensor(v, fn, detail::join_path(prefix, key));
    }
  }
}

}  // namespace fx

// ---- Non-trainable state: FX_STATE and the walkers that visit it
//
// A layer's non-trainable state (a running mean, a step counter) is named with FX_STATE beside
// FX_FIELDS. FX_FIELDS lists what gradients, optimisers and trainables walk; FX_STATE fields are
// invisible to them and visited only by the walkers that take everything (save/load, fx::to):
//
//   struct Norm {
//     fx::Tensor scale, shift;          // parameters
//     fx::Tensor running_mean, running_var;
//     FX_FIELDS(scale, shift)
//     FX_STATE(running_mean, running_var)
//   };
//   fx::for_each_named_leaf(norm, [](const std::string& path, fx::Tensor& t) { ... });
//   // "scale", "shift", "running_mean", "running_var"
//   fx::for_each_named_state(norm, [](const std::string& path, fx::Tensor& t) { ... });
//   // "running_mean", "running_var"
//
// Fields that are state, not parameters: walked by for_each_leaf and for_each_state_tensor (and
// their named forms), skipped by fx_fields() and so by gradients, optimisers and trainables.
#define FX_STATE(...)                                     \
  auto fx_state() { return std::tie(__VA_ARGS__); }       \
  auto fx_state() const { return std::tie(__VA_ARGS__); } \
  static constexpr std::string_view fx_state_names() { return #__VA_ARGS__; }

namespace fx {

template <class T>
concept HasState = requires(T& t) {
  t.fx_state();
};

namespace detail {
// Which leaves a full walk reports: every tensor, only those under some FX_STATE, or the
// integers under some FX_STATE (step counters).
enum class LeafSet { all, state, counters };

template <LeafSet Which, class T, class Fn>
void walk_leaves(T& x, Fn& fn, const std::string& prefix, bool in_state);

template <LeafSet Which, class Fn, class TX, size_t... I>
void walk_tuple(TX& tx, Fn& fn, const std::string& prefix, bool in_state, std::string_view names,
                std::index_sequence<I...>) {
  // names: a FX_FIELDS/FX_STATE list, or empty for a tuple's elements (named by index).
  (walk_leaves<Which>(std::get<I>(tx), fn,
                      names.empty() ? join_path(prefix, std::to_string(I))
                                    : join_path(prefix, field_name(names, I)),
                      in_state),
   ...);
}

// At each struct: its FX_FIELDS first, then its FX_STATE (everything below a state field is state).
template <LeafSet Which, class T, class Fn>
void walk_leaves(T& x, Fn& fn, const std::string& prefix, bool in_state) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, Tensor>) {
    if constexpr (Which != LeafSet::counters)
      if (Which == LeafSet::all || in_state) fn(prefix, x);
  } else if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool>) {
    if constexpr (Which == LeafSet::counters)
      if (in_state) fn(prefix, x);
  } else if constexpr (HasFields<U> || HasState<U>) {
    if constexpr (HasFields<U>) {
      auto tx = x.fx_fields();
      walk_tuple<Which>(tx, fn, prefix, in_state, U::fx_field_names(),
                        std::make_index_sequence<std::tuple_size_v<decltype(tx)>>{});
    }
    if constexpr (HasState<U>) {
      auto tx = x.fx_state();
      walk_tuple<Which>(tx, fn, prefix, true, U::fx_state_names(),
                        std::make_index_sequence<std::tuple_size_v<decltype(tx)>>{});
    }
  } else if constexpr (is_vector<U>::value || is_std_array<U>::value) {
    for (size_t i = 0; i < x.size(); ++i)
      walk_leaves<Which>(x[i], fn, join_path(prefix, std::to_string(i)), in_state);
  } else if constexpr (is_tuple_like<U>::value) {
    walk_tuple<Which>(x, fn, prefix, in_state, {},
                      std::make_index_sequence<std::tuple_size_v<U>>{});
  } else if constexpr (is_optional<U>::value) {
    if (x.has_value()) walk_leaves<Which>(*x, fn, prefix, in_state);
  } else if constexpr (is_map<U>::value) {
    for (auto& [k, v] : x) {
      std::string key;
      if constexpr (std::is_convertible_v<decltype(k), std::string>) key = k;
      else key = std::to_string(k);
      walk_leaves<Which>(v, fn, join_path(prefix, key), in_state);
    }
  }
}
}  // namespace detail

// Every tensor leaf, parameters and FX_STATE alike, with its dotted path: what save/load and
// device moves walk. At each struct its FX_FIELDS come first, then its FX_STATE.
template <class T, class Fn>
void for_each_named_leaf(T& x, Fn&& fn) {
  detail::walk_leaves<detail::LeafSet::all>(x, fn, "", false);
}
template <class T, class Fn>
void for_each_leaf(T& x, Fn&& fn) {
  auto unnamed = [&](const std::string&, auto& t) { fn(t); };
  detail::walk_leaves<detail::LeafSet::all>(x, unnamed, "", false);
}

// Only the leaves under some FX_STATE (at any depth), with their dotted paths.
template <class T, class Fn>
void for_each_named_state(T& x, Fn&& fn) {
  detail::walk_leaves<detail::LeafSet::state>(x, fn, "", false);
}
template <class T, class Fn>
void for_each_state_tensor(T& x, Fn&& fn) {
  auto unnamed = [&](const std::string&, auto& t) { fn(t); };
  detail::walk_leaves<detail::LeafSet::state>(x, unnamed, "", false);
}

// The integer fields under some FX_STATE (an optimiser's per-leaf step counter), with their
// dotted paths: fn(path, integer&). Checkpoints keep them beside the tensors.
template <class T, class Fn>
void for_each_named_counter(T& x, Fn&& fn) {
  detail::walk_leaves<detail::LeafSet::counters>(x, fn, "", false);
}

}  // namespace fx
