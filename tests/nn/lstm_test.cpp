#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/functors.hpp>
#include <fluxion/nn/losses.hpp>
#include <fluxion/nn/lstm.hpp>
#include <fluxion/nn/show.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/optim.hpp>
#include <fluxion/testing.hpp>

namespace {
fx::Tensor step_of(const fx::Tensor& x, int64_t t) { return fx::select(x, 1, t); }
}  // namespace

TEST(LSTM, OneLayerIsTheCellSteppedThroughTime) {
  fx::Generator gen(1);
  auto lstm = fx::nn::LSTM(3, 4, {.dtype = fx::f64, .gen = &gen});
  auto x = fx::testing::randn({2, 5, 3}, {.seed = 2});
  fx::nn::LSTMState s0{fx::testing::randn({1, 2, 4}, {.seed = 3}),
                       fx::testing::randn({1, 2, 4}, {.seed = 4})};
  auto [y, s] = lstm(x, s0);
  ASSERT_EQ(y.shape(), (fx::Shape{2, 5, 4}));
  ASSERT_EQ(s.h.shape(), (fx::Shape{1, 2, 4}));
  fx::nn::LSTMState c{fx::select(s0.h, 0, 0), fx::select(s0.c, 0, 0)};
  for (int64_t t = 0; t < 5; ++t) {
    auto [yt, c1] = lstm.cells[0](step_of(x, t), c);
    EXPECT_TRUE(fx::allclose(step_of(y, t), yt, 1e-12, 1e-12)) << "step " << t;
    c = c1;
  }
  EXPECT_TRUE(fx::allclose(fx::select(s.h, 0, 0), c.h, 1e-12, 1e-12));
  EXPECT_TRUE(fx::allclose(fx::select(s.c, 0, 0), c.c, 1e-12, 1e-12));
}

TEST(LSTM, BidirectionalStackFeedsBothDirectionsUpwards) {
  fx::Generator gen(5);
  auto lstm =
      fx::nn::LSTM(3, 4, {.num_layers = 2, .bidirectional = true, .dtype = fx::f64, .gen = &gen});
  ASSERT_EQ(lstm.cells.size(), 4u);
  EXPECT_EQ(lstm.cells[2].weight_ih.shape(), (fx::Shape{16, 8}));  // layer 1 reads both directions
  auto x = fx::testing::randn({2, 6, 3}, {.seed = 6});
  auto [y, s] = lstm(x);
  EXPECT_EQ(y.shape(), (fx::Shape{2, 6, 8}));
  EXPECT_EQ(s.c.shape(), (fx::Shape{4, 2, 4}));
  // The layer-0 reverse direction is a forward LSTM over the time-reversed sequence.
  auto rev = [](const fx::Tensor& t) {
    std::vector<fx::Tensor> steps;
    for (int64_t i = t.size(1) - 1; i >= 0; --i) steps.push_back(fx::select(t, 1, i));
    return fx::stack(steps, 1);
  };
  fx::nn::LSTM fwd = fx::nn::LSTM(3, 4, {.dtype = fx::f64});
  fwd.cells = {lstm.cells[1]};
  fx::nn::LSTM l0 = fwd;
  l0.cells = {lstm.cells[0]};
  auto [yr, sr] = fwd(rev(x));
  auto [y0, s0] = l0(x);
  auto layer0 = fx::concat({y0, rev(yr)}, -1);  // what layer 1 reads
  fx::nn::LSTM top = fx::nn::LSTM(8, 4, {.bidirectional = true, .dtype = fx::f64});
  top.cells = {lstm.cells[2], lstm.cells[3]};
  auto [yt, st] = top(layer0);
  EXPECT_TRUE(fx::allclose(y, yt, 1e-12, 1e-12));
  EXPECT_TRUE(fx::allclose(fx::select(s.h, 0, 1), fx::select(sr.h, 0, 0), 1e-12, 1e-12));
  EXPECT_TRUE(fx::allclose(fx::select(s.h, 0, 3), fx::select(st.h, 0, 1), 1e-12, 1e-12));
}

TEST(LSTM, PaddedSequencesMatchTheirUnpaddedRuns) {
  fx::Generator gen(7);
  auto lstm =
      fx::nn::LSTM(3, 4, {.num_layers = 2, .bidirectional = true, .dtype = fx::f64, .gen = &gen});
  auto x = fx::testing::randn({3, 6, 3}, {.seed = 8});
  std::vector<int64_t> len{6, 4, 1};
  auto [y, s] = lstm(x, {}, fx::from_vector<int64_t>(len));
  for (int64_t n = 0; n < 3; ++n) {
    auto xn = fx::slice(fx::slice(x, 0, n, n + 1), 1, 0, len[n]);
    auto [yn, sn] = lstm(xn);
    auto yv = fx::slice(y, 0, n, n + 1);
    EXPECT_TRUE(fx::allclose(fx::slice(yv, 1, 0, len[n]), yn, 1e-12, 1e-12)) << n;
    if (len[n] < 6) EXPECT_EQ(fx::max(fx::abs(fx::slice(yv, 1, len[n], 6))).item(), 0.0) << n;
    EXPECT_TRUE(fx::allclose(fx::slice(s.h, 1, n, n + 1), sn.h, 1e-12, 1e-12)) << n;
    EXPECT_TRUE(fx::allclose(fx::slice(s.c, 1, n, n + 1), sn.c, 1e-12, 1e-12)) << n;
  }
  // Padding never reaches a gradient: the padded steps' inputs get none.
  auto g = fx::gradient(
      [&](const fx::Tensor& x) {
        auto [y, s] = lstm(x, {}, fx::from_vector<int64_t>(len));
        return fx::sum(y) + fx::sum(s.c);
      },
      x);
  EXPECT_EQ(fx::max(fx::abs(fx::slice(fx::select(g, 0, 2), 0, 1, 6))).item(), 0.0);
}

TEST(LSTM, GradientsMatchFiniteDifferencesToSecondOrder) {
  fx::Generator gen(9);
  auto lstm =
      fx::nn::LSTM(2, 3, {.num_layers = 2, .bidirectional = true, .dtype = fx::f64, .gen = &gen});
  auto x = fx::testing::randn({2, 3, 2}, {.seed = 10});
  auto len = fx::from_vector<int64_t>({3, 2});
  auto f = [&](const fx::nn::LSTM& m, const fx::Tensor& x, const fx::nn::LSTMState& s) {
    auto [y, s1] = m(x, s, len);
    return fx::sum(y * y) + fx::sum(s1.h * s1.c);
  };
  fx::nn::LSTMState s{fx::testing::randn({4, 2, 3}, {.seed = 11}),
                      fx::testing::randn({4, 2, 3}, {.seed = 12})};
  auto r = fx::testing::gradcheck(f, lstm, x, s);
  EXPECT_TRUE(r) << r;
}

TEST(LSTM, TrainableInitialStateIsAParameterThatLearns) {
  fx::Generator gen(13);
  auto lstm = fx::nn::LSTM(2, 3, {.bidirectional = true, .trainable_state = true, .gen = &gen});
  ASSERT_EQ(lstm.h0.shape(), (fx::Shape{2, 3}));
  ASSERT_EQ(lstm.c0.shape(), (fx::Shape{2, 3}));
  EXPECT_EQ(fx::nn::parameter_count(lstm), 2 * (12 * 2 + 12 * 3 + 24) + 12);
  auto x = fx::randn({4, 5, 2}, gen);
  lstm.h0 = fx::randn({2, 3}, gen);
  // Without a given state the layer starts at h0, c0 for every sequence.
  auto h = fx::expand(fx::unsqueeze(lstm.h0, 1), {2, 4, 3});
  auto c = fx::expand(fx::unsqueeze(lstm.c0, 1), {2, 4, 3});
  EXPECT_TRUE(fx::allclose(lstm(x).first, lstm(x, {h, c}).first, 0, 0));
  auto target = fx::randn({4, 5, 6}, gen);
  auto loss = [&](const fx::nn::LSTM& m) { return fx::mse(m(x).first, target); };
  auto g = fx::gradient(loss, lstm);
  EXPECT_GT(fx::max(fx::abs(g.c0)).item(), 0.0);
  auto opt = fx::optim::setup(fx::optim::Adam{0.05}, lstm);
  const double before = loss(lstm).item();
  for (int i = 0; i < 30; ++i) fx::optim::update(opt, lstm, fx::gradient(loss, lstm));
  EXPECT_LT(loss(lstm).item(), before);
}

TEST(LSTM, DropoutActsBetweenLayersOnlyWhileTraining) {
  fx::Generator gen(14);
  auto lstm = fx::nn::LSTM(3, 8, {.num_layers = 2, .dropout = 0.5, .gen = &gen});
  auto x = fx::randn({4, 5, 3}, gen);
  auto plain = lstm;
  plain.dropout = 0;
  // Automatic mode: no dropout outside a gradient, dropout inside one.
  EXPECT_TRUE(fx::allclose(lstm(x).first, plain(x).first, 0, 0));
  fx::Tensor inside, inside_plain;
  (void)fx::gradient(
      [&](const fx::Tensor& v) {
        inside = lstm(v).first;
        inside_plain = plain(v).first;
        return fx::sum(inside);
      },
      x);
  EXPECT_FALSE(fx::allclose(inside, inside_plain, 1e-5, 1e-5));
  trainmode(lstm);
  auto [ya, sa] = lstm(x);
  EXPECT_FALSE(fx::allclose(ya, plain(x).first, 1e-5, 1e-5));
  testmode(lstm);
  EXPECT_TRUE(fx::allclose(lstm(x).first, plain(x).first, 0, 0));
  auto single = fx::nn::LSTM(3, 8, {.dropout = 0.5});  // one layer: nothing between layers
  auto one = single;
  one.dropout = 0;
  EXPECT_TRUE(fx::allclose(single(x).first, one(x).first, 0, 0));
}

TEST(LSTM, BadShapesNameTheLayerAndShapes) {
  auto lstm = fx::nn::LSTM(3, 4, {.num_layers = 2});
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)lstm(fx::zeros({2, 5, 4}));
      },
      {"fx::nn::LSTM", "(2, 5, 4)", "(N, T, 3)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)lstm(fx::zeros({5, 3}));
      },
      {"fx::nn::LSTM", "(5, 3)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)lstm(fx::zeros({2, 5, 3}), {fx::zeros({1, 2, 4}), {}});
      },
      {"fx::nn::LSTM", "h", "(1, 2, 4)", "(2, 2, 4)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)lstm(fx::zeros({2, 5, 3}), {}, fx::from_vector<int64_t>({5, 6}));
      },
      {"fx::nn::LSTM", "length 6", "(2, 5, 3)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)lstm(fx::zeros({2, 5, 3}), {}, fx::ones({3}, fx::i64));
      },
      {"fx::nn::LSTM", "lengths", "(3,)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([] { (void)fx::nn::LSTM(3, 4, {.num_layers = 0}); },
                                             {"fx::nn::LSTM", "num_layers"}));
}

TEST(LSTM, ParametersArePathsOfCellsAndRunOnTheMetaDevice) {
  auto lstm = fx::nn::LSTM(3, 4, {.bidirectional = true, .trainable_state = true});
  const std::string s = fx::nn::parameter_table(lstm);
  for (const char* path : {"cells.0.weight_ih", "cells.1.bias_hh", "h0", "c0"})
    EXPECT_NE(s.find(path), std::string::npos) << path;
  // Shapes without data: the meta device runs the layer's ops on shapes alone.
  auto meta = fx::to(lstm, fx::Device::meta);
  auto [y, st] = meta(fx::to(fx::zeros({2, 5, 3}), fx::Device::meta));
  EXPECT_EQ(y.shape(), (fx::Shape{2, 5, 8}));
  EXPECT_EQ(st.c.shape(), (fx::Shape{2, 2, 4}));
}

TEST(LSTM, UnpaddedStackMatchesFiniteDifferencesToSecondOrder) {
  // Without lengths no masking ops run: the plain recurrence, in both modes and to second order.
  fx::Generator gen(15);
  auto lstm =
      fx::nn::LSTM(2, 3, {.num_layers = 2, .bidirectional = true, .dtype = fx::f64, .gen = &gen});
  auto x = fx::testing::randn({2, 4, 2}, {.seed = 16});
  fx::nn::LSTMState s{fx::testing::randn({4, 2, 3}, {.seed = 17}),
                      fx::testing::randn({4, 2, 3}, {.seed = 18})};
  auto f = [](const fx::nn::LSTM& m, const fx::Tensor& x, const fx::nn::LSTMState& s) {
    auto [y, s1] = m(x, s);
    return fx::sum(y * y) + fx::sum(s1.h * s1.c);
  };
  auto r = fx::testing::gradcheck(f, lstm, x, s);
  EXPECT_TRUE(r) << r;
  // One step (T = 1) as well.
  auto r1 = fx::testing::gradcheck(f, lstm, fx::testing::randn({2, 1, 2}, {.seed = 19}), s);
  EXPECT_TRUE(r1) << r1;
}

TEST(LSTM, WithoutBiasesIsTheBiasFreeCellSteppedThroughTime) {
  fx::Generator gen(20);
  auto lstm = fx::nn::LSTM(3, 4, {.bias = false, .dtype = fx::f64, .gen = &gen});
  EXPECT_FALSE(lstm.cells[0].bias_ih.defined());
  EXPECT_EQ(fx::nn::parameter_count(lstm), 16 * 3 + 16 * 4);
  auto x = fx::testing::randn({2, 3, 3}, {.seed = 21});
  auto [y, s] = lstm(x);
  auto [y0, c0] = lstm.cells[0](fx::select(x, 1, 0));
  auto [y1, c1] = lstm.cells[0](fx::select(x, 1, 1), c0);
  auto [y2, c2] = lstm.cells[0](fx::select(x, 1, 2), c1);
  EXPECT_TRUE(fx::allclose(fx::stack({y0, y1, y2}, 1), y, 1e-12, 1e-12));
  EXPECT_TRUE(fx::allclose(fx::select(s.c, 0, 0), c2.c, 1e-12, 1e-12));
}
