#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(Maxout, TakesTheElementwiseMaximumOfItsPieces) {
  fx::Generator gen(1);
  auto mo =
      fx::nn::Maxout<fx::nn::Dense>(3, [&] { return fx::nn::Dense(4, 2, fx::identity, gen); });
  EXPECT_EQ(mo.layers.size(), 3u);
  EXPECT_EQ(fx::nn::parameter_count(mo), 3 * (8 + 2));
  auto x = fx::randn({5, 4}, gen);
  auto want = fx::maximum(fx::maximum(mo.layers[0](x), mo.layers[1](x)), mo.layers[2](x));
  EXPECT_TRUE(fx::allclose(mo(x), want));
}

TEST(Maxout, GradientsMatchFiniteDifferences) {
  auto mo = fx::nn::Maxout<fx::nn::Dense>(
      {fx::nn::Dense(fx::testing::randn({2, 3}, {.seed = 1}), fx::testing::randn({2}, {.seed = 2})),
       fx::nn::Dense(fx::testing::randn({2, 3}, {.seed = 3}),
                     fx::testing::randn({2}, {.seed = 4}))});
  auto x = fx::testing::randn({6, 3}, {.seed = 5});
  auto r = fx::testing::gradcheck([](const auto& m, const fx::Tensor& x) { return m(x); }, mo, x);
  EXPECT_TRUE(r) << r;
}

TEST(Maxout, PiecesOfDifferentShapesNameTheLayer) {
  auto mo = fx::nn::Maxout<fx::nn::Dense>({fx::nn::Dense(3, 2), fx::nn::Dense(3, 4)});
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)mo(fx::zeros({5, 3}));
      },
      {"fx::nn::Maxout", "(5, 4)", "(5, 2)"}));
}

}  // namespace
