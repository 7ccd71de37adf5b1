// GRU: gated recurrent units over a batch-first sequence (N, T, features): fx::nn::GRUCell stepped
// through time, as torch::nn::GRU with batch_first. Several layers, bidirectional, dropout between
// layers, a trainable initial state and padded sequences as for fx::nn::LSTM.
//
//   auto layer = fx::nn::GRU(8, 16);                       // one layer, one direction
//   fx::Tensor x = fx::randn({4, 10, 8});                 // (N, T, features)
//   auto [y, h] = layer(x);                               // y (4, 10, 16), h (1, 4, 16)
//   auto deep = fx::nn::GRU(8, 16, {.num_layers = 2, .bidirectional = true});
//   auto [y2, h2] = deep(x, fx::zeros({4, 4, 16}));       // y2 (4, 10, 32), h2 (4, 4, 16)
//   fx::Tensor lengths = fx::from_vector<int64_t>({10, 7, 3, 1});
//   auto [y3, h3] = layer(x, {}, lengths);                // padded sequences
//
// The state h is (layers * directions, N, hidden), layer-major with the forward direction first,
// as in PyTorch; an undefined one starts at h0 if the layer has a trainable state, else at zero.
// The output concatenates the directions along the last axis. With lengths (N,), integers in
// [0, T], sequence n runs over its first lengths[n] steps only: its outputs past that are zero and
// its final state is the one at its length (the reverse direction starts at its last real step),
// as with PyTorch's packed sequences. Bad shapes raise fx::Error naming the layer and the shapes.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "fluxion/core/fields.hpp"
#include "fluxion/nn/gru_cell.hpp"
#include "fluxion/nn/mode.hpp"
#include "fluxion/nn/recurrent.hpp"

namespace fx::nn {

struct GRU {
  std::vector<GRUCell> cells;  // cell l * directions + d: layer l, direction d (1 = reverse)
  Tensor h0;  // (layers * directions, hidden) trainable initial state, or undefined
  int64_t num_layers = 1;
  bool bidirectional = false;
  double dropout = 0;
  Mode mode = Mode::automatic;  // dropout between layers only in training (fluxion/nn/mode.hpp)
  bool fused = true;            // oneDNN's RNN primitives where they fit (fluxion/nn/recurrent.hpp)
  FX_FIELDS(cells, h0, mode)

  GRU() = default;  // an empty slot; not callable
  GRU(int64_t in, int64_t hidden, const RecurrentOptions& o = {});

  // (output (N, T, directions * hidden), final h (layers * directions, N, hidden))
  std::pair<Tensor, Tensor> operator()(const Tensor& x, const Tensor& h = {},
                                       const Tensor& lengths = {}) const;

  int64_t directions() const { return bidirectional ? 2 : 1; }
  int64_t input_size() const { return cells.at(0).input_size(); }
  int64_t hidden_size() const { return cells.at(0).hidden_size(); }
};

}  // namespace fx::nn
