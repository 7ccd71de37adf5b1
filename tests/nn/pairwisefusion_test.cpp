#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(PairwiseFusion, FeedsEachStepThePreviousOutputJoinedWithItsInput) {
  fx::Generator gen(1);
  auto pf = fx::nn::PairwiseFusion(fx::nn::add_outputs, fx::nn::Dense(3, 3, fx::tanh, gen),
                                   fx::nn::Dense(3, 3, fx::identity, gen),
                                   fx::nn::Dense(3, 2, fx::identity, gen));
  auto x1 = fx::randn({4, 3}, gen), x2 = fx::randn({4, 3}, gen), x3 = fx::randn({4, 3}, gen);
  auto [y1, y2, y3] = pf(x1, x2, x3);
  auto& [d1, d2, d3] = pf.layers;
  EXPECT_TRUE(fx::allclose(y1, d1(x1)));
  EXPECT_TRUE(fx::allclose(y2, d2(d1(x1) + x2)));
  EXPECT_TRUE(fx::allclose(y3, d3(d2(d1(x1) + x2) + x3)));
  auto [z1, z2, z3] = pf(x1);  // one input for every step
  EXPECT_TRUE(fx::allclose(z3, d3(d2(d1(x1) + x1) + x1)));
}

TEST(PairwiseFusion, GradientsMatchFiniteDifferences) {
  auto pf = fx::nn::PairwiseFusion(
      fx::nn::add_outputs, fx::nn::Dense(fx::testing::randn({3, 3}, {.seed = 1}), {}, fx::tanh),
      fx::nn::Dense(fx::testing::randn({3, 3}, {.seed = 2})));
  auto x = fx::testing::randn({4, 3}, {.seed = 3}), w = fx::testing::randn({4, 3}, {.seed = 4});
  auto r = fx::testing::gradcheck(
      [](const auto& m, const fx::Tensor& a, const fx::Tensor& b) {
        auto [y1, y2] = m(a, b);
        return y1 * 2.0 + y2;
      },
      pf, x, w);
  EXPECT_TRUE(r) << r;
}

}  // namespace
