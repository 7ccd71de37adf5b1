// RNNCell, LSTMCell, GRUCell and GRUv3Cell: the per-step recurrences, composed from public ops
// (fx::linear for the products, slices of the gate block, sigmoid and tanh), so reverse and
// forward mode at any order come from the ops' own rules.
#include "recurrent_cells.hpp"

#include "fluxion/nn/gru_cell.hpp"
#include "fluxion/nn/gru_v3_cell.hpp"
#include "fluxion/nn/lstm_cell.hpp"
#include "fluxion/nn/rnn_cell.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

namespace {
// Gate k of a (..., gates * hidden) block: a view, no copy.
Tensor gate(const Tensor& g, int64_t k, int64_t hidden) {
  return slice(g, -1, k * hidden, (k + 1) * hidden);
}
}  // namespace

// ---- RNNCell

RNNCell::RNNCell(int64_t in, int64_t hidden, Activation act, bool bias, DType dtype)
    : RNNCell(in, hidden, act, default_generator(), bias, dtype) {}
RNNCell::RNNCell(int64_t in, int64_t hidden, Activation act, Generator& gen, bool bias, DType dtype)
    : act(act) {
  FX_CHECK(act != nullptr, "fx::nn::RNNCell: null activation");
  detail::init_cell(*this, "fx::nn::RNNCell", in, hidden, 1, gen, bias, dtype);
}

Tensor RNNCell::step(const Tensor& xw, const Tensor& h) const {
  return act(xw + linear(h, weight_hh, bias_hh));
}

std::pair<Tensor, Tensor> RNNCell::operator()(const Tensor& x, const Tensor& h) const {
  Shape want = detail::check_cell_input(*this, "fx::nn::RNNCell", x);
  detail::check_state("fx::nn::RNNCell", "h", h, want, x);
  Tensor h1 = step(linear(x, weight_ih, bias_ih), h);
  return {h1, h1};
}
std::pair<Tensor, Tensor> RNNCell::operator()(const Tensor& x) const {
  Shape want = detail::check_cell_input(*this, "fx::nn::RNNCell", x);
  return (*this)(x, zeros(want, x.dtype(), x.device()));
}

// ---- LSTMCell

LSTMCell::LSTMCell(int64_t in, int64_t hidden, bool bias, DType dtype)
    : LSTMCell(in, hidden, default_generator(), bias, dtype) {}
LSTMCell::LSTMCell(int64_t in, int64_t hidden, Generator& gen, bool bias, DType dtype) {
  detail::init_cell(*this, "fx::nn::LSTMCell", in, hidden, 4, gen, bias, dtype);
}

LSTMState LSTMCell::step(const Tensor& xw, const LSTMState& s) const {
  const int64_t H = hidden_size();
  Tensor g = xw + linear(s.h, weight_hh, bias_hh);
  // The elementwise kernels vectorise dense tensors, not column slices: one sigmoid over the
  // whole gate block (the g quarter is not used) and a dense copy of g for its tanh cost less
  // than activating the strided quarters one by one.
  Tensor sg = sigmoid(g);
  Tensor c = gate(sg, 1, H) * s.c + gate(sg, 0, H) * tanh(contiguous(gate(g, 2, H)));
  return {gate(sg, 3, H) * tanh(c), c};
}

std::pair<Tensor, LSTMState> LSTMCell::operator()(const Tensor& x, const LSTMState& s) const {
  Shape want = detail::check_cell_input(*this, "fx::nn::LSTMCell", x);
  detail::check_state("fx::nn::LSTMCell", "h", s.h, want, x);
  detail::check_state("fx::nn::LSTMCell", "c", s.c, want, x);
  LSTMState s1 = step(linear(x, weight_ih, bias_ih), s);
  return {s1.h, s1};
}
std::pair<Tensor, LSTMState> LSTMCell::operator()(const Tensor& x) const {
  Shape want = detail::check_cell_input(*this, "fx::nn::LSTMCell", x);
  Tensor z = zeros(want, x.dtype(), x.device());
  return (*this)(x, {z, z});
}

// ---- GRUCell

GRUCell::GRUCell(int64_t in, int64_t hidden, bool bias, DType dtype)
    : GRUCell(in, hidden, default_generator(), bias, dtype) {}
GRUCell::GRUCell(int64_t in, int64_t hidden, Generator& gen, bool bias, DType dtype) {
  detail::init_cell(*this, "fx::nn::GRUCell", in, hidden, 3, gen, bias, dtype);
}

Tensor GRUCell::step(const Tensor& xw, const Tensor& h) const {
  const int64_t H = hidden_size();
  Tensor hw = linear(h, weight_hh, bias_hh);
  Tensor r = sigmoid(gate(xw, 0, H) + gate(hw, 0, H));
  Tensor z = sigmoid(gate(xw, 1, H) + gate(hw, 1, H));
  Tensor n = tanh(gate(xw, 2, H) + r * gate(hw, 2, H));
  return n + z * (h - n);  // (1 - z) n + z h
}

std::pair<Tensor, Tensor> GRUCell::operator()(const Tensor& x, const Tensor& h) const {
  Shape want = detail::check_cell_input(*this, "fx::nn::GRUCell", x);
  detail::check_state("fx::nn::GRUCell", "h", h, want, x);
  Tensor h1 = step(linear(x, weight_ih, bias_ih), h);
  return {h1, h1};
}
std::pair<Tensor, Tensor> GRUCell::operator()(const Tensor& x) const {
  Shape want = detail::check_cell_input(*this, "fx::nn::GRUCell", x);
  return (*this)(x, zeros(want, x.dtype(), x.device()));
}

// ---- GRUv3Cell

GRUv3Cell::GRUv3Cell(int64_t in, int64_t hidden, bool bias, DType dtype)
    : GRUv3Cell(in, hidden, default_generator(), bias, dtype) {}
GRUv3Cell::GRUv3Cell(int64_t in, int64_t hidden, Generator& gen, bool bias, DType dtype) {
  detail::init_cell(*this, "fx::nn::GRUv3Cell", in, hidden, 3, gen, bias, dtype);
}

Tensor GRUv3Cell::step(const Tensor& xw, const Tensor& h) const {
  const int64_t H = hidden_size();
  // r and z from the first two blocks of weight_hh; the candidate's product needs r first.
  Tensor b_rz = bias_hh.defined() ? slice(bias_hh, 0, 0, 2 * H) : Tensor();
  Tensor b_n = bias_hh.defined() ? slice(bias_hh, 0, 2 * H, 3 * H) : Tensor();
  Tensor hw = linear(h, slice(weight_hh, 0, 0, 2 * H), b_rz);
  Tensor r = sigmoid(gate(xw, 0, H) + gate(hw, 0, H));
  Tensor z = sigmoid(gate(xw, 1, H) + gate(hw, 1, H));
  Tensor n = tanh(gate(xw, 2, H) + linear(r * h, slice(weight_hh, 0, 2 * H, 3 * H), b_n));
  return n + z * (h - n);
}

std::pair<Tensor, Tensor> GRUv3Cell::operator()(const Tensor& x, const Tensor& h) const {
  Shape want = detail::check_cell_input(*this, "fx::nn::GRUv3Cell", x);
  detail::check_state("fx::nn::GRUv3Cell", "h", h, want, x);
  Tensor h1 = step(linear(x, weight_ih, bias_ih), h);
  return {h1, h1};
}
std::pair<Tensor, Tensor> GRUv3Cell::operator()(const Tensor& x) const {
  Shape want = detail::check_cell_input(*this, "fx::nn::GRUv3Cell", x);
  return (*this)(x, zeros(want, x.dtype(), x.device()));
}

}  // namespace fx::nn
