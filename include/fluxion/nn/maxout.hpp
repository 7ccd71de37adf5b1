// Maxout: the elementwise maximum of several layers' outputs on the same input (Goodfellow et
// al. 2013; Flux's Maxout).
//
//   auto mo = fx::nn::Maxout<fx::nn::Dense>(3, [] { return fx::nn::Dense(8, 4); });  // 3 pieces
//   fx::Tensor y = mo(fx::randn({16, 8}));              // (16, 4): max of the three Dense outputs
//   auto mo2 = fx::nn::Maxout<fx::nn::Dense>({fx::nn::Dense(8, 4), fx::nn::Dense(8, 4, fx::tanh)});
//
// The pieces are one layer type held in a std::vector (walked, trained, saved as "layers.0...");
// at least one is needed, and their outputs must have one shape (an fx::Error names the layer
// and the shapes otherwise). The derivative flows to the piece that attains the maximum.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/ops/elementwise.hpp"

namespace fx::nn {

template <class L>
struct Maxout {
  std::vector<L> layers;
  FX_FIELDS(layers)

  Maxout() = default;
  explicit Maxout(std::vector<L> pieces) : layers(std::move(pieces)) {
    FX_CHECK(!layers.empty(), "fx::nn::Maxout: needs at least one layer");
  }
  template <class Make>
  Maxout(size_t n, Make&& make) {
    FX_CHECK(n > 0, "fx::nn::Maxout: needs at least one layer");
    for (size_t i = 0; i < n; ++i) layers.push_back(make());
  }

  Tensor operator()(const Tensor& x) const {
    Tensor y = layers.at(0)(x);
    for (size_t i = 1; i < layers.size(); ++i) {
      Tensor yi = layers[i](x);
      FX_CHECK(yi.shape() == y.shape(), "fx::nn::Maxout: piece ", i, " gives ", yi.shape(),
               " where piece 0 gives ", y.shape());
      y = maximum(y, yi);
    }
    return y;
  }
};

}  // namespace fx::nn
