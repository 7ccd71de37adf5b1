// Dense: the fully connected layer y = act(x @ weight^T + bias), batch-first as in PyTorch.
//
//   auto d = fx::nn::Dense(784, 256, fx::relu);          // weight (256, 784), bias (256,)
//   fx::Tensor x = fx::randn({32, 784});
//   auto y = d(x);                                       // (N, 784) -> (N, 256)
//   fx::Generator gen(7);
//   auto r = fx::nn::Dense(3, 2, fx::identity, gen);     // reproducible initial weights
//   auto nb = fx::nn::Dense(3, 2, fx::tanh, /*bias=*/false);
//   fx::Tensor w = fx::randn({2, 3}), b = fx::zeros({2});
//   auto fixed = fx::nn::Dense(w, b, fx::sigmoid);       // from given tensors
//
// The weight starts glorot_uniform (Flux's default), the bias at zero. Without a bias the field
// stays an undefined Tensor, which every walker skips. Leading dimensions of x are batch
// dimensions: (N, T, in) -> (N, T, out) and a single sample (in,) -> (out,) work too.
#pragma once
#include <cstdint>
#include <string>

#include "fluxion/core/fields.hpp"
#include "fluxion/nn/activations.hpp"
#include "fluxion/ops/create.hpp"

namespace fx::nn {

struct Dense {
  Tensor weight;  // (out, in)
  Tensor bias;    // (out,), or undefined
  Activation act = identity;
  FX_FIELDS(weight, bias)

  Dense() = default;  // an empty slot (e.g. for a gradient or a loaded model); not callable
  Dense(int64_t in, int64_t out, Activation act = identity, bool bias = true);
  Dense(int64_t in, int64_t out, Activation act, Generator& gen, bool bias = true);
  explicit Dense(Tensor weight, Tensor bias = {}, Activation act = identity);

  Tensor operator()(const Tensor& x) const;
  int64_t in_features() const { return weight.size(1); }
  int64_t out_features() const { return weight.size(0); }
  std::string fx_describe() const;  // "Dense(784 => 256, relu)": its line in fx::nn::summary
};

}  // namespace fx::nn
