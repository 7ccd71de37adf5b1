// Printing a model as Flux shows one: each layer on a line with its parameter count, nested
// layers indented, the total at the end; a parameter holding NaN or Inf is named on its line.
//
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 256, fx::relu), fx::nn::Dense(256, 10));
//   std::cout << model;                                   // the same text as fx::nn::summary
//   std::string text = fx::nn::summary(model);
//   std::cout << fx::nn::parameter_table(model);          // one row per tensor, by dotted path
//   fx::Shape out = fx::nn::outputsize(model, {32, 784}); // (32, 10), found on the meta device
//
// prints
//
//   Chain(
//     Dense(784 => 256, relu),  # 200960 parameters
//     Dense(256 => 10),         # 2570 parameters
//   )                           # Total: 4 arrays, 203530 parameters, 795.039 KiB
//
// A struct whose fields hold other layers (a Chain, or a user's struct with FX_FIELDS naming
// sub-layers) opens a nested block; any other struct is one line, headed by its `fx_describe()`
// if it has one ("Dense(784 => 256, relu)") or else by its type name and tensor shapes. FX_STATE
// tensors (and integer tensors) are counted apart, as "plus N non-trainable". A floating tensor
// holding NaN or Inf adds "(NaN in weight)" to its layer's line; tensors on the meta device are
// counted but not read. Plain functions and lambdas in a Chain are listed by name.
#pragma once
#include <algorithm>
#include <cstdint>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "fluxion/core/fields.hpp"
#include "fluxion/core/leaves.hpp"
#include "fluxion/nn/activations.hpp"
#include "fluxion/nn/functors.hpp"

namespace fx {

// The name of a known activation ("relu", "gelu", ...), or "" for any other function. A new
// activation gets its row in src/nn/show.cpp.
std::string_view activation_name(Activation f);

}  // namespace fx

namespace fx::nn {

namespace detail {

// One printed line: the code part, and a "# ..." comment aligned with the other lines' comments.
struct ShowLines {
  std::vector<std::pair<std::string, std::string>> rows;
  void add(std::string code, std::string comment = {}) {
    rows.emplace_back(std::move(code), std::move(comment));
  }
  std::string render() const;
};

// The tensors of one layer (or model): counts, sizes and NaN/Inf findings.
struct LeafStats {
  int64_t params = 0, param_arrays = 0;  // floating FX_FIELDS tensors
  int64_t state = 0, state_arrays = 0;   // FX_STATE tensors and integer/bool FX_FIELDS tensors
  int64_t bytes = 0;
  std::vector<std::string> flags;  // "NaN in weight"
  void add(const std::string& path, const Tensor& t, bool trainable);
  std::string layer_comment() const;  // "# 9 parameters, plus 6 non-trainable  (NaN in weight)"
  std::string total_comment() const;  // "# Total: 4 arrays, 26 parameters, 104 bytes"
};

// "Chain" for fx::nn::Chain<...>: the type's name without namespaces or template arguments.
std::string short_type_name(const std::type_info& type);
std::string shape_text(const Tensor& t);  // "(3, 4)", and " i64" (etc.) after it when not f32

template <class M>
LeafStats leaf_stats(const M& x) {
  std::set<std::string> trainable;
  for_each_named_tensor(x, [&](const std::string& path, const Tensor& t) {
    if (is_trainable(t)) trainable.insert(path);
  });
  LeafStats s;
  for_each_named_leaf(x, [&](const std::string& path, const Tensor& t) {
    if (t.defined()) s.add(path, t, trainable.count(path) > 0);
  });
  return s;
}

// Whether a value of type T holds something printed as a layer of its own: a struct with
// FX_FIELDS or FX_STATE, or a function (directly or inside a standard container).
template <class T>
constexpr bool holds_layer();
template <class Tuple, size_t... I>
constexpr bool any_holds_layer(std::index_sequence<I...>) {
  return (holds_layer<std::tuple_element_t<I, Tuple>>() || ...);
}
template <class T>
constexpr bool holds_layer() {
  using U = std::remove_cvref_t<T>;
  if constexpr (fx::detail::is_leaf_v<U>) return false;
  else if constexpr (HasFields<U> || HasState<U>) return true;
  else if constexpr (fx::detail::is_vector<U>::value || fx::detail::is_std_array<U>::value ||
                     fx::detail::is_optional<U>::value)
    return holds_layer<typename U::value_type>();
  else if constexpr (fx::detail::is_map<U>::value) return holds_layer<typename U::mapped_type>();
  else if constexpr (fx::detail::is_tuple_like<U>::value)
    return any_holds_layer<U>(std::make_index_sequence<std::tuple_size_v<U>>{});
  else return true;  // a function layer (what fx::Traversable accepts besides the above)
}

// A struct printed as a block of its sub-layers rather than as one line.
template <class U>
constexpr bool is_block() {
  bool block = false;
  if constexpr (HasFields<U>) {
    using Tie = decltype(std::declval<const U&>().fx_fields());
    block = block || any_holds_layer<Tie>(std::make_index_sequence<std::tuple_size_v<Tie>>{});
  }
  if constexpr (HasState<U>) {
    using Tie = decltype(std::declval<const U&>().fx_state());
    block = block || any_holds_layer<Tie>(std::make_index_sequence<std::tuple_size_v<Tie>>{});
  }
  return block;
}

template <class T>
std::string describe(const T& x) {
  if constexpr (requires {
                  { x.fx_describe() } -> std::convertible_to<std::string>;
                }) {
    return x.fx_describe();
  } else {
    std::string s = short_type_name(typeid(T)) + "(";
    bool first = true;
    for_each_named_leaf(x, [&](const std::string& path, const Tensor& t) {
      if (!t.defined()) return;
      s += (first ? "" : ", ") + path + "=" + shape_text(t);
      first = false;
    });
    return s + ")";
  }
}

inline std::string indent_of(int n) { return std::string(size_t(n), ' '); }

template <class T>
void show_value(ShowLines& out, const T& x, int indent, const std::string& path, bool in_state);

template <class Tie, size_t... I>
void show_fields(ShowLines& out, const Tie& tie, std::string_view names, int indent, bool in_state,
                 std::index_sequence<I...>) {
  (show_value(out, std::get<I>(tie), indent, std::string(fx::detail::field_name(names, I)),
              in_state),
   ...);
}
template <class Tuple, size_t... I>
void show_elements(ShowLines& out, const Tuple& t, int indent, const std::string& path,
                   bool in_state, std::index_sequence<I...>) {
  (show_value(out, std::get<I>(t), indent, fx::detail::join_path(path, std::to_string(I)),
              in_state),
   ...);
}

// A struct with FX_FIELDS or FX_STATE: a block of its sub-layers, or one line. The top level
// carries the model's total on its closing line instead of a trailing comma.
template <class U>
void show_layer(ShowLines& out, const U& x, int indent, bool top) {
  const std::string comma = top ? "" : ",";
  if constexpr (is_block<U>()) {
    out.add(indent_of(indent) + short_type_name(typeid(U)) + "(");
    if constexpr (HasFields<U>) {
      auto tie = x.fx_fields();
      show_fields(out, tie, U::fx_field_names(), indent + 2, false,
                  std::make_index_sequence<std::tuple_size_v<decltype(tie)>>{});
    }
    if constexpr (HasState<U>) {
      auto tie = x.fx_state();
      show_fields(out, tie, U::fx_state_names(), indent + 2, true,
                  std::make_index_sequence<std::tuple_size_v<decltype(tie)>>{});
    }
    out.add(indent_of(indent) + ")" + comma, top ? leaf_stats(x).total_comment() : "");
  } else {
    out.add(indent_of(indent) + describe(x) + comma, leaf_stats(x).layer_comment());
  }
}

// One member of a block: a sub-layer, a tensor the block holds itself (a line of its own, by
// name), a function layer, or a container of those. Numbers and strings are not shown.
template <class T>
void show_value(ShowLines& out, const T& x, int indent, const std::string& path, bool in_state) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, Tensor>) {
    if (!x.defined()) return;
    LeafStats s;
    s.add(path, x, !in_state && is_trainable(x));
    out.add(indent_of(indent) + path + " " + shape_text(x) + ",", s.layer_comment());
  } else if constexpr (fx::detail::is_leaf_v<U>) {
    return;
  } else if constexpr (HasFields<U> || HasState<U>) {
    show_layer(out, x, indent, false);
  } else if constexpr (fx::detail::is_vector<U>::value || fx::detail::is_std_array<U>::value) {
    for (size_t i = 0; i < x.size(); ++i)
      show_value(out, x[i], indent, fx::detail::join_path(path, std::to_string(i)), in_state);
  } else if constexpr (fx::detail::is_tuple_like<U>::value) {
    show_elements(out, x, indent, path, in_state, std::make_index_sequence<std::tuple_size_v<U>>{});
  } else if constexpr (fx::detail::is_optional<U>::value) {
    if (x.has_value()) show_value(out, *x, indent, path, in_state);
  } else if constexpr (fx::detail::is_map<U>::value) {
    for (const auto& [k, v] : x) {
      std::string key;
      if constexpr (std::is_convertible_v<decltype(k), std::string>) key = k;
      else key = std::to_string(k);
      show_value(out, v, indent, fx::detail::join_path(path, key), in_state);
    }
  } else if constexpr (std::is_convertible_v<const U&, Activation> && !std::is_class_v<U>) {
    std::string_view name = activation_name(x);
    out.add(indent_of(indent) + (name.empty() ? "<function>" : std::string(name)) + ",");
  } else if constexpr (std::is_pointer_v<U> || std::is_function_v<U>) {
    out.add(indent_of(indent) + "<function>,");
  } else {
    // A function object by its type's name; a lambda's is "{lambda(fx::Tensor const&)#1}".
    std::string name = short_type_name(typeid(U));
    if (name.empty() || name[0] == '{') name = "<lambda>";
    out.add(indent_of(indent) + name + ",");
  }
}

}  // namespace detail

// The model as text, one layer a line (see the top of this file). Any struct the traversal
// knows can be printed; a std::vector or std::tuple of layers is listed with the total after it.
template <class M>
std::string summary(const M& model) {
  require_traversable<M, "fx::nn::summary">();
  detail::ShowLines out;
  if constexpr (HasFields<M> || HasState<M>) {
    detail::show_layer(out, model, 0, true);
  } else {
    detail::show_value(out, model, 0, "", false);
    out.add("", detail::leaf_stats(model).total_comment());
  }
  return out.render();
}

// `std::cout << model` for any layer or Chain of fluxion's (found by argument-dependent lookup;
// a struct of one's own namespace prints through fx::nn::summary).
template <class M>
  requires(HasFields<M> || HasState<M>)
std::ostream& operator<<(std::ostream& os, const M& model) { return os << summary(model); }

// One row per defined tensor leaf, by dotted path (the names save/load and freeze use): shape,
// dtype, count, "state" for non-trainable ones and "NaN"/"Inf" for bad values; then the totals.
template <class M>
std::string parameter_table(const M& model) {
  require_traversable<M, "fx::nn::parameter_table">();
  std::set<std::string> trainable;
  for_each_named_tensor(model, [&](const std::string& path, const Tensor& t) {
    if (is_trainable(t)) trainable.insert(path);
  });
  struct Row {
    std::string path;
    const Tensor* t;
    bool is_param;
  };
  std::vector<Row> rows;
  size_t width = 0;
  for_each_named_leaf(model, [&](const std::string& path, const Tensor& t) {
    if (!t.defined()) return;
    rows.push_back({path.empty() ? std::string("(tensor)") : path, &t, trainable.count(path) > 0});
    width = std::max(width, rows.back().path.size());
  });
  detail::ShowLines out;
  detail::LeafStats total;
  for (const Row& r : rows) {
    detail::LeafStats row;
    row.add(r.path, *r.t, r.is_param);
    total.add(r.path, *r.t, r.is_param);
    std::string comment = std::to_string(r.t->numel()) + (r.is_param ? "" : " state");
    for (auto& f : row.flags) comment += "  " + f.substr(0, 3);  // "NaN" / "Inf"
    out.add(r.path + std::string(width - r.path.size() + 2, ' ') + detail::shape_text(*r.t),
            comment);
  }
  out.add("", total.total_comment().substr(2));  // "Total: ..." without the "# "
  return out.render();
}

}  // namespace fx::nn
