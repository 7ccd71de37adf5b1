#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(SkipConnection, JoinsTheLayersOutputWithItsInput) {
  fx::Generator gen(1);
  auto res = fx::nn::SkipConnection(fx::nn::Dense(3, 3, fx::relu, gen), fx::nn::add_outputs);
  auto x = fx::randn({4, 3}, gen);
  EXPECT_TRUE(fx::allclose(res(x), res.layer(x) + x));
  auto cat =
      fx::nn::SkipConnection(fx::nn::Dense(3, 2, fx::identity, gen), fx::nn::concat_features);
  auto y = cat(x);
  EXPECT_EQ(y.shape(), (fx::Shape{4, 5}));
  EXPECT_TRUE(fx::allclose(fx::slice(y, 1, 2, 5), x));
}

TEST(SkipConnection, GradientsMatchFiniteDifferencesAndTrainTheConnection) {
  // A connection with parameters: a Bilinear of (layer output, input).
  auto sc = fx::nn::SkipConnection(fx::nn::Dense(fx::testing::randn({2, 3}, {.seed = 1})),
                                   fx::nn::Bilinear(fx::testing::randn({1, 2, 3}, {.seed = 2})));
  EXPECT_EQ(fx::nn::parameter_count(sc), 6 + 6);
  auto x = fx::testing::randn({4, 3}, {.seed = 3});
  auto r = fx::testing::gradcheck([](const auto& m, const fx::Tensor& x) { return m(x); }, sc, x);
  EXPECT_TRUE(r) << r;
}

}  // namespace
