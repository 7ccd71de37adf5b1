// Upsample (nearest, bilinear) and PixelShuffle: values by hand, gradients against finite
// differences, errors. Against libtorch: tests/oracle/conv_oracle_test.cpp.
#include <gtest/gtest.h>

#include <fluxion/fluxion.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(UpsampleLayer, NearestRepeatsAndBilinearInterpolates) {
  auto x = fx::tensor({1, 3}, fx::f64).reshape({1, 1, 2});
  EXPECT_EQ(fx::to_vector<double>(fx::nn::Upsample({2})(x)), (std::vector<double>{1, 1, 3, 3}));
  // Samples at -0.25 (clamped to 0), 0.25, 0.75, 1.25 (edge repeated).
  EXPECT_EQ(fx::to_vector<double>(fx::nn::Upsample({2}, fx::nn::UpsampleMode::bilinear)(x)),
            (std::vector<double>{1, 1.5, 2.5, 3}));
  auto img = fx::randn({2, 3, 4, 5});
  EXPECT_EQ(fx::nn::Upsample({2, 3})(img).shape(), (fx::Shape{2, 3, 8, 15}));
}

TEST(UpsampleLayer, GradientsMatchFiniteDifferences) {
  auto x = fx::testing::randn({2, 2, 3, 4}, {.seed = 1});
  for (auto mode : {fx::nn::UpsampleMode::nearest, fx::nn::UpsampleMode::bilinear}) {
    auto r = fx::testing::gradcheck(
        [&](const fx::Tensor& t) {
          return fx::sum(fx::sin(fx::nn::Upsample({2, 3}, mode)(t)));
        },
        x);
    EXPECT_TRUE(r) << r;
  }
}

TEST(PixelShuffleLayer, MovesChannelsIntoSpace) {
  // Channel i r + j of x lands at offset (i, j) of each r x r block.
  auto x = fx::arange(0.0, 4.0, 1.0, fx::f64).reshape({1, 4, 1, 1});
  EXPECT_EQ(fx::to_vector<double>(fx::nn::PixelShuffle(2)(x)), (std::vector<double>{0, 1, 2, 3}));
  auto r = fx::testing::gradcheck(
      [](const fx::Tensor& t) { return fx::sum(fx::sin(fx::nn::PixelShuffle(2)(t))); },
      fx::testing::randn({1, 8, 2, 3}, {.seed = 2}));
  EXPECT_TRUE(r) << r;
}

TEST(UpsampleLayer, BadShapesNameTheLayer) {
  using fx::testing::throws_mentioning;
  EXPECT_TRUE(throws_mentioning(
      [] {
        (void)fx::nn::Upsample({2})(fx::zeros({1, 1, 2, 2}));
      },
      {"fx::nn::Upsample", "(1, 1, 2, 2)"}));
  EXPECT_TRUE(throws_mentioning(
      [] {
        (void)fx::nn::PixelShuffle(2)(fx::zeros({1, 6, 2, 2}));
      },
      {"fx::nn::PixelShuffle", "(1, 6, 2, 2)"}));
}

}  // namespace
