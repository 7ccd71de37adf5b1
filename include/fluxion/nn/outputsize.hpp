// The output shape of a model for an input shape, found on the meta device: no data is allocated
// and no kernel runs, only each op's shape rule.
//
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 128, fx::relu), fx::nn::Dense(128, 10));
//   fx::Shape out = fx::nn::outputsize(model, {32, 784});   // (32, 10)
#pragma once
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/device.hpp"

namespace fx::nn {

template <class M>
Shape outputsize(const M& model, const Shape& input, DType dtype = f32) {
  const M meta = to(model, Device::meta);
  return meta(empty(input, dtype, Device::meta)).shape();
}

}  // namespace fx::nn
