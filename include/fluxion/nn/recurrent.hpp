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
//
// Two paths compute the same function. The composed one steps the cell through time with
// fluxion ops, so it differentiates to any order and in forward mode. The fused one runs each
// layer (both directions at once) as one call of oneDNN's RNN primitive (vanilla RNN with tanh or
// relu, LSTM, linear-before-reset GRU, which is PyTorch's GRU), and is one node on a tape whose
// pullback is oneDNN's backward primitive. A layer takes the fused path when its `fused` flag is
// set (the default), everything is f32 on the CPU, no lengths are given, oneDNN accepts the
// sizes, the call is not under fx::vmap or fx::trace, and at most one reverse tape records:
// under fx::jvp, a gradient of a gradient (fx::hessian, nested fx::gradient) or any other
// nesting the composed path runs by itself, so second order needs nothing from the user.
// `layer.fused = false` forces the composed path everywhere (to compare the two, or for
// bit-for-bit agreement with the cells).
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
  bool fused = true;         // oneDNN's RNN primitives where they fit (see below)
};

}  // namespace fx::nn
