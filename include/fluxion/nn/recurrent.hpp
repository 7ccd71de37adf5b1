// The options the sequence layers fx::nn::RNN, fx::nn::LSTM and fx::nn::GRU share (PyTorch's
// constructor arguments plus what Flux users asked for in Flux issue #2514).
//
//   auto o = fx::nn::RecurrentOptions{.num_layers = 2, .bidirectional = true, .dropout = 0.1};
//   fx::Generator gen(3);
//   auto seeded = fx::nn::RecurrentOptions{.trainable_state = true, .gen = &gen};
//
// A sequence layer holds one cell per layer and direction; cell l * directions + d is PyTorch's
// weight_ih_l{l} (d = 0) or weight_ih_l{l}_reverse (d = 1), and so on for the other weights.
// Dropout with probability `dropout` applies to the output of every layer but the last while the
// layer trains (its fx::nn::Mode: inside fx::gradient, or forced by trainmode); the dropped elements are
// drawn from fx::default_generator(). With trainable_state, h0 (and c0 for an LSTM), of shape
// (layers * directions, hidden), are parameters that start at zero and stand in for an initial
// state the call does not give.
#pragma once
#include <cstdint>

#include "fluxion/nn/activations.hpp"
#include "fluxion/ops/create.hpp"

namespace fx::nn {

struct RecurrentOptions {
  int64_t num_layers = 1;
  bool bidirectional = false;
  double dropout = 0;  // between layers, in [0, 1)
  bool bias = true;
  bool trainable_state = false;
  Activation act = tanh;  // fx::nn::RNN only: tanh or relu in PyTorch, anything here
  DType dtype = f32;
  Generator* gen = nullptr;  // for the initial weights; null: fx::default_generator()
};

}  // namespace fx::nn
