// GRUv3Cell: the gated recurrent unit of the paper's third version (Flux's GRUv3Cell), where the
// reset gate scales the state before its product rather than after:
//  n = tanh(x W_in^T + b_in + (r * h) W_hn^T + b_hn)
// and r, z and h' = (1 - z) * n + z * h as in fx::nn::GRUCell, with the same weight layout.
//
//   auto cell = fx::nn::GRUv3Cell(8, 16);              // weight_ih (48, 8), weight_hh (48, 16)
//   fx::Tensor x = fx::randn({4, 8});
//   auto [y, h] = cell(x);                             // (4, 16) each, from a zero state
//   auto [y2, h2] = cell(x, h);
//
// x is (N, in) or (in,), h (N, hidden) or (hidden,); other shapes raise fx::Error naming the cell
// and the shapes.
#pragma once
#include <cstdint>
#include <utility>

#include "fluxion/core/fields.hpp"
#include "fluxion/ops/create.hpp"

namespace fx::nn {

struct GRUv3Cell {
  Tensor weight_ih;  // (3 hidden, in), gates r, z, n
  Tensor weight_hh;  // (3 hidden, hidden)
  Tensor bias_ih;    // (3 hidden,), or undefined
  Tensor bias_hh;    // (3 hidden,), or undefined
  FX_FIELDS(weight_ih, weight_hh, bias_ih, bias_hh)

  GRUv3Cell() = default;  // an empty slot; not callable
  GRUv3Cell(int64_t in, int64_t hidden, bool bias = true, DType dtype = f32);
  GRUv3Cell(int64_t in, int64_t hidden, Generator& gen, bool bias = true, DType dtype = f32);

  std::pair<Tensor, Tensor> operator()(const Tensor& x, const Tensor& h) const;
  std::pair<Tensor, Tensor> operator()(const Tensor& x) const;  // from a zero state
  // The recurrence alone, given xw = x W_ih^T + b_ih.
  Tensor step(const Tensor& xw, const Tensor& h) const;

  int64_t input_size() const { return weight_ih.size(1); }
  int64_t hidden_size() const { return weight_hh.size(1); }
};

}  // namespace fx::nn
