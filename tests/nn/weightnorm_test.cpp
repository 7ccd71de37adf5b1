#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(WeightNorm, StartsAsTheWrappedLayerAndSplitsMagnitudeFromDirection) {
  fx::Generator gen(3);
  auto d = fx::nn::Dense(3, 2, fx::identity, gen);
  d.weight = fx::tensor({3, 4, 0, 0, 0, 2}, fx::f32).reshape({2, 3});
  auto wn = fx::nn::WeightNorm(d);
  EXPECT_FALSE(wn.layer.weight.defined());                              // not a parameter twice
  EXPECT_EQ(fx::to_vector<double>(wn.g), (std::vector<double>{5, 2}));  // row norms, (2, 1)
  EXPECT_EQ(wn.g.shape(), (fx::Shape{2, 1}));
  auto x = fx::randn({4, 3}, gen);
  EXPECT_TRUE(fx::allclose(wn(x), d(x), 1e-5, 1e-6));
  wn.g = fx::tensor({10, 1}).reshape({2, 1});  // magnitudes only: rows (6, 8, 0) and (0, 0, 1)
  EXPECT_TRUE(
      fx::allclose(wn.materialise().weight, fx::tensor({6, 8, 0, 0, 0, 1}).reshape({2, 3})));
  EXPECT_EQ(fx::nn::parameter_count(wn), 2 + 6 + 2);  // g, v, bias
}

TEST(WeightNorm, GradientsMatchFiniteDifferences) {
  auto d = fx::nn::Dense(fx::testing::randn({2, 4}, {.seed = 1}),
                         fx::testing::randn({2}, {.seed = 2}), fx::tanh);
  auto wn = fx::nn::WeightNorm(d);
  auto x = fx::testing::randn({5, 4}, {.seed = 3});
  auto r = fx::testing::gradcheck([](const auto& m, const fx::Tensor& x) { return m(x); }, wn, x);
  EXPECT_TRUE(r) << r;
  auto wn1 = fx::nn::WeightNorm(d, 1);  // norms of columns: g (1, 4)
  EXPECT_EQ(wn1.g.shape(), (fx::Shape{1, 4}));
  auto r1 = fx::testing::gradcheck([](const auto& m, const fx::Tensor& x) { return m(x); }, wn1, x);
  EXPECT_TRUE(r1) << r1;
}

TEST(WeightNorm, BadDimNamesTheLayerAndShape) {
  EXPECT_TRUE(
      fx::testing::throws_mentioning([] { (void)fx::nn::WeightNorm(fx::nn::Dense(3, 2), 2); },
                                     {"fx::nn::WeightNorm", "dim 2", "(2, 3)"}));
}

}  // namespace
