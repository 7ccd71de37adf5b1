// MaxPool, MeanPool, the adaptive and the global pools: values by hand, gradients against finite
// differences in f64 (the reference loops; the oneDNN f32 kernels are checked against them by
// tests/ops/conv_test.cpp and against libtorch by tests/oracle/conv_oracle_test.cpp), errors.
#include <gtest/gtest.h>

#include <fluxion/fluxion.hpp>
#include <fluxion/testing.hpp>

namespace {

fx::Tensor grid4x4() {  // 0..15 row by row, one sample, one channel
  return fx::arange(0.0, 16.0, 1.0, fx::f64).reshape({1, 1, 4, 4});
}

TEST(PoolLayers, ValuesByHand) {
  auto x = grid4x4();
  EXPECT_EQ(fx::to_vector<double>(fx::nn::MaxPool({2, 2})(x)), (std::vector<double>{5, 7, 13, 15}));
  EXPECT_EQ(fx::to_vector<double>(fx::nn::MeanPool({2, 2})(x)),
            (std::vector<double>{2.5, 4.5, 10.5, 12.5}));
  // Padding 1, kernel 2, stride 2 on a row 0..3: windows {pad, 0}, {1, 2}, {3, pad}.
  auto row = fx::arange(0.0, 4.0, 1.0, fx::f64).reshape({1, 1, 4});
  EXPECT_EQ(fx::to_vector<double>(fx::nn::MeanPool({2}, {.padding = {1}})(row)),
            (std::vector<double>{0, 1.5, 1.5}));
  EXPECT_EQ(fx::to_vector<double>(
                fx::nn::MeanPool({2}, {.padding = {1}, .count_include_pad = false})(row)),
            (std::vector<double>{0, 1.5, 3}));
  EXPECT_EQ(fx::to_vector<double>(fx::nn::MaxPool({2}, {.padding = {1}})(row - 10.0)),
            (std::vector<double>{-10, -8, -7}));
  EXPECT_EQ(fx::to_vector<double>(fx::nn::GlobalMaxPool()(x)), (std::vector<double>{15}));
  EXPECT_EQ(fx::nn::GlobalMeanPool()(x).shape(), (fx::Shape{1, 1, 1, 1}));
  EXPECT_EQ(fx::to_vector<double>(fx::nn::GlobalMeanPool()(x)), (std::vector<double>{7.5}));
}

TEST(PoolLayers, AdaptiveWindowsFollowPyTorch) {
  auto x = grid4x4();
  // Divisible: plain pooling with kernel = stride = 2.
  EXPECT_EQ(fx::to_vector<double>(fx::nn::AdaptiveMaxPool({2, 2})(x)),
            (std::vector<double>{5, 7, 13, 15}));
  // 4 -> 3 along W: windows [0, 2), [1, 3), [2, 4); rows 4 -> 1: all rows.
  EXPECT_EQ(fx::to_vector<double>(fx::nn::AdaptiveMeanPool({1, 3})(x)),
            (std::vector<double>{6.5, 7.5, 8.5}));
  EXPECT_EQ(fx::to_vector<double>(fx::nn::AdaptiveMaxPool({1, 3})(x)),
            (std::vector<double>{13, 14, 15}));
}

TEST(PoolLayers, GradientsMatchFiniteDifferences) {
  auto x = fx::testing::randn({2, 3, 7, 6}, {.seed = 1});
  auto check = [&](auto layer, int order) {
    auto r = fx::testing::gradcheck([&](const fx::Tensor& t) { return fx::sum(fx::sin(layer(t))); },
                                    {.order = order}, x);
    EXPECT_TRUE(r) << r;
  };
  check(fx::nn::MaxPool({3, 2}, {.stride = {2, 1}, .padding = {1, 0}}), 2);
  check(fx::nn::MeanPool({3, 3}, {.stride = {2}, .padding = {1}, .padding_hi = {0}}), 2);
  check(fx::nn::MeanPool({2, 3}, {.padding = {1}, .count_include_pad = false}), 2);
  check(fx::nn::AdaptiveMaxPool({3, 4}), 1);
  check(fx::nn::AdaptiveMeanPool({3, 4}), 2);
  check(fx::nn::GlobalMaxPool(), 1);
  check(fx::nn::GlobalMeanPool(), 2);
  auto x3 = fx::testing::randn({1, 2, 4, 5, 4}, {.seed = 2});
  auto r3 = fx::testing::gradcheck(
      [](const fx::Tensor& t) {
        return fx::sum(fx::sin(fx::nn::MaxPool({2, 2, 2})(t)));
      },
      x3);
  EXPECT_TRUE(r3) << r3;
}

TEST(PoolLayers, BadShapesNameTheLayer) {
  using fx::testing::throws_mentioning;
  EXPECT_TRUE(throws_mentioning(
      [] {
        (void)fx::nn::MaxPool({2, 2})(fx::zeros({2, 3, 8}));
      },
      {"fx::nn::MaxPool", "(2, 3, 8)"}));
  EXPECT_TRUE(throws_mentioning(
      [] {
        (void)fx::nn::MeanPool({5})(fx::zeros({2, 3, 4}));
      },
      {"fx::nn::MeanPool", "larger", "(2, 3, 4)"}));
  EXPECT_TRUE(throws_mentioning(
      [] {
        (void)fx::nn::MaxPool({2}, {.padding = {-1}})(fx::zeros({2, 3, 4}));
      },
      {"fx::nn::MaxPool", "padding", "-1"}));
  EXPECT_TRUE(throws_mentioning(
      [] {
        (void)fx::nn::AdaptiveMeanPool({5})(fx::zeros({1, 1, 4}));
      },
      {"fx::nn::AdaptiveMeanPool", "(1, 1, 4)"}));
}

}  // namespace
