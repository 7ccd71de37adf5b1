// Parallel: applies several layers to the same input (or each to its own input) and joins their
// outputs with a connection (Flux's Parallel).
//
//   auto par = fx::nn::Parallel(
//       [](const fx::Tensor& a, const fx::Tensor& b) { return fx::concat({a, b}, 1); },
//       fx::nn::Dense(4, 2), fx::nn::Dense(4, 3));
//   fx::Tensor x = fx::randn({8, 4});
//   fx::Tensor y = par(x);                                 // (8, 5): both Dense on x, joined
//   fx::Tensor y2 = par(x, fx::randn({8, 4}));             // layer i on input i
//   auto& second = std::get<1>(par.layers);
//
// With one input every layer gets it; with as many inputs as layers, layer i gets input i
// (Flux's rule); any other count does not compile. The connection is called with the outputs in
// layer order; it is walked like the layers (so a connection with FX_FIELDS trains), and a lambda
// rides along holding nothing.
#pragma once
#include <cstddef>
#include <tuple>
#include <utility>

#include "fluxion/core/fields.hpp"

namespace fx::nn {

template <class Connection, class... Layers>
struct Parallel {
  Connection connection;
  std::tuple<Layers...> layers;
  FX_FIELDS(connection, layers)

  Parallel() = default;
  explicit Parallel(Connection c, Layers... ls)
      : connection(std::move(c)), layers(std::move(ls)...) {}

  static constexpr size_t size() { return sizeof...(Layers); }

  template <class X>
  auto operator()(const X& x) const {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return connection(std::get<I>(layers)(x)...);
    }
    (std::index_sequence_for<Layers...>{});
  }

  template <class... X>
    requires(sizeof...(X) == sizeof...(Layers) && sizeof...(X) > 1)
  auto operator()(const X&... x) const {
    return [&]<size_t... I>(std::index_sequence<I...>, const auto& xs) {
      return connection(std::get<I>(layers)(std::get<I>(xs))...);
    }
    (std::index_sequence_for<Layers...>{}, std::forward_as_tuple(x...));
  }
};

}  // namespace fx::nn
