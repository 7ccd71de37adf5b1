// AlphaDropout: dropout for self-normalising (selu) networks: dropped values are set to selu's
// negative saturation and an affine map restores mean 0 and variance 1 (Klambauer et al. 2017;
// PyTorch's AlphaDropout, Flux's AlphaDropout).
//
//   auto model = fx::nn::Chain(fx::nn::Dense(16, 16), fx::nn::AlphaDropout(0.1));  // after selu
//   fx::Tensor x = fx::randn({32, 16});
//   auto g = fx::gradient([&](const auto& m) { return fx::sum(m(x)); }, model);  // applied here
//
// In training: y = a (keep ? x : alpha') + b with alpha' = -selu_scale * selu_alpha, q = 1 - p,
// a = 1 / sqrt(q (1 + p alpha'^2)), b = -a alpha' p, so inputs of mean 0 and variance 1 keep
// them. At test time the identity. Mode, generator and the range of p as fx::nn::Dropout.
#pragma once
#include <cmath>

#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/nn/mode.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"

namespace fx::nn {

struct AlphaDropout {
  double p = 0.5;
  Generator* gen = nullptr;  // null: fx::default_generator()
  Mode mode = Mode::automatic;
  FX_FIELDS(mode)

  // selu's constants (fx::selu): -scale * alpha, the value selu tends to as x -> -inf.
  static constexpr double kAlphaPrime =
      -1.0507009873554804934193349852946 * 1.6732632423543772848170429916717;

  AlphaDropout() = default;
  explicit AlphaDropout(double p, Generator* gen = nullptr) : p(p), gen(gen) {
    FX_CHECK(p >= 0 && p <= 1, "fx::nn::AlphaDropout: probability ", p, " is not in [0, 1]");
  }

  Tensor operator()(const Tensor& x) const {
    if (!is_training(mode) || p == 0) return x;
    const double q = 1 - p;
    if (q == 0) return x * 0.0;  // everything dropped: a = b = 0 in the limit
    const double a = 1 / std::sqrt(q * (1 + p * kAlphaPrime * kAlphaPrime));
    const double b = -a * kAlphaPrime * p;
    Generator& g = gen ? *gen : default_generator();
    Tensor keep = rand(x.shape(), g, x.dtype()) >= p;
    return where(keep, x, kAlphaPrime) * a + b;
  }
};

}  // namespace fx::nn
