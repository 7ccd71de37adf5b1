#include <gtest/gtest.h>

#include <cmath>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/linalg.hpp>
#include <fluxion/nn/attention.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>
#include <limits>

TEST(DotProductAttention, IsSoftmaxOfScaledScoresTimesValues) {
  auto q = fx::tensor({1, 2}, fx::f64).reshape({1, 1, 2});
  auto k = fx::tensor({1, 0, 0, 1}, fx::f64).reshape({1, 2, 2});
  auto v = fx::tensor({10, -4}, fx::f64).reshape({1, 2, 1});
  auto [y, w] = fx::nn::dot_product_attention(q, k, v);
  // scores [1, 2] / sqrt(2); weights e^s / sum e^s
  const double a = std::exp(1 / std::sqrt(2.0)), b = std::exp(2 / std::sqrt(2.0));
  auto wv = fx::to_vector<double>(w);
  EXPECT_NEAR(wv[0], a / (a + b), 1e-14);
  EXPECT_NEAR(wv[1], b / (a + b), 1e-14);
  EXPECT_NEAR(y.item(), (10 * a - 4 * b) / (a + b), 1e-13);
  auto [y1, w1] = fx::nn::dot_product_attention(q, k, v, {.scale = 1.0});
  EXPECT_NEAR(fx::to_vector<double>(w1)[1], std::exp(2.0) / (std::exp(1.0) + std::exp(2.0)), 1e-14);
}

TEST(DotProductAttention, CausalAndBooleanMasksExcludeKeys) {
  auto q = fx::testing::randn({2, 3, 4, 5}, {.seed = 1});  // (batch, heads, L, E)
  auto k = fx::testing::randn({2, 3, 4, 5}, {.seed = 2});
  auto v = fx::testing::randn({2, 3, 4, 6}, {.seed = 3});
  auto [y, w] = fx::nn::dot_product_attention(q, k, v, {.causal = true});
  EXPECT_EQ(y.shape(), (fx::Shape{2, 3, 4, 6}));
  auto wv = fx::to_vector<double>(w);
  for (size_t i = 0; i < wv.size(); ++i) {
    const int64_t row = (i / 4) % 4, col = i % 4;
    if (col > row) EXPECT_EQ(wv[i], 0.0) << i;
  }
  EXPECT_TRUE(fx::allclose(fx::sum(w, {-1}), fx::ones({2, 3, 4}, fx::f64), 1e-14, 1e-14));
  // The first query sees only the first key: its output is that key's value.
  EXPECT_TRUE(fx::allclose(fx::select(y, 2, 0), fx::select(v, 2, 0), 1e-14, 1e-14));
  // A boolean mask (true = attend) equals the additive mask with -inf where it is false.
  auto keep = fx::gt(fx::testing::randn({4, 4}, {.seed = 4}), fx::scalar(-0.5, fx::f64));
  keep = fx::where(fx::linalg::eye(4, fx::f64) > 0.5, fx::ones({4, 4}, fx::boolean), keep);
  auto add =
      fx::where(keep, 0.0, fx::full({4, 4}, -std::numeric_limits<double>::infinity(), fx::f64));
  auto [yb, wb] = fx::nn::dot_product_attention(q, k, v, {.mask = keep});
  auto [ya, wa] = fx::nn::dot_product_attention(q, k, v, {.mask = add});
  EXPECT_TRUE(fx::allclose(yb, ya, 1e-14, 1e-14));
  EXPECT_EQ(fx::sum(fx::where(keep, 0.0, wb)).item(), 0.0);
}

TEST(DotProductAttention, GradientsMatchFiniteDifferencesToSecondOrder) {
  auto q = fx::testing::randn({2, 3, 4}, {.seed = 5});
  auto k = fx::testing::randn({2, 5, 4}, {.seed = 6});
  auto v = fx::testing::randn({2, 5, 3}, {.seed = 7});
  auto bias = fx::testing::randn({3, 5}, {.seed = 8});
  auto f = [](const fx::Tensor& q, const fx::Tensor& k, const fx::Tensor& v,
              const fx::Tensor& bias) {
    auto [y, w] = fx::nn::dot_product_attention(q, k, v, {.mask = bias, .causal = true});
    return fx::sum(y * y) + fx::sum(w * w);
  };
  auto r = fx::testing::gradcheck(f, q, k, v, bias);
  EXPECT_TRUE(r) << r;
}

TEST(DotProductAttention, DropoutIsOffByDefaultAndInvertedWhenOn) {
  auto q = fx::testing::randn({8, 6, 4}, {.seed = 9});
  auto [y0, w0] = fx::nn::dot_product_attention(q, q, q);
  fx::Generator gen(10);
  auto [y1, w1] = fx::nn::dot_product_attention(q, q, q, {.dropout = 0.5, .gen = &gen});
  auto a = fx::to_vector<double>(w0), b = fx::to_vector<double>(w1);
  int dropped = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (b[i] == 0) ++dropped;
    else EXPECT_NEAR(b[i], 2 * a[i], 1e-14);
  }
  EXPECT_GT(dropped, int(a.size()) / 4);
  EXPECT_LT(dropped, 3 * int(a.size()) / 4);
  EXPECT_TRUE(fx::allclose(y1, fx::matmul(w1, q), 1e-14, 1e-14));
}

TEST(DotProductAttention, BadShapesNameTheFunctionAndShapes) {
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] {
        (void)fx::nn::dot_product_attention(fx::zeros({2, 3, 4}), fx::zeros({2, 5, 3}),
                                            fx::zeros({2, 5, 3}));
      },
      {"fx::nn::dot_product_attention", "(2, 3, 4)", "(2, 5, 3)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] {
        (void)fx::nn::dot_product_attention(fx::zeros({3, 4}), fx::zeros({5, 4}), fx::zeros({5, 2}),
                                            {.mask = fx::zeros({4, 5}, fx::boolean)});
      },
      {"fx::nn::dot_product_attention", "mask", "(4, 5)", "(3, 5)"}));
}
