#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/functors.hpp>
#include <fluxion/nn/gru.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

TEST(GRU, OneLayerIsTheCellSteppedThroughTime) {
  fx::Generator gen(1);
  auto layer = fx::nn::GRU(3, 4, {.dtype = fx::f64, .gen = &gen});
  auto x = fx::testing::randn({2, 5, 3}, {.seed = 2});
  auto h0 = fx::testing::randn({1, 2, 4}, {.seed = 3});
  auto [y, h] = layer(x, h0);
  ASSERT_EQ(y.shape(), (fx::Shape{2, 5, 4}));
  ASSERT_EQ(h.shape(), (fx::Shape{1, 2, 4}));
  fx::Tensor c = fx::select(h0, 0, 0);
  for (int64_t t = 0; t < 5; ++t) {
    auto [yt, c1] = layer.cells[0](fx::select(x, 1, t), c);
    EXPECT_TRUE(fx::allclose(fx::select(y, 1, t), yt, 1e-12, 1e-12)) << "step " << t;
    c = c1;
  }
  EXPECT_TRUE(fx::allclose(fx::select(h, 0, 0), c, 1e-12, 1e-12));
}

TEST(GRU, PaddedBidirectionalSequencesMatchTheirUnpaddedRuns) {
  fx::Generator gen(4);
  auto layer =
      fx::nn::GRU(3, 4, {.num_layers = 2, .bidirectional = true, .dtype = fx::f64, .gen = &gen});
  auto x = fx::testing::randn({3, 5, 3}, {.seed = 5});
  std::vector<int64_t> len{2, 5, 0};
  auto [y, h] = layer(x, {}, fx::from_vector<int64_t>(len));
  EXPECT_EQ(y.shape(), (fx::Shape{3, 5, 8}));
  EXPECT_EQ(h.shape(), (fx::Shape{4, 3, 4}));
  for (int64_t n = 0; n < 2; ++n) {
    auto [yn, hn] = layer(fx::slice(fx::slice(x, 0, n, n + 1), 1, 0, len[n]));
    EXPECT_TRUE(fx::allclose(fx::slice(fx::slice(y, 0, n, n + 1), 1, 0, len[n]), yn, 1e-12, 1e-12));
    EXPECT_TRUE(fx::allclose(fx::slice(h, 1, n, n + 1), hn, 1e-12, 1e-12));
  }
  // An empty sequence keeps its initial (zero) state and outputs zeros.
  EXPECT_EQ(fx::max(fx::abs(fx::select(y, 0, 2))).item(), 0.0);
  EXPECT_EQ(fx::max(fx::abs(fx::select(h, 1, 2))).item(), 0.0);
  EXPECT_GT(fx::max(fx::abs(fx::slice(y, 1, 2, 5))).item(), 0.0);  // padding of sequence 0 only
}

TEST(GRU, GradientsMatchFiniteDifferencesToSecondOrder) {
  fx::Generator gen(6);
  auto layer = fx::nn::GRU(2, 3,
                           {.num_layers = 2,
                            .bidirectional = true,
                            .trainable_state = true,
                            .dtype = fx::f64,
                            .gen = &gen});
  layer.h0 = fx::testing::randn({4, 3}, {.seed = 7});
  auto x = fx::testing::randn({2, 3, 2}, {.seed = 8});
  auto len = fx::from_vector<int64_t>({2, 3});
  auto f = [&](const fx::nn::GRU& m, const fx::Tensor& x) {
    auto [y, h] = m(x, {}, len);
    return fx::sum(y * y) + fx::sum(h);
  };
  auto r = fx::testing::gradcheck(f, layer, x);
  EXPECT_TRUE(r) << r;
}

TEST(GRU, BadShapesNameTheLayerAndShapes) {
  auto layer = fx::nn::GRU(3, 4, {.bidirectional = true});
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)layer(fx::zeros({2, 5, 2}));
      },
      {"fx::nn::GRU", "(2, 5, 2)", "(N, T, 3)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)layer(fx::zeros({2, 5, 3}), fx::zeros({1, 2, 4}));
      },
      {"fx::nn::GRU", "(1, 2, 4)", "(2, 2, 4)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([] { (void)fx::nn::GRU(3, 4, {.dropout = 1}); },
                                             {"fx::nn::GRU", "dropout"}));
}
