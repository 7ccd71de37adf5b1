#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(InstanceNorm, NormalisesEachSampleAndChannelOverSpace) {
  auto in = fx::nn::InstanceNorm(2, fx::identity, false, 1e-12, fx::f64);
  EXPECT_EQ(fx::nn::parameter_count(in), 0);
  // (0, 0): {1, 3} -> {-1, 1}; (0, 1): {0, 2} -> {-1, 1}; (1, 0): {2, 2} -> {0, 0}; (1, 1): {5, 9} -> {-1, 1}.
  auto y =
      fx::to_vector<double>(in(fx::tensor({1, 3, 0, 2, 2, 2, 5, 9}, fx::f64).reshape({2, 2, 2})));
  EXPECT_NEAR(y[0], -1, 1e-12);
  EXPECT_NEAR(y[1], 1, 1e-12);
  EXPECT_NEAR(y[2], -1, 1e-12);
  EXPECT_NEAR(y[3], 1, 1e-12);
  EXPECT_NEAR(y[4], 0, 1e-12);
  EXPECT_NEAR(y[6], -1, 1e-12);
  EXPECT_NEAR(y[7], 1, 1e-12);
}

TEST(InstanceNorm, GradientsMatchFiniteDifferences) {
  auto in = fx::nn::InstanceNorm(3, fx::tanh, true, 1e-5, fx::f64);
  in.scale = fx::testing::randn({3}, {.seed = 1});
  in.bias = fx::testing::randn({3}, {.seed = 2});
  auto x = fx::testing::randn({2, 3, 4}, {.seed = 3});
  auto r = fx::testing::gradcheck(
      [](const fx::nn::InstanceNorm& m, const fx::Tensor& x) { return m(x); }, in, x);
  EXPECT_TRUE(r) << r;
}

TEST(InstanceNorm, InputWithoutSpatialAxesNamesTheLayerAndShape) {
  auto in = fx::nn::InstanceNorm(3);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)in(fx::zeros({2, 3}));
      },
      {"fx::nn::InstanceNorm", "(2, 3)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)in(fx::zeros({2, 4, 5}));
      },
      {"fx::nn::InstanceNorm", "(2, 4, 5)", "3"}));
}

}  // namespace
