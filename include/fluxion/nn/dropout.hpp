// Dropout: in training, zeroes each value with probability p and scales the rest by 1 / (1 - p)
// (inverted dropout, so test time is the identity); PyTorch's Dropout/Dropout2d, Flux's Dropout.
//
//   auto drop = fx::nn::Dropout(0.5);                   // elementwise
//   auto chan = fx::nn::Dropout(0.2, {0, 1});           // whole channels of (N, C, H, W)
//   fx::Generator gen(7);
//   auto seeded = fx::nn::Dropout(0.1, {}, &gen);       // draws from gen (outlives the layer)
//   fx::Tensor x = fx::randn({4, 8, 5, 5});
//   fx::Tensor y = drop(x);                             // outside a gradient: x unchanged
//   fx::nn::trainmode(drop);
//   fx::Tensor z = drop(x);                             // now dropped
//
// `dims` are the axes along which the mask varies (Flux's `dims`); the mask has size 1 on the
// others and broadcasts, so {0, 1} on (N, C, H, W) drops whole feature maps as Dropout2d does.
// Empty dims: every value independently. When it applies follows fx::nn::Mode (training inside
// a reverse-mode gradient by default). The mask is drawn from `gen`, or the thread's default
// generator when gen is null. p must lie in [0, 1] (fx::Error otherwise).
#pragma once
#include <cstdint>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/nn/mode.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"

namespace fx::nn {

namespace detail {
// The shape of a mask that varies along `dims` of x and broadcasts along the rest.
inline Shape mask_shape(const Tensor& x, const std::vector<int64_t>& dims, const char* layer) {
  if (dims.empty()) return x.shape();
  Shape s = x.shape();
  for (int i = 0; i < s.size(); ++i) s[i] = 1;
  for (int64_t d : dims) {
    FX_CHECK(d >= -x.ndim() && d < x.ndim(), "fx::nn::", layer, ": dims axis ", d,
             " is out of range for input ", x.shape());
    const int a = static_cast<int>(d < 0 ? d + x.ndim() : d);
    s[a] = x.shape()[a];
  }
  return s;
}
}  // namespace detail

struct Dropout {
  double p = 0.5;
  std::vector<int64_t> dims;  // axes the mask varies along; empty: all
  Generator* gen = nullptr;   // null: fx::default_generator()
  Mode mode = Mode::automatic;
  FX_FIELDS(mode)

  Dropout() = default;
  explicit Dropout(double p, std::vector<int64_t> dims = {}, Generator* gen = nullptr)
      : p(p), dims(std::move(dims)), gen(gen) {
    FX_CHECK(p >= 0 && p <= 1, "fx::nn::Dropout: probability ", p, " is not in [0, 1]");
  }

  Tensor operator()(const Tensor& x) const {
    if (!is_training(mode) || p == 0) return x;
    if (p == 1) return x * 0.0;  // keeps x's dependence (a zero derivative), not a constant
    Generator& g = gen ? *gen : default_generator();
    Tensor keep = rand(detail::mask_shape(x, dims, "Dropout"), g, x.dtype()) >= p;
    return x * (astype(keep, x.dtype()) * (1.0 / (1.0 - p)));
  }
};

}  // namespace fx::nn
