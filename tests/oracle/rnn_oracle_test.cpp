// libtorch as the oracle for the recurrent and attention layers: torch::nn::LSTM, GRU, RNN and
// MultiheadAttention get fluxion's weights copied in (same layout, same names), then the outputs,
// final states and the gradients of a random linear functional of them with respect to the input
// and every weight must agree. f64 throughout, to 1e-10 relative to the largest element.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/gru.hpp>
#include <fluxion/nn/lstm.hpp>
#include <fluxion/nn/multihead_attention.hpp>
#include <fluxion/nn/rnn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

#include "torch_bridge.hpp"

namespace {

using fx::Tensor;
using fx::oracle::to_torch;

std::string mismatch(const Tensor& got, const torch::Tensor& want, double rtol = 1e-10) {
  return fx::oracle::mismatch(got, want, rtol);
}

// Copies a cell's weights into torch's parameters of layer l, direction d.
template <class Cell>
void copy_cell(torch::nn::Module& m, const Cell& c, int64_t l, int64_t d) {
  torch::NoGradGuard no_grad;
  const std::string sfx = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
  auto params = m.named_parameters();
  params["weight_ih" + sfx].copy_(to_torch(c.weight_ih));
  params["weight_hh" + sfx].copy_(to_torch(c.weight_hh));
  params["bias_ih" + sfx].copy_(to_torch(c.bias_ih));
  params["bias_hh" + sfx].copy_(to_torch(c.bias_hh));
}

// Every cell gradient of fluxion against torch's parameter gradients.
template <class Layer>
void expect_cell_grads(torch::nn::Module& m, const Layer& g, int64_t layers, int64_t dirs) {
  auto params = m.named_parameters();
  for (int64_t l = 0; l < layers; ++l)
    for (int64_t d = 0; d < dirs; ++d) {
      const auto& c = g.cells[l * dirs + d];
      const std::string sfx = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
      EXPECT_EQ(mismatch(c.weight_ih, params["weight_ih" + sfx].grad()), "") << "weight_ih" << sfx;
      EXPECT_EQ(mismatch(c.weight_hh, params["weight_hh" + sfx].grad()), "") << "weight_hh" << sfx;
      EXPECT_EQ(mismatch(c.bias_ih, params["bias_ih" + sfx].grad()), "") << "bias_ih" << sfx;
      EXPECT_EQ(mismatch(c.bias_hh, params["bias_hh" + sfx].grad()), "") << "bias_hh" << sfx;
    }
}

struct Config {
  int64_t layers;
  bool bidirectional;
};

class LstmOracle : public ::testing::TestWithParam<Config> {};
class GruOracle : public ::testing::TestWithParam<Config> {};

const Config kConfigs[] = {{1, false}, {1, true}, {2, false}, {2, true}};

TEST_P(LstmOracle, OutputsStatesAndGradientsMatchTorch) {
  const auto [L, bi] = GetParam();
  const int64_t D = bi ? 2 : 1, N = 3, T = 5, F = 4, H = 6;
  fx::Generator gen(L * 10 + D);
  auto lstm =
      fx::nn::LSTM(F, H, {.num_layers = L, .bidirectional = bi, .dtype = fx::f64, .gen = &gen});
  auto x = fx::randn({N, T, F}, gen, fx::f64);
  fx::nn::LSTMState s0{fx::randn({L * D, N, H}, gen, fx::f64),
                       fx::randn({L * D, N, H}, gen, fx::f64)};
  auto uy = fx::randn({N, T, D * H}, gen, fx::f64), uh = fx::randn({L * D, N, H}, gen, fx::f64),
       uc = fx::randn({L * D, N, H}, gen, fx::f64);

  torch::nn::LSTM ref(
      torch::nn::LSTMOptions(F, H).num_layers(L).bidirectional(bi).batch_first(true));
  ref->to(torch::kDouble);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t d = 0; d < D; ++d) copy_cell(*ref, lstm.cells[l * D + d], l, d);
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
  auto loss = [&](const fx::nn::LSTM& m, const Tensor& x, const fx::nn::LSTMState& s0) {
    auto [y, s] = m(x, s0);
    return fx::sum(y * uy) + fx::sum(s.h * uh) + fx::sum(s.c * uc);
  };
  auto [gm, gx, gs] = fx::gradient(loss, lstm, x, s0);
  EXPECT_EQ(mismatch(gx, tx.grad()), "");
  EXPECT_EQ(mismatch(gs.h, th.grad()), "");
  EXPECT_EQ(mismatch(gs.c, tc.grad()), "");
  expect_cell_grads(*ref, gm, L, D);
}

TEST_P(LstmOracle, PaddedSequencesMatchTorchsPackedSequences) {
  const auto [L, bi] = GetParam();
  const int64_t D = bi ? 2 : 1, N = 4, T = 6, F = 3, H = 5;
  fx::Generator gen(L * 100 + D);
  auto lstm =
      fx::nn::LSTM(F, H, {.num_layers = L, .bidirectional = bi, .dtype = fx::f64, .gen = &gen});
  auto x = fx::randn({N, T, F}, gen, fx::f64);
  auto lengths = fx::from_vector<int64_t>({4, 6, 1, 3});
  auto uy = fx::randn({N, T, D * H}, gen, fx::f64), uh = fx::randn({L * D, N, H}, gen, fx::f64);

  torch::nn::LSTM ref(
      torch::nn::LSTMOptions(F, H).num_layers(L).bidirectional(bi).batch_first(true));
  ref->to(torch::kDouble);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t d = 0; d < D; ++d) copy_cell(*ref, lstm.cells[l * D + d], l, d);
  auto tx = to_torch(x).requires_grad_(true);
  namespace rnn = torch::nn::utils::rnn;
  auto packed = rnn::pack_padded_sequence(tx, torch::tensor({4, 6, 1, 3}, torch::kLong), true,
                                          /*enforce_sorted=*/false);
  auto [tpy, ts] = ref->forward_with_packed_input(packed);
  auto ty = std::get<0>(rnn::pad_packed_sequence(tpy, true, 0.0, T));
  auto thn = std::get<0>(ts);
  (torch::sum(ty * to_torch(uy)) + torch::sum(thn * to_torch(uh))).backward();

  auto [y, s] = lstm(x, {}, lengths);
  EXPECT_EQ(mismatch(y, ty), "");
  EXPECT_EQ(mismatch(s.h, thn), "");
  EXPECT_EQ(mismatch(s.c, std::get<1>(ts)), "");
  auto [gm, gx] = fx::gradient(
      [&](const fx::nn::LSTM& m, const Tensor& x) {
        auto [y, s] = m(x, {}, lengths);
        return fx::sum(y * uy) + fx::sum(s.h * uh);
      },
      lstm, x);
  EXPECT_EQ(mismatch(gx, tx.grad()), "");
  expect_cell_grads(*ref, gm, L, D);
}

TEST_P(GruOracle, OutputsStatesAndGradientsMatchTorch) {
  const auto [L, bi] = GetParam();
  const int64_t D = bi ? 2 : 1, N = 3, T = 5, F = 4, H = 6;
  fx::Generator gen(L * 10 + D + 1000);
  auto gru =
      fx::nn::GRU(F, H, {.num_layers = L, .bidirectional = bi, .dtype = fx::f64, .gen = &gen});
  auto x = fx::randn({N, T, F}, gen, fx::f64), h0 = fx::randn({L * D, N, H}, gen, fx::f64);
  auto uy = fx::randn({N, T, D * H}, gen, fx::f64), uh = fx::randn({L * D, N, H}, gen, fx::f64);

  torch::nn::GRU ref(torch::nn::GRUOptions(F, H).num_layers(L).bidirectional(bi).batch_first(true));
  ref->to(torch::kDouble);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t d = 0; d < D; ++d) copy_cell(*ref, gru.cells[l * D + d], l, d);
  auto tx = to_torch(x).requires_grad_(true), th = to_torch(h0).requires_grad_(true);
  auto [ty, thn] = ref->forward(tx, th);
  (torch::sum(ty * to_torch(uy)) + torch::sum(thn * to_torch(uh))).backward();

  auto [y, h] = gru(x, h0);
  EXPECT_EQ(mismatch(y, ty), "");
  EXPECT_EQ(mismatch(h, thn), "");
  auto [gm, gx, gh] = fx::gradient(
      [&](const fx::nn::GRU& m, const Tensor& x, const Tensor& h0) {
        auto [y, h] = m(x, h0);
        return fx::sum(y * uy) + fx::sum(h * uh);
      },
      gru, x, h0);
  EXPECT_EQ(mismatch(gx, tx.grad()), "");
  EXPECT_EQ(mismatch(gh, th.grad()), "");
  expect_cell_grads(*ref, gm, L, D);
}

INSTANTIATE_TEST_SUITE_P(Layers, LstmOracle, ::testing::ValuesIn(kConfigs));
INSTANTIATE_TEST_SUITE_P(Layers, GruOracle, ::testing::ValuesIn(kConfigs));

TEST(RnnOracle, TanhRnnMatchesTorch) {
  const int64_t L = 2, D = 2, N = 3, T = 4, F = 3, H = 5;
  fx::Generator gen(77);
  auto rnn =
      fx::nn::RNN(F, H, {.num_layers = L, .bidirectional = true, .dtype = fx::f64, .gen = &gen});
  auto x = fx::randn({N, T, F}, gen, fx::f64), h0 = fx::randn({L * D, N, H}, gen, fx::f64);
  auto uy = fx::randn({N, T, D * H}, gen, fx::f64), uh = fx::randn({L * D, N, H}, gen, fx::f64);

  torch::nn::RNN ref(
      torch::nn::RNNOptions(F, H).num_layers(L).bidirectional(true).batch_first(true).nonlinearity(
          torch::kTanh));
  ref->to(torch::kDouble);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t d = 0; d < D; ++d) copy_cell(*ref, rnn.cells[l * D + d], l, d);
  auto tx = to_torch(x).requires_grad_(true), th = to_torch(h0).requires_grad_(true);
  auto [ty, thn] = ref->forward(tx, th);
  (torch::sum(ty * to_torch(uy)) + torch::sum(thn * to_torch(uh))).backward();

  auto [y, h] = rnn(x, h0);
  EXPECT_EQ(mismatch(y, ty), "");
  EXPECT_EQ(mismatch(h, thn), "");
  auto [gm, gx, gh] = fx::gradient(
      [&](const fx::nn::RNN& m, const Tensor& x, const Tensor& h0) {
        auto [y, h] = m(x, h0);
        return fx::sum(y * uy) + fx::sum(h * uh);
      },
      rnn, x, h0);
  EXPECT_EQ(mismatch(gx, tx.grad()), "");
  EXPECT_EQ(mismatch(gh, th.grad()), "");
  expect_cell_grads(*ref, gm, L, D);
}

// torch::nn::MultiheadAttention (sequence-first in libtorch: inputs transposed to (L, N, E)).
void check_mha(const fx::nn::AttentionMasks& masks, const torch::Tensor& t_attn_mask,
               const torch::Tensor& t_pad, bool average) {
  const int64_t N = 2, L = 4, S = 5, E = 8, H = 2;
  fx::Generator gen(91);
  auto mha = fx::nn::MultiHeadAttention(E, H, {.dtype = fx::f64, .gen = &gen});
  mha.in_proj_bias = fx::randn({3 * E}, gen, fx::f64);
  mha.out_proj_bias = fx::randn({E}, gen, fx::f64);
  auto q = fx::randn({N, L, E}, gen, fx::f64), k = fx::randn({N, S, E}, gen, fx::f64),
       v = fx::randn({N, S, E}, gen, fx::f64);
  auto uy = fx::randn({N, L, E}, gen, fx::f64);

  torch::nn::MultiheadAttention ref(torch::nn::MultiheadAttentionOptions(E, H));
  ref->to(torch::kDouble);
  {
    torch::NoGradGuard no_grad;
    ref->in_proj_weight.copy_(to_torch(mha.in_proj_weight));
    ref->in_proj_bias.copy_(to_torch(mha.in_proj_bias));
    ref->out_proj->weight.copy_(to_torch(mha.out_proj_weight));
    ref->out_proj->bias.copy_(to_torch(mha.out_proj_bias));
  }
  auto tq = to_torch(q).requires_grad_(true), tk = to_torch(k).requires_grad_(true),
       tv = to_torch(v).requires_grad_(true);
  auto [ty, tw] = ref->forward(tq.transpose(0, 1), tk.transpose(0, 1), tv.transpose(0, 1), t_pad,
                               true, t_attn_mask, average);
  ty = ty.transpose(0, 1);
  auto uw = fx::randn(fx::Shape(tw.sizes().vec()), gen, fx::f64);
  (torch::sum(ty * to_torch(uy)) + torch::sum(tw * to_torch(uw))).backward();

  auto [y, w] = mha(q, k, v, masks);
  EXPECT_EQ(mismatch(y, ty), "");
  EXPECT_EQ(mismatch(w, tw), "");
  auto [gm, gq, gk, gv] = fx::gradient(
      [&](const fx::nn::MultiHeadAttention& m, const Tensor& q, const Tensor& k, const Tensor& v) {
        auto [y, w] = m(q, k, v, masks);
        return fx::sum(y * uy) + fx::sum(w * uw);
      },
      mha, q, k, v);
  EXPECT_EQ(mismatch(gq, tq.grad()), "");
  EXPECT_EQ(mismatch(gk, tk.grad()), "");
  EXPECT_EQ(mismatch(gv, tv.grad()), "");
  EXPECT_EQ(mismatch(gm.in_proj_weight, ref->in_proj_weight.grad()), "");
  EXPECT_EQ(mismatch(gm.in_proj_bias, ref->in_proj_bias.grad()), "");
  EXPECT_EQ(mismatch(gm.out_proj_weight, ref->out_proj->weight.grad()), "");
  EXPECT_EQ(mismatch(gm.out_proj_bias, ref->out_proj->bias.grad()), "");
}

TEST(MultiHeadAttentionOracle, UnmaskedMatchesTorch) { check_mha({}, {}, {}, true); }

TEST(MultiHeadAttentionOracle, KeysAndValuesOfOtherWidthsMatchTorch) {
  // libtorch 1.13's C++ MultiheadAttention asserts that keys and values have the same shape, so
  // kdim = vdim here (the unit test covers them differing).
  const int64_t N = 2, L = 3, S = 4, E = 6, H = 3, KD = 5, VD = 5;
  fx::Generator gen(92);
  auto mha =
      fx::nn::MultiHeadAttention(E, H, {.kdim = KD, .vdim = VD, .dtype = fx::f64, .gen = &gen});
  mha.in_proj_bias = fx::randn({3 * E}, gen, fx::f64);
  auto q = fx::randn({N, L, E}, gen, fx::f64), k = fx::randn({N, S, KD}, gen, fx::f64),
       v = fx::randn({N, S, VD}, gen, fx::f64), uy = fx::randn({N, L, E}, gen, fx::f64);
  torch::nn::MultiheadAttention ref(torch::nn::MultiheadAttentionOptions(E, H).kdim(KD).vdim(VD));
  ref->to(torch::kDouble);
  {
    torch::NoGradGuard no_grad;
    ref->q_proj_weight.copy_(to_torch(mha.q_proj_weight));
    ref->k_proj_weight.copy_(to_torch(mha.k_proj_weight));
    ref->v_proj_weight.copy_(to_torch(mha.v_proj_weight));
    ref->in_proj_bias.copy_(to_torch(mha.in_proj_bias));
    ref->out_proj->weight.copy_(to_torch(mha.out_proj_weight));
    ref->out_proj->bias.copy_(to_torch(mha.out_proj_bias));
  }
  auto tk = to_torch(k).requires_grad_(true), tv = to_torch(v).requires_grad_(true);
  auto [ty, tw] = ref->forward(to_torch(q).transpose(0, 1), tk.transpose(0, 1), tv.transpose(0, 1));
  torch::sum(ty.transpose(0, 1) * to_torch(uy)).backward();
  auto [y, w] = mha(q, k, v);
  EXPECT_EQ(mismatch(y, ty.transpose(0, 1)), "");
  EXPECT_EQ(mismatch(w, tw), "");
  auto [gm, gk, gv] = fx::gradient([&](const fx::nn::MultiHeadAttention& m, const Tensor& k,
                                       const Tensor& v) { return fx::sum(m(q, k, v).first * uy); },
                                   mha, k, v);
  EXPECT_EQ(mismatch(gk, tk.grad()), "");
  EXPECT_EQ(mismatch(gv, tv.grad()), "");
  EXPECT_EQ(mismatch(gm.k_proj_weight, ref->k_proj_weight.grad()), "");
  EXPECT_EQ(mismatch(gm.v_proj_weight, ref->v_proj_weight.grad()), "");
  EXPECT_EQ(mismatch(gm.q_proj_weight, ref->q_proj_weight.grad()), "");
}

TEST(MultiHeadAttentionOracle, PerHeadWeightsMatchTorch) {
  check_mha({.average_weights = false}, {}, {}, false);
}

TEST(MultiHeadAttentionOracle, BooleanAndFloatMasksMatchTorch) {
  // Padding: the last key of sample 0 and the last two of sample 1.
  std::vector<double> pad{0, 0, 0, 0, 1, 0, 0, 0, 1, 1};
  auto fpad = fx::from_vector<double>(pad, {2, 5}) > 0.5;
  auto tpad = torch::tensor(std::vector<int64_t>{0, 0, 0, 0, 1, 0, 0, 0, 1, 1})
                  .reshape({2, 5})
                  .to(torch::kBool);
  // A float attn_mask added to the scores.
  fx::Generator gen(5);
  auto fmask = fx::randn({4, 5}, gen, fx::f64);
  check_mha({.attn_mask = fmask, .key_padding_mask = fpad}, to_torch(fmask), tpad, true);
  // A boolean causal-shaped mask: true above the diagonal is excluded.
  auto upper = fx::reshape(fx::arange(5), {1, 5}) > fx::reshape(fx::arange(4), {4, 1});
  // libtorch 1.13's C++ MultiheadAttention adds attn_mask to the scores as it is (its Python
  // counterpart turns a boolean mask into -inf first), so torch gets the additive form.
  auto tupper = torch::zeros({4, 5}, torch::kDouble)
                    .masked_fill(torch::triu(torch::ones({4, 5}, torch::kBool), 1),
                                 -std::numeric_limits<double>::infinity());
  check_mha({.attn_mask = upper}, tupper, {}, true);
  check_mha({.causal = true}, tupper, {}, true);
}

}  // namespace
