// Scale: an elementwise affine layer y = act(x * scale + bias) over the last axis (Flux's Scale,
// PyTorch's LayerNorm without the normalisation). docs/adding-a-layer.md builds it step by step.
//
//   auto s = fx::nn::Scale(4, fx::tanh);              // scale (4,) = 1, bias (4,) = 0
//   fx::Tensor x = fx::randn({32, 4});
//   fx::Tensor y = s(x);                              // (32, 4): tanh(x * scale + bias)
//   auto model = fx::nn::Chain(fx::nn::Dense(8, 4), fx::nn::Scale(4));
//   auto g = fx::gradient([&](const auto& m) { return fx::sum(m(fx::randn({2, 8}))); }, model);
//
// Leading axes of x are batch axes; its last axis must have the layer's size (an fx::Error names
// the layer and both shapes otherwise). Without a bias the field stays an undefined Tensor,
// which every walker (gradients, optimisers, save/load) skips.
#pragma once
#include <cstdint>
#include <string>

#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/nn/activations.hpp"
#include "fluxion/nn/show.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"

namespace fx::nn {

struct Scale {
  Tensor scale;  // (n,)
  Tensor bias;   // (n,), or undefined
  Activation act = identity;
  FX_FIELDS(scale, bias)  // the trainable tensors; act is a hyperparameter, never walked

  Scale() = default;  // an empty slot (a gradient, a model to load into); not callable
  explicit Scale(int64_t n, Activation act = identity, bool bias = true, DType dtype = f32)
      : scale(ones({n}, dtype)), bias(bias ? zeros({n}, dtype) : Tensor()), act(act) {}

  // Composed from public ops, so reverse and forward mode, higher orders and every backend
  // come with them: a layer needs no derivative of its own.
  Tensor operator()(const Tensor& x) const {
    FX_CHECK(x.defined() && x.ndim() >= 1 && x.shape()[x.ndim() - 1] == scale.shape()[0],
             "fx::nn::Scale: input ", x.defined() ? x.shape().to_string() : "undefined",
             " does not end in the layer's size ", scale.shape());
    Tensor y = x * scale;  // broadcasts over the leading (batch) axes
    if (bias.defined()) y = y + bias;
    return act(y);
  }

  // "Scale(4, tanh)", as Flux writes it: its line in fx::nn::summary.
  std::string fx_describe() const {
    if (!scale.defined()) return "Scale()";
    std::string s = "Scale(" + std::to_string(scale.size(0));
    if (act != static_cast<Activation>(identity)) {
      std::string_view name = activation_name(act);
      s += ", " + (name.empty() ? std::string("<function>") : std::string(name));
    }
    return s + (bias.defined() ? ")" : "; bias=false)");
  }
};

}  // namespace fx::nn
