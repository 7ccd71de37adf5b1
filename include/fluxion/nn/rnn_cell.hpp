// RNNCell: one step of the Elman recurrence h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh), returning
// (y, state) with y = h' (Flux's RNNCell, in PyTorch's nn::RNNCell weight layout).
//
//   auto cell = fx::nn::RNNCell(8, 16);                 // weight_ih (16, 8), weight_hh (16, 16)
//   fx::Tensor x = fx::randn({4, 8}), h = fx::zeros({4, 16});
//   auto [y, h1] = cell(x, h);                          // (4, 16) each; y is h1
//   auto [y0, h0] = cell(x);                            // the state starts at zero
//   auto relu_cell = fx::nn::RNNCell(8, 16, fx::relu);  // PyTorch's nonlinearity="relu"
//
// Weights start U(-1/sqrt(hidden), 1/sqrt(hidden)) as in PyTorch, so libtorch weights can be copied
// field by field. x is (N, in) or a single sample (in,), the state (N, hidden) or (hidden,); other
// shapes raise fx::Error naming the cell and the shapes. Composed from public ops, so every
// derivative order comes with it.
#pragma once
#include <cstdint>
#include <utility>

#include "fluxion/core/fields.hpp"
#include "fluxion/nn/activations.hpp"
#include "fluxion/ops/create.hpp"

namespace fx::nn {

struct RNNCell {
  Tensor weight_ih;  // (hidden, in)
  Tensor weight_hh;  // (hidden, hidden)
  Tensor bias_ih;    // (hidden,), or undefined
  Tensor bias_hh;    // (hidden,), or undefined
  Activation act = tanh;
  FX_FIELDS(weight_ih, weight_hh, bias_ih, bias_hh)

  RNNCell() = default;  // an empty slot (a gradient, a model to load into); not callable
  RNNCell(int64_t in, int64_t hidden, Activation act = tanh, bool bias = true, DType dtype = f32);
  RNNCell(int64_t in, int64_t hidden, Activation act, Generator& gen, bool bias = true,
          DType dtype = f32);

  std::pair<Tensor, Tensor> operator()(const Tensor& x, const Tensor& h) const;  // (y, h')
  std::pair<Tensor, Tensor> operator()(const Tensor& x) const;  // from a zero state
  // The recurrence alone, given xw = x W_ih^T + b_ih (sequence layers project every step at once).
  Tensor step(const Tensor& xw, const Tensor& h) const;

  int64_t input_size() const { return weight_ih.size(1); }
  int64_t hidden_size() const { return weight_hh.size(1); }
};

}  // namespace fx::nn
