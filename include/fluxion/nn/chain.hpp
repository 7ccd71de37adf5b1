// Chain: layers applied in order, each one's output the next one's input.
//
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 256, fx::relu),
//                              fx::nn::Dense(256, 10));
//   fx::Tensor x = fx::randn({32, 784});
//   auto logits = model(x);                               // (N, 784) -> (N, 10)
//   auto& first = std::get<0>(model.layers);              // a layer, by position
//   auto mixed = fx::nn::Chain(fx::nn::Dense(4, 4), fx::Activation(fx::softmax),
//                              [](const fx::Tensor& h) { return h * 2.0; });
//   auto named = fx::nn::Chain(fx::nn::named<"enc">(fx::nn::Dense(8, 4, fx::relu)),
//                              fx::nn::named<"dec">(fx::nn::Dense(4, 8)));
//   fx::nn::Dense& enc = named.get<"enc">();              // a layer, by name
//   fx::nn::Dense& dec = named.get<1>();                  // or by position (the named layer)
//   auto encoder = named.slice<0, 1>();                   // a Chain of layers [0, 1), copied
//
// A layer is anything callable; only members named in FX_FIELDS hold parameters, so plain
// functions and lambdas ride along without state. Nesting a Chain inside a Chain works; the
// parameter paths read like "layers.1.layers.0.weight". An overloaded function such as
// fx::softmax must be named through fx::Activation(...) to pick its one-argument form.
// fx::nn::named<"name">(layer) wraps a layer with a compile-time name (Flux's Chain(enc = ...)):
// it calls through, get<"name">() finds it, and its parameter paths read "layers.0.layer.weight".
// get<I>() and get<"name">() return the inner layer; slice<B, E>() copies a sub-Chain (sharing
// the tensors' storage, as any copy of a layer does).
#pragma once
#include <algorithm>
#include <cstddef>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "fluxion/core/fields.hpp"

namespace fx::nn {

// A string literal as a template argument: the name of a Chain entry.
template <size_t N>
struct LayerName {
  constexpr LayerName(const char (&s)[N]) { std::copy_n(s, N, text); }  // NOLINT: implicit
  constexpr std::string_view view() const { return {text, N - 1}; }
  char text[N];
};

// A layer with a name, as a Chain entry. Calls through to the layer.
template <LayerName Name, class L>
struct Named {
  L layer;
  FX_FIELDS(layer)
  static constexpr std::string_view name() { return Name.view(); }

  template <class... X>
  auto operator()(const X&... x) const {
    return layer(x...);
  }
};

template <LayerName Name, class L>
Named<Name, L> named(L layer) {
  return Named<Name, L>{std::move(layer)};
}

namespace detail {
template <class T>
struct named_info {
  static constexpr bool is_named = false;
  static constexpr std::string_view name() { return {}; }
};
template <LayerName Name, class L>
struct named_info<Named<Name, L>> {
  static constexpr bool is_named = true;
  static constexpr std::string_view name() { return Name.view(); }
};
template <class T>
decltype(auto) unwrap_named(T& x) {
  if constexpr (named_info<std::remove_cvref_t<T>>::is_named) return (x.layer);
  else return (x);
}
}  // namespace detail

template <class... Layers>
struct Chain {
  std::tuple<Layers...> layers;
  FX_FIELDS(layers)

  Chain() = default;
  explicit Chain(Layers... ls) requires(sizeof...(Layers) > 0) : layers(std::move(ls)...) {}

  static constexpr size_t size() { return sizeof...(Layers); }

  template <class X>
  auto operator()(const X& x) const {
    return apply_from<0>(x);
  }

  // The layer at position I (the inner layer of a named entry).
  template <size_t I>
  decltype(auto) get() {
    static_assert(I < sizeof...(Layers), "fx::nn::Chain::get<I>: I is past the last layer");
    return detail::unwrap_named(std::get<I>(layers));
  }
  template <size_t I>
  decltype(auto) get() const {
    static_assert(I < sizeof...(Layers), "fx::nn::Chain::get<I>: I is past the last layer");
    return detail::unwrap_named(std::get<I>(layers));
  }
  // The layer named Name (fx::nn::named<Name>); a name no entry has does not compile.
  template <LayerName Name>
  decltype(auto) get() {
    return get<index_of<Name>()>();
  }
  template <LayerName Name>
  decltype(auto) get() const {
    return get<index_of<Name>()>();
  }
  template <LayerName Name>
  static constexpr size_t index_of() {
    constexpr size_t i = find_name(Name.view());
    static_assert(i < sizeof...(Layers), "fx::nn::Chain::get<Name>: no layer has that name");
    return i;
  }

  // A Chain of layers [B, E), copied.
  template <size_t B, size_t E>
  auto slice() const {
    static_assert(B <= E && E <= sizeof...(Layers),
                  "fx::nn::Chain::slice<B, E>: need B <= E <= size()");
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return Chain<std::tuple_element_t<B + I, std::tuple<Layers...>>...>(
          std::get<B + I>(layers)...);
    }
    (std::make_index_sequence<E - B>{});
  }

 private:
  static constexpr size_t find_name(std::string_view name) {
    const std::string_view names[] = {detail::named_info<Layers>::name()..., {}};
    for (size_t k = 0; k < sizeof...(Layers); ++k)
      if (!name.empty() && names[k] == name) return k;
    return sizeof...(Layers);
  }

  template <size_t I, class X>
  auto apply_from(const X& x) const {
    if constexpr (I == sizeof...(Layers)) {
      return x;
    } else {
      using L = std::tuple_element_t<I, std::tuple<Layers...>>;
      static_assert(std::is_invocable_v<const L&, const X&> || !std::is_invocable_v<L&, const X&>,
                    "fx::nn::Chain: a layer's operator() must be const (a layer is applied, and "
                    "differentiated, without being changed: keep state in FX_FIELDS tensors)");
      return apply_from<I + 1>(std::get<I>(layers)(x));
    }
  }
};

}  // namespace fx::nn
