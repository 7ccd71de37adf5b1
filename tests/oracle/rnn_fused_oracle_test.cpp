// libtorch as the oracle for the fused (oneDNN) path of fx::nn::LSTM, GRU and RNN: f32 layers
// without lengths, under at most one tape, which is where that path runs (rnn_oracle_test.cpp
// checks the composed path in f64). torch::nn::LSTM, GRU and RNN get fluxion's weights copied in;
// outputs, final states and the gradients of a random linear functional of them with respect to
// the input, the initial state and every weight must agree to f32 rounding (1e-4 relative to
// the largest element).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/gru.hpp>
#include <fluxion/nn/lstm.hpp>
#include <fluxion/nn/rnn.hpp>
#include <fluxion/ops.hpp>

#include "torch_bridge.hpp"

namespace {

using fx::Tensor;
using fx::oracle::to_torch;

std::string mismatch(const Tensor& got, const torch::Tensor& want, double rtol = 1e-4) {
  return fx::oracle::mismatch(got, want, rtol);
}

std::string suffix(int64_t l, int64_t d) {
  return "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
}

template <class Layer>
void copy_weights(torch::nn::Module& m, const Layer& layer) {
  torch::NoGradGuard no_grad;
  auto params = m.named_parameters();
  const int64_t D = layer.directions();
  for (int64_t l = 0; l < layer.num_layers; ++l)
    for (int64_t d = 0; d < D; ++d) {
      const auto& c = layer.cells[l * D + d];
      params["weight_ih" + suffix(l, d)].copy_(to_torch(c.weight_ih));
      params["weight_hh" + suffix(l, d)].copy_(to_torch(c.weight_hh));
      params["bias_ih" + suffix(l, d)].copy_(to_torch(c.bias_ih));
      params["bias_hh" + suffix(l, d)].copy_(to_torch(c.bias_hh));
    }
}

template <class Layer>
void expect_weight_grads(torch::nn::Module& m, const Layer& g) {
  auto params = m.named_parameters();
  const int64_t D = g.directions();
  for (int64_t l = 0; l < g.num_layers; ++l)
    for (int64_t d = 0; d < D; ++d) {
      const auto& c = g.cells[l * D + d];
      const std::string s = suffix(l, d);
      EXPECT_EQ(mismatch(c.weight_ih, params["weight_ih" + s].grad()), "") << "weight_ih" << s;
      EXPECT_EQ(mismatch(c.weight_hh, params["weight_hh" + s].grad()), "") << "weight_hh" << s;
      EXPECT_EQ(mismatch(c.bias_ih, params["bias_ih" + s].grad()), "") << "bias_ih" << s;
      EXPECT_EQ(mismatch(c.bias_hh, params["bias_hh" + s].grad()), "") << "bias_hh" << s;
    }
}

struct Config {
  int64_t layers;
  bool bidirectional;
};
class FusedLstmOracle : public ::testing::TestWithParam<Config> {};
class FusedGruOracle : public ::testing::TestWithParam<Config> {};
class FusedRnnOracle : public ::testing::TestWithParam<Config> {};
const Config kConfigs[] = {{1, false}, {1, true}, {2, false}, {2, true}};
constexpr int64_t N = 3, T = 6, F = 4, H = 5;

TEST_P(FusedLstmOracle, OutputsStatesAndGradientsMatchTorch) {
  const auto [L, bi] = GetParam();
  const int64_t D = bi ? 2 : 1;
  fx::Generator gen(L * 10 + D);
  auto lstm = fx::nn::LSTM(F, H, {.num_layers = L, .bidirectional = bi, .gen = &gen});
  auto x = fx::randn({N, T, F}, gen);
  fx::nn::LSTMState s0{fx::randn({L * D, N, H}, gen), fx::randn({L * D, N, H}, gen)};
  auto uy = fx::randn({N, T, D * H}, gen), uh = fx::randn({L * D, N, H}, gen),
       uc = fx::randn({L * D, N, H}, gen);

  torch::nn::LSTM ref(
      torch::nn::LSTMOptions(F, H).num_layers(L).bidirectional(bi).batch_first(true));
  copy_weights(*ref, lstm);
  auto tx = to_torch(x).requires_grad_(true), th = to_torch(s0.h).requires_grad_(true),
       tc = to_torch(s0.c).requires_grad_(true);
  auto [ty, ts] = ref->forward(tx, std::make_tuple(th, tc));
  auto [thn, tcn] = ts;
  (torch::sum(ty * to_torch(uy)) + torch::sum(thn * to_torch(uh)) + torch::sum(tcn * to_torch(uc)))
      .backward();

  auto [y, s] = lstm(x, s0);
  EXPECT_EQ(mismatch(y, ty), "");
  EXPECT_EQ(mismatch(s.h, thn), "");
  EXPECT_EQ(mismatch(s.c, tcn), "");
  auto [gm, gx, gs] = fx::gradient(
      [&](const fx::nn::LSTM& m, const Tensor& x, const fx::nn::LSTMState& s0) {
        auto [y, s] = m(x, s0);
        return fx::sum(y * uy) + fx::sum(s.h * uh) + fx::sum(s.c * uc);
      },
      lstm, x, s0);
  EXPECT_EQ(mismatch(gx, tx.grad()), "");
  EXPECT_EQ(mismatch(gs.h, th.grad()), "");
  EXPECT_EQ(mismatch(gs.c, tc.grad()), "");
  expect_weight_grads(*ref, gm);
}

// GRU and RNN share the shape of the call: (y, h) from (x, h0).
template <class Layer, class Ref>
void check_single_state(Layer layer, Ref ref, fx::Generator& gen, int64_t L, int64_t D) {
  auto x = fx::randn({N, T, F}, gen), h0 = fx::randn({L * D, N, H}, gen);
  auto uy = fx::randn({N, T, D * H}, gen), uh = fx::randn({L * D, N, H}, gen);
  copy_weights(*ref, layer);
  auto tx = to_torch(x).requires_grad_(true), th = to_torch(h0).requires_grad_(true);
  auto [ty, thn] = ref->forward(tx, th);
  (torch::sum(ty * to_torch(uy)) + torch::sum(thn * to_torch(uh))).backward();

  auto [y, h] = layer(x, h0);
  EXPECT_EQ(mismatch(y, ty), "");
  EXPECT_EQ(mismatch(h, thn), "");
  auto [gm, gx, gh] = fx::gradient(
      [&](const Layer& m, const Tensor& x, const Tensor& h0) {
        auto [y, h] = m(x, h0);
        return fx::sum(y * uy) + fx::sum(h * uh);
      },
      layer, x, h0);
  EXPECT_EQ(mismatch(gx, tx.grad()), "");
  EXPECT_EQ(mismatch(gh, th.grad()), "");
  expect_weight_grads(*ref, gm);
}

TEST_P(FusedGruOracle, OutputsStatesAndGradientsMatchTorch) {
  const auto [L, bi] = GetParam();
  const int64_t D = bi ? 2 : 1;
  fx::Generator gen(L * 10 + D + 1000);
  auto gru = fx::nn::GRU(F, H, {.num_layers = L, .bidirectional = bi, .gen = &gen});
  torch::nn::GRU ref(torch::nn::GRUOptions(F, H).num_layers(L).bidirectional(bi).batch_first(true));
  check_single_state(gru, ref, gen, L, D);
}

TEST_P(FusedRnnOracle, TanhAndReluMatchTorch) {
  const auto [L, bi] = GetParam();
  const int64_t D = bi ? 2 : 1;
  fx::Generator gen(L * 10 + D + 2000);
  auto tanh_rnn = fx::nn::RNN(F, H, {.num_layers = L, .bidirectional = bi, .gen = &gen});
  torch::nn::RNN tanh_ref(
      torch::nn::RNNOptions(F, H).num_layers(L).bidirectional(bi).batch_first(true));
  check_single_state(tanh_rnn, tanh_ref, gen, L, D);
  auto relu_rnn =
      fx::nn::RNN(F, H, {.num_layers = L, .bidirectional = bi, .act = fx::relu, .gen = &gen});
  torch::nn::RNN relu_ref(
      torch::nn::RNNOptions(F, H).num_layers(L).bidirectional(bi).batch_first(true).nonlinearity(
          torch::kReLU));
  check_single_state(relu_rnn, relu_ref, gen, L, D);
}

INSTANTIATE_TEST_SUITE_P(Layers, FusedLstmOracle, ::testing::ValuesIn(kConfigs));
INSTANTIATE_TEST_SUITE_P(Layers, FusedGruOracle, ::testing::ValuesIn(kConfigs));
INSTANTIATE_TEST_SUITE_P(Layers, FusedRnnOracle, ::testing::ValuesIn(kConfigs));

}  // namespace
