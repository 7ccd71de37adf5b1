// LSTMCell: one step of a long short-term memory, returning (y, {h', c'}) with y = h' (Flux's
// LSTMCell, in PyTorch's nn::LSTMCell weight layout and gate order i, f, g, o):
//  gates = x W_ih^T + b_ih + h W_hh^T + b_hh,  split in four along the last axis
//  c' = sigmoid(f) * c + sigmoid(i) * tanh(g),  h' = sigmoid(o) * tanh(c')
//
//   auto cell = fx::nn::LSTMCell(8, 16);               // weight_ih (64, 8), weight_hh (64, 16)
//   fx::Tensor x = fx::randn({4, 8});
//   auto [y, state] = cell(x);                         // state.h, state.c: (4, 16); y is state.h
//   auto [y2, state2] = cell(x, state);                // the next step
//   auto [y3, s3] = cell(x, {fx::zeros({4, 16}), fx::ones({4, 16})});   // an explicit state
//
// Weights start U(-1/sqrt(hidden), 1/sqrt(hidden)) as in PyTorch. x is (N, in) or (in,); h and c
// are (N, hidden) or (hidden,); other shapes raise fx::Error naming the cell and the shapes.
#pragma once
#include <cstdint>
#include <utility>

#include "fluxion/core/fields.hpp"
#include "fluxion/ops/create.hpp"

namespace fx::nn {

// The state of an LSTM: hidden and cell. For a sequence layer each is (layers * directions, N,
// hidden); undefined tensors mean "start from the default" (zeros or the trainable state).
struct LSTMState {
  Tensor h;
  Tensor c;
  FX_FIELDS(h, c)
};

struct LSTMCell {
  Tensor weight_ih;  // (4 hidden, in), gates i, f, g, o
  Tensor weight_hh;  // (4 hidden, hidden)
  Tensor bias_ih;    // (4 hidden,), or undefined
  Tensor bias_hh;    // (4 hidden,), or undefined
  FX_FIELDS(weight_ih, weight_hh, bias_ih, bias_hh)

  LSTMCell() = default;  // an empty slot; not callable
  LSTMCell(int64_t in, int64_t hidden, bool bias = true, DType dtype = f32);
  LSTMCell(int64_t in, int64_t hidden, Generator& gen, bool bias = true, DType dtype = f32);

  std::pair<Tensor, LSTMState> operator()(const Tensor& x, const LSTMState& state) const;
  std::pair<Tensor, LSTMState> operator()(const Tensor& x) const;  // from a zero state
  // The recurrence alone, given xw = x W_ih^T + b_ih.
  LSTMState step(const Tensor& xw, const LSTMState& state) const;

  int64_t input_size() const { return weight_ih.size(1); }
  int64_t hidden_size() const { return weight_hh.size(1); }
};

}  // namespace fx::nn
