// The fused (oneDNN) path of RNN, LSTM and GRU against the composed one (the cells stepped with
// fluxion ops, itself checked by finite differences and against libtorch): outputs, final states
// and the gradients of a random linear functional of them with respect to every weight, the
// input and the initial state, in f32. That the fused path really ran is read from the tape: it
// records one node per layer where the composed path records several per step.
#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/ad/tape.hpp>
#include <fluxion/ad/vmap.hpp>
#include <fluxion/nn/gru.hpp>
#include <fluxion/nn/lstm.hpp>
#include <fluxion/nn/rnn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

using fx::Tensor;
using States = std::vector<Tensor>;

constexpr double kRtol = 1e-4, kAtol = 2e-5;  // f32, a few steps of rounding apart

// Every output as a list: y, then the final state(s).
States outputs(const fx::nn::LSTM& m, const Tensor& x, const States& s) {
  auto [y, st] = s.empty() ? m(x) : m(x, {s[0], s[1]});
  return {y, st.h, st.c};
}
template <class Layer>
States outputs(const Layer& m, const Tensor& x, const States& s) {
  auto [y, h] = s.empty() ? m(x) : m(x, s[0]);
  return {y, h};
}

uint64_t nodes_of(const std::function<void()>& f) {
  fx::ad::reset_tape_stats();
  f();
  return fx::ad::tape_stats().nodes_recorded;
}

template <class Layer>
void expect_paths_agree(const Layer& fused, const Tensor& x, const States& s0) {
  ASSERT_TRUE(fused.fused);
  Layer composed = fused;
  composed.fused = false;
  const States yf = outputs(fused, x, s0), yc = outputs(composed, x, s0);
  ASSERT_EQ(yf.size(), yc.size());
  States us;
  for (size_t k = 0; k < yf.size(); ++k) {
    ASSERT_EQ(yf[k].shape(), yc[k].shape()) << "output " << k;
    EXPECT_TRUE(fx::allclose(yf[k], yc[k], kRtol, kAtol)) << "output " << k;
    us.push_back(fx::testing::randn(yf[k].shape(), {.seed = 100 + k, .dtype = fx::f32}));
  }
  auto loss = [&](const Layer& m, const Tensor& x, const States& s) {
    States ys = outputs(m, x, s);
    Tensor acc = fx::sum(ys[0] * us[0]);
    for (size_t k = 1; k < ys.size(); ++k) acc = acc + fx::sum(ys[k] * us[k]);
    return acc;
  };
  std::tuple<Layer, Tensor, States> gf, gc;
  const uint64_t nf = nodes_of([&] { gf = fx::gradient(loss, fused, x, s0); });
  const uint64_t nc = nodes_of([&] { gc = fx::gradient(loss, composed, x, s0); });
  EXPECT_LT(nf * 2, nc) << "the fused path did not run: " << nf << " nodes, composed " << nc;
  auto& [mf, xf, sf] = gf;
  auto& [mc, xc, sc] = gc;
  int leaf = 0;
  fx::zip_tensors(
      [&](Tensor& a, Tensor& b) {
        if (a.defined() || b.defined()) {
          EXPECT_TRUE(fx::allclose(a, b, kRtol, kAtol)) << "weight gradient " << leaf;
        }
        ++leaf;
      },
      mf, mc);
  EXPECT_TRUE(fx::allclose(xf, xc, kRtol, kAtol)) << "input gradient";
  ASSERT_EQ(sf.size(), sc.size());
  for (size_t k = 0; k < sf.size(); ++k)
    EXPECT_TRUE(fx::allclose(sf[k], sc[k], kRtol, kAtol)) << "initial state gradient " << k;
}

struct Config {
  int64_t layers;
  bool bidirectional, initial_state, bias;
};
const Config kConfigs[] = {
    {1, false, false, true}, {1, false, true, true}, {2, false, true, true},
    {1, true, true, true},   {2, true, true, true},  {2, true, false, false},
};

template <class Layer>
void check_configs(int64_t states, fx::Activation act = fx::tanh) {
  const int64_t N = 3, T = 7, F = 4, H = 6;
  uint64_t seed = 1;
  for (const Config& c : kConfigs) {
    SCOPED_TRACE(::testing::Message()
                 << "layers " << c.layers << " bidirectional " << c.bidirectional
                 << " initial state " << c.initial_state << " bias " << c.bias);
    fx::Generator gen(seed++);
    Layer m(F, H,
            {.num_layers = c.layers,
             .bidirectional = c.bidirectional,
             .bias = c.bias,
             .act = act,
             .gen = &gen});
    const int64_t D = c.bidirectional ? 2 : 1;
    Tensor x = fx::testing::randn({N, T, F}, {.seed = seed++, .dtype = fx::f32});
    States s0;
    if (c.initial_state)
      for (int64_t k = 0; k < states; ++k)
        s0.push_back(fx::testing::randn({c.layers * D, N, H}, {.seed = seed++, .dtype = fx::f32}));
    expect_paths_agree(m, x, s0);
  }
}

}  // namespace

TEST(RecurrentFused, LSTMMatchesTheComposedPath) { check_configs<fx::nn::LSTM>(2); }
TEST(RecurrentFused, GRUMatchesTheComposedPath) { check_configs<fx::nn::GRU>(1); }
TEST(RecurrentFused, TanhRNNMatchesTheComposedPath) { check_configs<fx::nn::RNN>(1); }
TEST(RecurrentFused, ReluRNNMatchesTheComposedPath) { check_configs<fx::nn::RNN>(1, fx::relu); }

TEST(RecurrentFused, TrainableInitialStateGetsItsGradient) {
  fx::Generator gen(3);
  auto lstm = fx::nn::LSTM(
      4, 5, {.num_layers = 2, .bidirectional = true, .trainable_state = true, .gen = &gen});
  lstm.h0 = fx::testing::randn(lstm.h0.shape(), {.seed = 4, .dtype = fx::f32});
  lstm.c0 = fx::testing::randn(lstm.c0.shape(), {.seed = 5, .dtype = fx::f32});
  expect_paths_agree(lstm, fx::testing::randn({2, 7, 4}, {.seed = 6, .dtype = fx::f32}), {});
}

TEST(RecurrentFused, SecondOrderTakesTheComposedPath) {
  // A gradient of a gradient: the fused node's pullback is a kernel that nothing differentiates,
  // so under two tapes the layer must step the cells; the results then agree to rounding.
  fx::Generator gen(8);
  auto gru = fx::nn::GRU(3, 4, {.num_layers = 2, .gen = &gen});
  auto composed = gru;
  composed.fused = false;
  Tensor x = fx::testing::randn({2, 4, 3}, {.seed = 9, .dtype = fx::f32});
  Tensor v = fx::testing::randn({2, 4, 3}, {.seed = 10, .dtype = fx::f32});
  auto hvp = [&](const fx::nn::GRU& m) {
    return fx::gradient(
        [&](const Tensor& x) {
          Tensor g =
              fx::gradient([&](const Tensor& x) { return fx::sum(fx::square(m(x).first)); }, x);
          return fx::sum(g * v);
        },
        x);
  };
  EXPECT_TRUE(fx::allclose(hvp(gru), hvp(composed), 1e-5, 1e-6));
}

TEST(RecurrentFused, LengthsAndOtherDtypesRunComposed) {
  fx::Generator gen(11);
  auto lstm = fx::nn::LSTM(3, 4, {.gen = &gen});
  Tensor x = fx::testing::randn({2, 5, 3}, {.seed = 12, .dtype = fx::f32});
  Tensor len = fx::from_vector<int64_t>({5, 3});
  auto loss = [&](const fx::nn::LSTM& m) { return fx::sum(m(x, {}, len).first); };
  auto composed = lstm;
  composed.fused = false;
  const uint64_t nf = nodes_of([&] { fx::gradient(loss, lstm); });
  const uint64_t nc = nodes_of([&] { fx::gradient(loss, composed); });
  EXPECT_EQ(nf, nc);  // masking is not expressed in oneDNN: the same composed recording
}

TEST(RecurrentFused, VmapRunsEachExampleAsTheLayerWould) {
  // Under fx::vmap a value has no data of its own for a kernel to read: the layer must run its
  // ops, batched, and give what it gives each example on its own (fused there).
  fx::Generator gen(13);
  auto gru = fx::nn::GRU(3, 4, {.bidirectional = true, .gen = &gen});
  Tensor xs = fx::testing::randn({3, 2, 5, 3}, {.seed = 14, .dtype = fx::f32});
  Tensor ys = fx::vmap([&](const Tensor& x) { return gru(x).first; })(xs);
  for (int64_t b = 0; b < 3; ++b)
    EXPECT_TRUE(fx::allclose(fx::select(ys, 0, b), gru(fx::select(xs, 0, b)).first, kRtol, kAtol))
        << b;
}
