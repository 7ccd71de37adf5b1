// SkipConnection: y = connection(layer(x), x), a residual block when the connection adds
// (Flux's SkipConnection).
//
//   auto res = fx::nn::SkipConnection(fx::nn::Dense(8, 8, fx::relu),
//                                     [](const fx::Tensor& fx_, const fx::Tensor& x) { return fx_ + x; });
//   fx::Tensor y = res(fx::randn({4, 8}));                 // relu(W x + b) + x
//   auto cat = fx::nn::SkipConnection(fx::nn::Dense(8, 2), fx::nn::concat_features);  // (4, 10)
//
// The layer and the connection are both walked (a connection with FX_FIELDS trains); a lambda
// rides along holding nothing. fx::nn::add_outputs and fx::nn::concat_features are the two
// usual connections (x + y, and concatenation along the last axis).
#pragma once
#include <utility>

#include "fluxion/core/fields.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

inline Tensor add_outputs(const Tensor& a, const Tensor& b) { return a + b; }
inline Tensor concat_features(const Tensor& a, const Tensor& b) { return concat({a, b}, -1); }

template <class Layer, class Connection>
struct SkipConnection {
  Layer layer;
  Connection connection;
  FX_FIELDS(layer, connection)

  SkipConnection() = default;
  SkipConnection(Layer l, Connection c) : layer(std::move(l)), connection(std::move(c)) {}

  template <class X>
  auto operator()(const X& x) const {
    return connection(layer(x), x);
  }
};

}  // namespace fx::nn
