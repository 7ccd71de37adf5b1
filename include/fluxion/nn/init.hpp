// Weight initialisers with the fan conventions of PyTorch and Flux, for a weight laid out
// (out, in, kernel...): fan_in = in * prod(kernel), fan_out = out * prod(kernel).
//
//   fx::Generator gen(42);
//   auto w = fx::nn::glorot_uniform({256, 784}, gen);       // U(-a, a), a = sqrt(6 / (in + out))
//   auto k = fx::nn::kaiming_normal({64, 3, 3, 3}, gen);     // N(0, 2 / fan_in), for relu nets
//   auto d = fx::nn::glorot_normal({10, 256}, 1.0, fx::f64); // the thread's default generator
//
// `gain` scales the spread as in both libraries (kaiming's default sqrt(2) suits relu). A 1-d
// shape (n,) counts as fan_in 1, fan_out n, and a 0-d shape as 1 and 1, as in Flux.
#pragma once
#include <cstdint>
#include <numbers>

#include "fluxion/core/tensor.hpp"
#include "fluxion/ops/create.hpp"

namespace fx::nn {

struct Fans {
  int64_t in = 1;
  int64_t out = 1;
};
Fans fans(const Shape& shape);

// U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)).
Tensor glorot_uniform(const Shape& shape, Generator& gen, double gain = 1.0, DType dtype = f32);
Tensor glorot_uniform(const Shape& shape, double gain = 1.0, DType dtype = f32);
// N(0, s^2) with s = gain * sqrt(2 / (fan_in + fan_out)).
Tensor glorot_normal(const Shape& shape, Generator& gen, double gain = 1.0, DType dtype = f32);
Tensor glorot_normal(const Shape& shape, double gain = 1.0, DType dtype = f32);
// U(-a, a) with a = gain * sqrt(3 / fan_in).
Tensor kaiming_uniform(const Shape& shape, Generator& gen, double gain = std::numbers::sqrt2,
                       DType dtype = f32);
Tensor kaiming_uniform(const Shape& shape, double gain = std::numbers::sqrt2, DType dtype = f32);
// N(0, s^2) with s = gain / sqrt(fan_in).
Tensor kaiming_normal(const Shape& shape, Generator& gen, double gain = std::numbers::sqrt2,
                      DType dtype = f32);
Tensor kaiming_normal(const Shape& shape, double gain = std::numbers::sqrt2, DType dtype = f32);

}  // namespace fx::nn
