// The sequence layers RNN, LSTM and GRU, two ways:
// - composed: one loop, shared, that runs a cell's step through time for every layer and
//   direction, with masking of padded sequences and dropout between layers. Everything is
//   composed from public ops (fx::linear, slices, where, stack, concat), so the layers
//   differentiate to any order like the cells do.
// - fused: each layer (both directions) one call of oneDNN's RNN primitive, and on a tape one
//   node (a primitive with several outputs: y, h_n, c_n and the workspace, a residual) whose
//   pullback is oneDNN's backward primitive, reading the forward's workspace. Taken for f32 on the CPU without lengths, outside fx::vmap and
//   fx::trace, when at most one reverse tape records (the pullback is a kernel, not ops, so nothing could differentiate it again) and the
//   layer's `fused` flag is set; anything else runs composed.
#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#include "backend/cpu/rnn_onednn.hpp"
#include "fluxion/ad/tape.hpp"
#include "fluxion/nn/gru.hpp"
#include "fluxion/nn/lstm.hpp"
#include "fluxion/nn/rnn.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg.hpp"
#include "fluxion/ops/primitive.hpp"
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
  bool fused;  // the layer allows the oneDNN path
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

// ---- the fused (oneDNN) path

namespace be = fx::backend::cpu;

// The oneDNN cell that computes what `Cell::step` does, if there is one.
std::optional<be::RnnCell> onednn_cell(const RNNCell& c) {
  if (c.act == static_cast<Activation>(&fx::tanh)) return be::RnnCell::rnn_tanh;
  if (c.act == static_cast<Activation>(&fx::relu)) return be::RnnCell::rnn_relu;
  return std::nullopt;
}
std::optional<be::RnnCell> onednn_cell(const LSTMCell&) { return be::RnnCell::lstm; }
std::optional<be::RnnCell> onednn_cell(const GRUCell&) { return be::RnnCell::gru; }

bool is_cpu_f32(const Tensor& t) {
  return !t.defined() || (t.dtype() == f32 && t.device() == Device::cpu);
}

// Whether the whole stack runs fused; the kind of cell if so.
template <size_t K, class Cell>
std::optional<be::RnnCell> fused_kind(const std::vector<Cell>& cells, const Layout& L,
                                      const Tensor& x, const States<K>& init,
                                      const Tensor& lengths) {
  // Under fx::vmap or fx::trace the values hold no data a kernel could read: ops only.
  if (!L.fused || lengths.defined() || x.dtype() != f32 || x.device() != Device::cpu ||
      fx::detail::intercepted())
    return std::nullopt;
  const int tapes = ad::num_active_tapes();
  if (tapes > 1 || (tapes == 1 && ad::active_tape(0).forward)) return std::nullopt;
  for (const Tensor& s : init)
    if (!is_cpu_f32(s)) return std::nullopt;
  const std::optional<be::RnnCell> kind = onednn_cell(cells[0]);
  if (!kind) return std::nullopt;
  for (const Cell& c : cells) {
    if (onednn_cell(c) != kind) return std::nullopt;
    for (const Tensor* w : {&c.weight_ih, &c.weight_hh, &c.bias_ih, &c.bias_hh})
      if (!is_cpu_f32(*w)) return std::nullopt;
  }
  const int64_t H = cells[0].hidden_size();
  for (int64_t l = 0; l < L.layers; ++l) {
    const be::RnnLayer r{*kind, x.size(0), x.size(1), l == 0 ? x.size(2) : L.dirs * H, H, L.dirs};
    if (!be::rnn_supported(r, tapes > 0)) return std::nullopt;
  }
  return kind;
}

// Gate block k of a (gates * hidden, ...) weight or (gates * hidden,) bias.
Tensor rows(const Tensor& w, int64_t k, int64_t H) { return slice(w, 0, k * H, (k + 1) * H); }

// A cell's weights and bias as oneDNN orders them (rnn_onednn.hpp): PyTorch's GRU gates r, z, n
// become u = z, r, o = n, and the biases are summed except the GRU's b_hn, a fourth block.
template <class Cell>
std::array<Tensor, 3> onednn_weights(const Cell& c, be::RnnCell kind) {
  const int64_t H = c.hidden_size(), G = c.weight_hh.size(0) / H;
  const Tensor bih = c.bias_ih.defined() ? c.bias_ih : zeros({G * H});
  const Tensor bhh = c.bias_hh.defined() ? c.bias_hh : zeros({G * H});
  if (kind != be::RnnCell::gru) return {c.weight_ih, c.weight_hh, bih + bhh};
  auto zrn = [H](const Tensor& w) {
    return concat({rows(w, 1, H), rows(w, 0, H), rows(w, 2, H)}, 0);
  };
  return {zrn(c.weight_ih), zrn(c.weight_hh),
          concat({rows(bih, 1, H) + rows(bhh, 1, H), rows(bih, 0, H) + rows(bhh, 0, H),
                  rows(bih, 2, H), rows(bhh, 2, H)},
                 0)};
}

// The fused layer's attributes: the oneDNN layer and whether a tape records it (then the
// forward runs oneDNN's training pass and keeps the workspace).
struct FusedRnnAttrs {
  int64_t cell = 0, N = 0, T = 0, C = 0, H = 0, D = 0, training = 0;
  FX_ATTRS(FusedRnnAttrs, cell, N, T, C, H, D, training)
  be::RnnLayer layer() const { return {be::RnnCell(cell), N, T, C, H, D}; }
};

// Inputs (x, h0, c0, wx, wh, b), c0 undefined but for the LSTM. Outputs y, h_n, (LSTM) c_n and
// the workspace, an i32 residual the pullback reads: fused_lstm_p has four outputs,
// fused_rnn_p (Elman and GRU) three.
void fused_forward(const Primitive& p, std::span<const Tensor> in, Attrs attrs, Tensor* out) {
  const FusedRnnAttrs& a = attrs.get<FusedRnnAttrs>();
  const be::RnnLayer r = a.layer();
  be::RnnOutputs o;
  FX_CHECK(be::rnn_forward(r, in[0], in[1], in[2], in[3], in[4], in[5], a.training != 0, o,
                           out[p.num_outputs - 1]),
           "fx::nn::", p.name, ": oneDNN declined the input ", in[0].shape(), " it had accepted");
  if (!out[p.num_outputs - 1].defined()) out[p.num_outputs - 1] = empty({0}, i32);
  out[0] = o.y;
  out[1] = o.h;
  if (r.has_c()) out[2] = o.c;
}

// oneDNN's backward: a kernel, not ops, so it differentiates once (fused_kind keeps second order
// on the composed path).
void fused_pullback(const PullbackArgs& a, const Tensor* dy, Tensor* dx) {
  const be::RnnLayer r = a.attrs<FusedRnnAttrs>().layer();
  const int ws = a.primitive().num_outputs - 1;
  const Tensor c0 = r.has_c() ? a.input(2) : Tensor();
  const be::RnnOutputs out{a.output(0), a.output(1), r.has_c() ? a.output(2) : Tensor()};
  const be::RnnOutputs dout{dy[0], dy[1], r.has_c() ? dy[2] : Tensor()};
  be::RnnGrads g = be::rnn_backward(r, a.input(0), a.input(1), c0, a.input(3), a.input(4),
                                    a.input(5), out, a.output(ws), dout);
  dx[0] = g.x;
  dx[1] = g.h0;
  dx[2] = g.c0;
  dx[3] = g.wx;
  dx[4] = g.wh;
  dx[5] = g.b;
}

Primitive fused_lstm_p{.name = "lstm (oneDNN)",
                       .saves = saves::inputs | saves::output,
                       .num_outputs = 4,
                       .forward_n = fused_forward,
                       .pullback_n = fused_pullback};
Primitive fused_rnn_p{.name = "rnn (oneDNN)",
                      .saves = saves::inputs | saves::output,
                      .num_outputs = 3,
                      .forward_n = fused_forward,
                      .pullback_n = fused_pullback};

struct FusedOutputs {
  Tensor y, h, c;
};

// One fused layer: without a tape oneDNN's inference forward, on one the training forward, and
// one node whose pullback runs oneDNN's backward.
FusedOutputs fused_layer(const be::RnnLayer& r, const Tensor& x, const Tensor& h0, const Tensor& c0,
                         const Tensor& wx, const Tensor& wh, const Tensor& b) {
  const FusedRnnAttrs a{int64_t(r.cell), r.N, r.T, r.C, r.H, r.D, ad::num_active_tapes() > 0};
  if (r.has_c()) {
    auto [y, h, c, ws] = bind_n<4>(fused_lstm_p, {x, h0, c0, wx, wh, b}, a);
    return {y, h, c};
  }
  auto [y, h, ws] = bind_n<3>(fused_rnn_p, {x, h0, c0, wx, wh, b}, a);
  return {y, h, Tensor()};
}

// Runs the stack fused, layer by layer (oneDNN's own stacking needs equal input and output
// widths, which the first layer and bidirectional stacks do not have), with dropout between.
template <size_t K, class Cell>
std::pair<Tensor, States<K>> run_fused(const std::vector<Cell>& cells, const Layout& L,
                                       const Tensor& x, const States<K>& init, be::RnnCell kind) {
  const int64_t N = x.size(0), T = x.size(1), H = cells[0].hidden_size(), D = L.dirs;
  Tensor input = contiguous(x);
  std::array<std::vector<Tensor>, K> finals;
  for (int64_t l = 0; l < L.layers; ++l) {
    std::array<std::vector<Tensor>, 3> w;  // wx, wh, b of each direction
    for (int64_t d = 0; d < D; ++d) {
      auto cw = onednn_weights(cells[l * D + d], kind);
      for (int k = 0; k < 3; ++k) w[k].push_back(cw[k]);
    }
    std::array<Tensor, 3> stacked;
    for (int k = 0; k < 3; ++k)
      stacked[k] = D == 1 ? contiguous(unsqueeze(w[k][0], 0)) : stack(w[k], 0);
    States<K> s0;
    for (size_t k = 0; k < K; ++k) s0[k] = contiguous(slice(init[k], 0, l * D, (l + 1) * D));
    const be::RnnLayer r{kind, N, T, input.size(2), H, D};
    const FusedOutputs u = fused_layer(r, input, s0[0], K == 2 ? s0[K - 1] : Tensor(), stacked[0],
                                       stacked[1], stacked[2]);
    finals[0].push_back(u.h);
    if constexpr (K == 2) finals[1].push_back(u.c);
    input = u.y;
    if (l + 1 < L.layers && L.training && L.dropout > 0) input = dropout(input, L.dropout);
  }
  States<K> out;
  for (size_t k = 0; k < K; ++k) out[k] = L.layers == 1 ? finals[k][0] : concat(finals[k], 0);
  return {input, out};
}

// The composed loop, or the fused one where it applies.
template <size_t K, class Cell, class Step>
std::pair<Tensor, States<K>> run_layers(const std::vector<Cell>& cells, const Layout& L,
                                        const Tensor& x, const States<K>& init,
                                        const Tensor& lengths, Step step) {
  if (auto kind = fused_kind<K>(cells, L, x, init, lengths))
    return run_fused<K>(cells, L, x, init, *kind);
  return run<K>(cells, L, x, init, lengths, step);
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
      dropout(o.dropout),
      fused(o.fused) {
  FX_CHECK(o.act != nullptr, "fx::nn::RNN: null activation");
  cells = make_cells<RNNCell>("fx::nn::RNN", in, hidden, o, [&](int64_t n, Generator& g) {
    return RNNCell(n, hidden, o.act, g, o.bias, o.dtype);
  });
}

std::pair<Tensor, Tensor> RNN::operator()(const Tensor& x, const Tensor& h,
                                          const Tensor& lengths) const {
  const Layout L{"fx::nn::RNN", num_layers, directions(), dropout, is_training(mode), fused};
  check_call(*this, L, x, lengths);
  States<1> init{initial_state(L, "h", h, h0, x, hidden_size())};
  auto [y, s] = run_layers<1>(cells, L, x, init, lengths,
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
      dropout(o.dropout),
      fused(o.fused) {
  cells = make_cells<LSTMCell>("fx::nn::LSTM", in, hidden, o, [&](int64_t n, Generator& g) {
    return LSTMCell(n, hidden, g, o.bias, o.dtype);
  });
}

std::pair<Tensor, LSTMState> LSTM::operator()(const Tensor& x, const LSTMState& state,
                                              const Tensor& lengths) const {
  const Layout L{"fx::nn::LSTM", num_layers, directions(), dropout, is_training(mode), fused};
  check_call(*this, L, x, lengths);
  States<2> init{initial_state(L, "h", state.h, h0, x, hidden_size()),
                 initial_state(L, "c", state.c, c0, x, hidden_size())};
  auto [y, s] = run_layers<2>(cells, L, x, init, lengths,
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
      dropout(o.dropout),
      fused(o.fused) {
  cells = make_cells<GRUCell>("fx::nn::GRU", in, hidden, o, [&](int64_t n, Generator& g) {
    return GRUCell(n, hidden, g, o.bias, o.dtype);
  });
}

std::pair<Tensor, Tensor> GRU::operator()(const Tensor& x, const Tensor& h,
                                          const Tensor& lengths) const {
  const Layout L{"fx::nn::GRU", num_layers, directions(), dropout, is_training(mode), fused};
  check_call(*this, L, x, lengths);
  States<1> init{initial_state(L, "h", h, h0, x, hidden_size())};
  auto [y, s] = run_layers<1>(cells, L, x, init, lengths,
                              [](const GRUCell& c, const Tensor& xw, const States<1>& s) {
                                return States<1>{c.step(xw, s[0])};
                              });
  return {y, s[0]};
}

}  // namespace fx::nn
