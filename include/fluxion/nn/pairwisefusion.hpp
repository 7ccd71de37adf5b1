// PairwiseFusion: a chain whose every step also sees an input of its own (Flux's
// PairwiseFusion): y1 = layer1(x1), y_i = layer_i(connection(y_{i-1}, x_i)); returns every y_i.
//
//   auto pf = fx::nn::PairwiseFusion(fx::nn::add_outputs, fx::nn::Dense(4, 4), fx::nn::Dense(4, 4));
//   fx::Tensor x1 = fx::randn({2, 4}), x2 = fx::randn({2, 4});
//   auto [y1, y2] = pf(x1, x2);        // y1 = D1(x1), y2 = D2(y1 + x2)
//   auto [z1, z2] = pf(x1);            // one input: x_i = x1 for every i
//
// Takes one input (used for every step) or as many as layers; returns a std::tuple of the
// layers' outputs in order. The connection and the layers are walked (trained) as in Parallel.
#pragma once
#include <cstddef>
#include <tuple>
#include <utility>

#include "fluxion/core/fields.hpp"
#include "fluxion/nn/skipconnection.hpp"

namespace fx::nn {

template <class Connection, class... Layers>
struct PairwiseFusion {
  Connection connection;
  std::tuple<Layers...> layers;
  FX_FIELDS(connection, layers)

  PairwiseFusion() = default;
  explicit PairwiseFusion(Connection c, Layers... ls)
      : connection(std::move(c)), layers(std::move(ls)...) {}

  static constexpr size_t size() { return sizeof...(Layers); }

  template <class X>
  auto operator()(const X& x) const {
    return fuse<0>(std::tuple<>{}, [&x](auto) -> const X& { return x; });
  }

  template <class... X>
    requires(sizeof...(X) == sizeof...(Layers) && sizeof...(X) > 1)
  auto operator()(const X&... x) const {
    auto xs = std::forward_as_tuple(x...);
    return fuse<0>(std::tuple<>{},
                   [&xs](auto i) -> decltype(auto) { return std::get<decltype(i)::value>(xs); });
  }

 private:
  // Step I given the outputs so far; input(std::integral_constant<size_t, I>) is x_I.
  template <size_t I, class Done, class In>
  auto fuse(Done done, const In& input) const {
    if constexpr (I == sizeof...(Layers)) {
      return done;
    } else {
      const auto& x = input(std::integral_constant<size_t, I>{});
      if constexpr (I == 0) {
        return fuse<1>(std::tuple(std::get<0>(layers)(x)), input);
      } else {
        auto y = std::get<I>(layers)(connection(std::get<I - 1>(done), x));
        return fuse<I + 1>(std::tuple_cat(std::move(done), std::tuple(std::move(y))), input);
      }
    }
  }
};

}  // namespace fx::nn
