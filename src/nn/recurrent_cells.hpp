// What the recurrent cells and sequence layers share: PyTorch's initialisation and the checks of a
// cell's weights, input and state, so every layer reports bad shapes the same way.
#pragma once
#include <cmath>
#include <cstdint>

#include "fluxion/core/error.hpp"
#include "fluxion/ops/create.hpp"

namespace fx::nn::detail {

// U(-1/sqrt(hidden), 1/sqrt(hidden)) for every weight and bias, as torch::nn::RNN/LSTM/GRU do.
inline Tensor recurrent_uniform(const Shape& shape, int64_t hidden, Generator& gen, DType dtype) {
  const double k = hidden > 0 ? 1.0 / std::sqrt(double(hidden)) : 0.0;
  return uniform(shape, -k, k, gen, dtype);
}

// Weights for a cell with `gates` gates: (gates*hidden, in), (gates*hidden, hidden) and biases.
template <class Cell>
void init_cell(Cell& c, const char* name, int64_t in, int64_t hidden, int64_t gates, Generator& gen,
               bool bias, DType dtype) {
  FX_CHECK(in >= 0 && hidden > 0, name, ": sizes must be in >= 0 and hidden > 0 (in ", in,
           ", hidden ", hidden, ")");
  c.weight_ih = recurrent_uniform({gates * hidden, in}, hidden, gen, dtype);
  c.weight_hh = recurrent_uniform({gates * hidden, hidden}, hidden, gen, dtype);
  if (bias) {
    c.bias_ih = recurrent_uniform({gates * hidden}, hidden, gen, dtype);
    c.bias_hh = recurrent_uniform({gates * hidden}, hidden, gen, dtype);
  }
}

inline std::string shape_of(const Tensor& t) {
  return t.defined() ? t.shape().to_string() : std::string("undefined");
}

// x (N, in) or (in,) against the cell's weight_ih; returns the expected state shape.
template <class Cell>
Shape check_cell_input(const Cell& c, const char* name, const Tensor& x) {
  FX_CHECK(c.weight_ih.defined() && c.weight_hh.defined(), name,
           ": called without weights (default-constructed)");
  FX_CHECK(x.defined() && (x.ndim() == 1 || x.ndim() == 2) && x.size(-1) == c.input_size(), name,
           ": input ", shape_of(x), " must be (N, ", c.input_size(), ") or (", c.input_size(),
           ",) for weight_ih ", c.weight_ih.shape());
  return x.ndim() == 2 ? Shape{x.size(0), c.hidden_size()} : Shape{c.hidden_size()};
}

inline void check_state(const char* name, const char* what, const Tensor& s, const Shape& want,
                        const Tensor& x) {
  FX_CHECK(s.defined() && s.shape() == want, name, ": state ", what, " ", shape_of(s),
           " does not fit input ", x.shape(), " (expected ", want, ")");
}

}  // namespace fx::nn::detail
