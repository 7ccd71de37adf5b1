// The sequence layers RNN, LSTM and GRU: one loop, shared, that runs a cell's step through time
// for every layer and direction, with masking of padded sequences and dropout between layers.
// Everything is composed from public ops (fx::linear, slices, where, stack, concat), so the
// layers differentiate to any order like the cells do.
#include <array>
#include <string>
#include <type_traits>

#include "fluxion/nn/gru.hpp"
#include "fluxion/nn/lstm.hpp"
#include "fluxion/nn/rnn.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg.hpp"
#include "fluxion/ops/view.hpp"
#include "recurrent_cells.hpp"

namespace fx::nn {

namespace {

template <size_t K>
using States = std::array<Tensor, K>;

struct Layout {
  const char* name;
  int64_t layers, dirs;
  double dropout;
  bool training;
};

// Builds the layers * directions cells of a sequence layer; `make(in, gen)` makes one.
template <class Cell, class Make>
std::vector<Cell> make_cells(const char* name, int64_t in, int64_t hidden,
                             const RecurrentOptions& o, Make make) {
  FX_CHECK(o.num_layers >= 1, name, ": num_layers must be >= 1, got ", o.num_layers);
  FX_CHECK(o.dropout >= 0 && o.dropout < 1, name, ": dropout must be in [0, 1), got ", o.dropout);
  FX_CHECK(in >= 0 && hidden > 0, name, ": sizes must be in >= 0 and hidden > 0 (in ", in,
           ", hidden ", hidden, ")");
  Generator& gen = o.gen ? *o.gen : default_generator();
  const int64_t dirs = o.bidirectional ? 2 : 1;
  std::vector<Cell> cells;
  for (int64_t l = 0; l < o.num_layers; ++l)
    for (int64_t d = 0; d < dirs; ++d) cells.push_back(make(l == 0 ? in : dirs * hidden, gen));
  return cells;
}

// Inverted dropout: each element kept with probability 1 - p and scaled by 1 / (1 - p).
Tensor dropout(const Tensor& x, double p) {
  Tensor keep = lt(rand(x.shape(), default_generator(), x.dtype()), scalar(1 - p, x.dtype()));
  return where(keep, x * (1 / (1 - p)), 0.0);
}

// The initial state k: the given one (checked), else the trainable one, else zeros.
Tensor initial_state(const Layout& L, const char* what, const Tensor& given, const Tensor& learned,
                     const Tensor& x, int64_t hidden) {
  const Shape want{L.layers * L.dirs, x.size(0), hidden};
  if (given.defined()) {
    FX_CHECK(given.shape() == want, L.name, ": initial state ", what, " ", given.shape(),
             " does not fit input ", x.shape(), " (expected ", want, ": layers * directions, N, ",
             "hidden)");
    return given;
  }
  if (learned.defined()) return expand(unsqueeze(learned, 1), want);
  return zeros(want, x.dtype(), x.device());
}

// The bias of the input projection and the cell that steps. Where the two biases only ever add
// (RNN, LSTM) they are summed once for the whole sequence, so the steps' products carry none; a
// GRU's b_hn sits inside the reset gate's product and stays there.
template <class Cell>
std::pair<Tensor, Cell> fold_bias(const Cell& c) {
  if constexpr (std::is_same_v<Cell, GRUCell>) {
    return {c.bias_ih, c};
  } else {
    Cell stepper = c;
    stepper.bias_hh = Tensor();
    if (!c.bias_hh.defined()) return {c.bias_ih, stepper};
    return {c.bias_ih.defined() ? c.bias_ih + c.bias_hh : c.bias_hh, stepper};
  }
}

// Runs the stack. step(cell, xw_t, states) -> states; states[0] is the output h.
template <size_t K, class Cell, class Step>
std::pair<Tensor, States<K>> run(const std::vector<Cell>& cells, const Layout& L, const Tensor& x,
                                 const States<K>& init, const Tensor& lengths, Step step) {
  const int64_t N = x.size(0), T = x.size(1);
  // masks[t] (N, 1): sequence n is still running at step t.
  std::vector<Tensor> masks;
  if (lengths.defined()) {
    Tensor len = reshape(lengths.astype(i64), {N, 1});
    for (int64_t t = 0; t < T; ++t) masks.push_back(gt(len, scalar(double(t), i64)));
  }
  // Time-major inside, (T, N, features): each step then reads and writes dense (N, .) blocks,
  // and the only transposes are of the input and of the final output.
  Tensor input = contiguous(transpose(x, 0, 1));
  std::array<std::vector<Tensor>, K> finals;
  for (int64_t l = 0; l < L.layers; ++l) {
    std::vector<Tensor> outs_by_dir;
    for (int64_t d = 0; d < L.dirs; ++d) {
      // Every step's input projection in one product: (T, N, gates * hidden).
      auto [bias, cell] = fold_bias(cells[l * L.dirs + d]);
      Tensor xw = linear(input, cell.weight_ih, bias);
      States<K> s;
      for (size_t k = 0; k < K; ++k) s[k] = select(init[k], 0, l * L.dirs + d);
      std::vector<Tensor> outs(T);
      for (int64_t i = 0; i < T; ++i) {
        const int64_t t = d == 0 ? i : T - 1 - i;
        States<K> s1 = step(cell, select(xw, 0, t), s);
        if (masks.empty()) {
          outs[t] = s1[0];
        } else {
          // A finished sequence keeps its state and outputs zeros; in reverse, a padded step
          // leaves the initial state untouched until the sequence's last real step.
          for (size_t k = 0; k < K; ++k) s1[k] = where(masks[t], s1[k], s[k]);
          outs[t] = where(masks[t], s1[0], 0.0);
        }
        s = s1;
      }
      outs_by_dir.push_back(stack(outs, 0));
      for (size_t k = 0; k < K; ++k) finals[k].push_back(s[k]);
    }
    input = L.dirs == 1 ? outs_by_dir[0] : concat(outs_by_dir, -1);
    if (l + 1 < L.layers && L.training && L.dropout > 0) input = dropout(input, L.dropout);
  }
  States<K> out;
  for (size_t k = 0; k < K; ++k) out[k] = stack(finals[k], 0);
  return {contiguous(transpose(input, 0, 1)), out};
}

template <class Layer>
void check_call(const Layer& m, const Layout& L, const Tensor& x, const Tensor& lengths) {
  FX_CHECK(!m.cells.empty(), L.name, ": called without cells (default-constructed)");
  FX_CHECK(x.defined() && x.ndim() == 3 && x.size(2) == m.input_size() && x.size(1) >= 1, L.name,
           ": input ", detail::shape_of(x), " must be (N, T, ", m.input_size(),
           ") with T >= 1 (batch first)");
  FX_CHECK(int64_t(m.cells.size()) == L.layers * L.dirs, L.name, ": has ", m.cells.size(),
           " cells for ", L.layers, " layers and ", L.dirs, " directions");
  if (lengths.defined()) {
    FX_CHECK(lengths.shape() == Shape{x.size(0)} && !is_floating(lengths.dtype()) &&
                 !is_complex(lengths.dtype()),
             L.name, ": lengths ", lengths.shape(), " ", dtype_name(lengths.dtype()),
             " must be integers of shape (", x.size(0), ",) for input ", x.shape());
    for (int64_t n : to_vector<int64_t>(lengths))
      FX_CHECK(n >= 0 && n <= x.size(1), L.name, ": length ", n, " outside [0, ", x.size(1),
               "] for input ", x.shape());
  }
}

Tensor zero_state(const RecurrentOptions& o, int64_t hidden) {
  return o.trainable_state ? zeros({o.num_layers * (o.bidirectional ? 2 : 1), hidden}, o.dtype)
                           : Tensor();
}

}  // namespace

// ---- RNN

RNN::RNN(int64_t in, int64_t hidden, const RecurrentOptions& o)
    : h0(zero_state(o, hidden)),
      num_layers(o.num_layers),
      bidirectional(o.bidirectional),
      dropout(o.dropout) {
  FX_CHECK(o.act != nullptr, "fx::nn::RNN: null activation");
  cells = make_cells<RNNCell>("fx::nn::RNN", in, hidden, o, [&](int64_t n, Generator& g) {
    return RNNCell(n, hidden, o.act, g, o.bias, o.dtype);
  });
}

std::pair<Tensor, Tensor> RNN::operator()(const Tensor& x, const Tensor& h,
                                          const Tensor& lengths) const {
  const Layout L{"fx::nn::RNN", num_layers, directions(), dropout, is_training(mode)};
  check_call(*this, L, x, lengths);
  States<1> init{initial_state(L, "h", h, h0, x, hidden_size())};
  auto [y, s] = run<1>(cells, L, x, init, lengths,
                       [](const RNNCell& c, const Tensor& xw, const States<1>& s) {
                         return States<1>{c.step(xw, s[0])};
                       });
  return {y, s[0]};
}

// ---- LSTM

LSTM::LSTM(int64_t in, int64_t hidden, const RecurrentOptions& o)
    : h0(zero_state(o, hidden)),
      c0(zero_state(o, hidden)),
      num_layers(o.num_layers),
      bidirectional(o.bidirectional),
      dropout(o.dropout) {
  cells = make_cells<LSTMCell>("fx::nn::LSTM", in, hidden, o, [&](int64_t n, Generator& g) {
    return LSTMCell(n, hidden, g, o.bias, o.dtype);
  });
}

std::pair<Tensor, LSTMState> LSTM::operator()(const Tensor& x, const LSTMState& state,
                                              const Tensor& lengths) const {
  const Layout L{"fx::nn::LSTM", num_layers, directions(), dropout, is_training(mode)};
  check_call(*this, L, x, lengths);
  States<2> init{initial_state(L, "h", state.h, h0, x, hidden_size()),
                 initial_state(L, "c", state.c, c0, x, hidden_size())};
  auto [y, s] = run<2>(cells, L, x, init, lengths,
                       [](const LSTMCell& c, const Tensor& xw, const States<2>& s) {
                         LSTMState s1 = c.step(xw, {s[0], s[1]});
                         return States<2>{s1.h, s1.c};
                       });
  return {y, LSTMState{s[0], s[1]}};
}

// ---- GRU

GRU::GRU(int64_t in, int64_t hidden, const RecurrentOptions& o)
    : h0(zero_state(o, hidden)),
      num_layers(o.num_layers),
      bidirectional(o.bidirectional),
      dropout(o.dropout) {
  cells = make_cells<GRUCell>("fx::nn::GRU", in, hidden, o, [&](int64_t n, Generator& g) {
    return GRUCell(n, hidden, g, o.bias, o.dtype);
  });
}

std::pair<Tensor, Tensor> GRU::operator()(const Tensor& x, const Tensor& h,
                                          const Tensor& lengths) const {
  const Layout L{"fx::nn::GRU", num_layers, directions(), dropout, is_training(mode)};
  check_call(*this, L, x, lengths);
  States<1> init{initial_state(L, "h", h, h0, x, hidden_size())};
  auto [y, s] = run<1>(cells, L, x, init, lengths,
                       [](const GRUCell& c, const Tensor& xw, const States<1>& s) {
                         return States<1>{c.step(xw, s[0])};
                       });
  return {y, s[0]};
}

}  // namespace fx::nn
