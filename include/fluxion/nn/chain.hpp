// Chain: layers applied in order, each one's output the next one's input.
//
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 256, fx::relu),
//                              fx::nn::Dense(256, 10));
//   fx::Tensor x = fx::randn({32, 784});
//   auto logits = model(x);                               // (N, 784) -> (N, 10)
//   auto& first = std::get<0>(model.layers);              // a layer, by position
//   auto mixed = fx::nn::Chain(fx::nn::Dense(4, 4), fx::Activation(fx::softmax),
//                              [](const fx::Tensor& h) { return h * 2.0; });
//
// A layer is anything callable; only members named in FX_FIELDS hold parameters, so plain
// functions and lambdas ride along without state. Nesting a Chain inside a Chain works; the
// parameter paths read like "layers.1.layers.0.weight". An overloaded function such as
// fx::softmax must be named through fx::Activation(...) to pick its one-argument form.
#pragma once
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "fluxion/core/fields.hpp"

namespace fx::nn {

template <class... Layers>
struct Chain {
  std::tuple<Layers...> layers;
  FX_FIELDS(layers)

  Chain() = default;
  explicit Chain(Layers... ls) : layers(std::move(ls)...) {}

  static constexpr size_t size() { return sizeof...(Layers); }

  template <class X>
  auto operator()(const X& x) const {
    return apply_from<0>(x);
  }

 private:
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
