#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(LayerNorm, NormalisesTheTrailingAxes) {
  auto ln = fx::nn::LayerNorm(4, fx::identity, true, 0.0, fx::f64);
  auto x = fx::tensor({1, 2, 3, 6, -1, -1, 1, 1}, fx::f64).reshape({2, 4});
  // row 0: mean 3, biased var (4 + 1 + 0 + 9) / 4 = 3.5; row 1: mean 0, var 1.
  auto y = fx::to_vector<double>(ln(x));
  const double s = 1 / std::sqrt(3.5);
  std::vector<double> want{-2 * s, -s, 0, 3 * s, -1, -1, 1, 1};
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-12) << i;
  auto ln2 = fx::nn::LayerNorm({3, 4}, fx::identity, false);
  auto z = ln2(fx::randn({5, 3, 4}) * 3.0 + 2.0);
  EXPECT_TRUE(fx::allclose(fx::mean(z, {1, 2}), fx::zeros({5}), 1e-5, 1e-5));
  EXPECT_TRUE(fx::allclose(fx::mean(fx::square(z), {1, 2}), fx::ones({5}), 1e-4, 1e-4));
}

TEST(LayerNorm, GradientsMatchFiniteDifferences) {
  auto ln = fx::nn::LayerNorm({2, 3}, fx::tanh, true, 1e-5, fx::f64);
  ln.scale = fx::testing::randn({2, 3}, {.seed = 1});
  ln.bias = fx::testing::randn({2, 3}, {.seed = 2});
  auto x = fx::testing::randn({4, 2, 3}, {.seed = 3});
  auto r = fx::testing::gradcheck(
      [](const fx::nn::LayerNorm& m, const fx::Tensor& x) { return m(x); }, ln, x);
  EXPECT_TRUE(r) << r;
}

TEST(LayerNorm, WrongTrailingShapeNamesTheLayerAndShapes) {
  auto ln = fx::nn::LayerNorm({3, 4});
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)ln(fx::zeros({2, 4, 3}));
      },
      {"fx::nn::LayerNorm", "(2, 4, 3)", "(3, 4)"}));
}

}  // namespace
