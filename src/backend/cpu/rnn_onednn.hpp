// One layer (one or both directions) of a recurrence on oneDNN 2.6's RNN primitives, f32 on the
// CPU: the fast path of fx::nn::RNN, LSTM and GRU (src/nn/recurrent_layers.cpp), which wraps
// these two calls in one primitive with several outputs.
//
//   RnnLayer r{RnnCell::lstm, N, T, C, H, D};
//   RnnOutputs out;
//   Tensor ws;
//   if (rnn_forward(r, x, h0, c0, wx, wh, b, /*training=*/true, out, ws)) {
//     // out.y, out.h, out.c; later, given their cotangents dout (undefined parts are zeros):
//     RnnGrads g = rnn_backward(r, x, h0, c0, wx, wh, b, out, ws, dout);
//   }
//
// Tensors, all dense f32 on the CPU, batch first as the layers are:
//   x (N, T, C); h0 and c0 (D, N, H) (c0 for an LSTM only, else undefined);
//   wx (D, G*H, C) and wh (D, G*H, H): PyTorch's weight_ih / weight_hh stacked over directions,
//     but with the gate blocks in oneDNN's order (LSTM i, f, c~, o as PyTorch; GRU u, r, o,
//     that is PyTorch's z, r, n);
//   b (D, Gb*H): one bias per gate (the two PyTorch biases summed), and for the GRU a fourth
//     block, b_hn, which oneDNN's linear-before-reset GRU keeps inside the reset gate's product.
// The outputs: y (N, T, D*H), h_n (D, N, H) and (LSTM) c_n (D, N, H); the workspace is i32
// (opaque bytes, a residual no tape tracks).
#pragma once
#include <cstdint>

#include "fluxion/core/tensor.hpp"

namespace fx::backend::cpu {

// The cells oneDNN runs: Elman with tanh or relu, LSTM, and PyTorch's GRU (oneDNN's lbr_gru).
enum class RnnCell : int64_t { rnn_tanh, rnn_relu, lstm, gru };

struct RnnLayer {
  RnnCell cell;
  int64_t N, T, C, H, D;  // batch, steps, input features, hidden, directions (1 or 2)

  int64_t gates() const { return cell == RnnCell::lstm ? 4 : cell == RnnCell::gru ? 3 : 1; }
  int64_t bias_gates() const { return cell == RnnCell::gru ? 4 : gates(); }
  bool has_c() const { return cell == RnnCell::lstm; }
  int64_t y_size() const { return N * T * D * H; }
  int64_t state_size() const { return D * N * H; }
};

struct RnnOutputs {
  Tensor y, h, c;  // c undefined unless LSTM
};

// Whether oneDNN runs this configuration (for training: its forward and backward both), here and
// now: false inside an OpenMP parallel region (a primitive run there hung, as for convolutions).
// The tensors must then be dense f32 on the CPU for rnn_forward to accept them.
bool rnn_supported(const RnnLayer& r, bool training);

// Runs the forward into `out` (allocated here) and returns true; with
// `training`, also fills `workspace` (an opaque buffer the backward needs). Returns false, having
// written nothing, when oneDNN cannot run this configuration (or both passes of it, when
// training) or the call is inside an OpenMP parallel region; the caller then takes the
// composed path.
bool rnn_forward(const RnnLayer& r, const Tensor& x, const Tensor& h0, const Tensor& c0,
                 const Tensor& wx, const Tensor& wh, const Tensor& b, bool training,
                 RnnOutputs& out, Tensor& workspace);

struct RnnGrads {
  Tensor x, h0, c0, wx, wh, b;  // c0 undefined unless LSTM
};

// The cotangents of the forward's inputs given dout, the cotangents of its outputs (an undefined
// one is a zero). Reads the workspace without changing it (oneDNN's backward overwrites its own
// copy).
RnnGrads rnn_backward(const RnnLayer& r, const Tensor& x, const Tensor& h0, const Tensor& c0,
                      const Tensor& wx, const Tensor& wh, const Tensor& b, const RnnOutputs& out,
                      const Tensor& workspace, const RnnOutputs& dout);

}  // namespace fx::backend::cpu
