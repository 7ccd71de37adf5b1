#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(Bilinear, ComputesX1WX2PlusB) {
  // W[0] = [[1, 0], [0, 1], [2, 0]] (3 x 2), W[1] = [[0, 1], [1, 0], [0, 0]]; b = (1, -1).
  auto bl =
      fx::nn::Bilinear(fx::tensor({1, 0, 0, 1, 2, 0, 0, 1, 1, 0, 0, 0}, fx::f64).reshape({2, 3, 2}),
                       fx::tensor({1, -1}, fx::f64));
  auto x1 = fx::tensor({1, 2, 3}, fx::f64).reshape({1, 3});
  auto x2 = fx::tensor({4, 5}, fx::f64).reshape({1, 2});
  // y0 = 1*4 + 2*5 + 3*2*4 + 1 = 39; y1 = 1*5 + 2*4 - 1 = 12.
  EXPECT_EQ(fx::to_vector<double>(bl(x1, x2)), (std::vector<double>{39, 12}));
}

TEST(Bilinear, GradientsMatchFiniteDifferences) {
  auto bl = fx::nn::Bilinear(fx::testing::randn({4, 3, 2}, {.seed = 1}),
                             fx::testing::randn({4}, {.seed = 2}), fx::tanh);
  auto x1 = fx::testing::randn({5, 3}, {.seed = 3}), x2 = fx::testing::randn({5, 2}, {.seed = 4});
  auto r = fx::testing::gradcheck(
      [](const fx::nn::Bilinear& m, const fx::Tensor& a, const fx::Tensor& b) { return m(a, b); },
      bl, x1, x2);
  EXPECT_TRUE(r) << r;
  auto sq = fx::nn::Bilinear(fx::testing::randn({2, 3, 3}, {.seed = 5}));  // one input, no bias
  auto r2 = fx::testing::gradcheck(
      [](const fx::nn::Bilinear& m, const fx::Tensor& a) { return m(a); }, sq, x1);
  EXPECT_TRUE(r2) << r2;
}

TEST(Bilinear, MismatchedInputsNameTheLayerAndShapes) {
  auto bl = fx::nn::Bilinear(3, 2, 4);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)bl(fx::zeros({5, 3}), fx::zeros({4, 2}));
      },
      {"fx::nn::Bilinear", "(5, 3)", "(4, 2)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)bl(fx::zeros({5, 2}), fx::zeros({5, 2}));
      },
      {"fx::nn::Bilinear", "(5, 2)"}));
}

}  // namespace
