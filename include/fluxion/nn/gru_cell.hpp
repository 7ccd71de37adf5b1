// GRUCell: one step of a gated recurrent unit, returning (y, h') with y = h' (Flux's GRUCell, in
// PyTorch's nn::GRUCell weight layout and gate order r, z, n):
//  r = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr),  z = sigmoid(x W_iz^T + b_iz + h W_hz^T + b_hz)
//  n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn)),  h' = (1 - z) * n + z * h
//
//   auto cell = fx::nn::GRUCell(8, 16);                // weight_ih (48, 8), weight_hh (48, 16)
//   fx::Tensor x = fx::randn({4, 8});
//   auto [y, h] = cell(x);                             // (4, 16) each, from a zero state
//   auto [y2, h2] = cell(x, h);
//
// The reset gate scales h's projection, after the product (the paper's v1, PyTorch's and cuDNN's
// form); fx::nn::GRUv3Cell applies it to h before the product. Weights start
// U(-1/sqrt(hidden), 1/sqrt(hidden)) as in PyTorch. x is (N, in) or (in,), h (N, hidden) or
// (hidden,); other shapes raise fx::Error naming the cell and the shapes.
#pragma once
#include <cstdint>
#include <utility>

#include "fluxion/core/fields.hpp"
#include "fluxion/ops/create.hpp"

namespace fx::nn {

struct GRUCell {
  Tensor weight_ih;  // (3 hidden, in), gates r, z, n
  Tensor weight_hh;  // (3 hidden, hidden)
  Tensor bias_ih;    // (3 hidden,), or undefined
  Tensor bias_hh;    // (3 hidden,), or undefined
  FX_FIELDS(weight_ih, weight_hh, bias_ih, bias_hh)

  GRUCell() = default;  // an empty slot; not callable
  GRUCell(int64_t in, int64_t hidden, bool bias = true, DType dtype = f32);
  GRUCell(int64_t in, int64_t hidden, Generator& gen, bool bias = true, DType dtype = f32);

  std::pair<Tensor, Tensor> operator()(const Tensor& x, const Tensor& h) const;
  std::pair<Tensor, Tensor> operator()(const Tensor& x) const;  // from a zero state
  // The recurrence alone, given xw = x W_ih^T + b_ih.
  Tensor step(const Tensor& xw, const Tensor& h) const;

  int64_t input_size() const { return weight_ih.size(1); }
  int64_t hidden_size() const { return weight_hh.size(1); }
};

}  // namespace fx::nn
