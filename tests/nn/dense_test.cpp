#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/dense.hpp>
#include <fluxion/nn/functors.hpp>
#include <fluxion/nn/losses.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

TEST(Dense, ShapesFollowTheOutInConvention) {
  auto d = fx::nn::Dense(784, 256, fx::relu);
  EXPECT_EQ(d.weight.shape(), (fx::Shape{256, 784}));
  EXPECT_EQ(d.bias.shape(), (fx::Shape{256}));
  EXPECT_EQ(d.in_features(), 784);
  EXPECT_EQ(d.out_features(), 256);
  EXPECT_EQ(d(fx::zeros({32, 784})).shape(), (fx::Shape{32, 256}));
  EXPECT_EQ(d(fx::zeros({2, 5, 784})).shape(), (fx::Shape{2, 5, 256}));  // leading dims batch
  EXPECT_DOUBLE_EQ(fx::sum(fx::abs(d.bias)).item(), 0.0);                // bias starts at zero
}

TEST(Dense, ComputesActOfXTimesWeightTransposedPlusBias) {
  auto w = fx::tensor({1, 2, 3, -1, 0, 1}, fx::f64).reshape({2, 3});
  auto b = fx::tensor({0.5, -4}, fx::f64);
  auto d = fx::nn::Dense(w, b, fx::relu);
  auto x = fx::tensor({1, 1, 1, 2, 0, -1}, fx::f64).reshape({2, 3});
  // x @ w^T = [[6, 0], [-1, -3]]; + b = [[6.5, -4], [-0.5, -7]]; relu
  EXPECT_EQ(fx::to_vector<double>(d(x)), (std::vector<double>{6.5, 0, 0, 0}));
  auto nb = fx::nn::Dense(w);
  EXPECT_EQ(fx::to_vector<double>(nb(x)), (std::vector<double>{6, 0, -1, -3}));
}

TEST(Dense, GeneratorMakesInitialisationReproducible) {
  fx::Generator a(11), b(11);
  auto da = fx::nn::Dense(5, 3, fx::tanh, a);
  auto db = fx::nn::Dense(5, 3, fx::tanh, b);
  EXPECT_TRUE(fx::allclose(da.weight, db.weight, 0, 0));
  EXPECT_FALSE(fx::allclose(da.weight, fx::nn::Dense(5, 3, fx::tanh, a).weight, 0, 0));
}

TEST(Dense, WithoutBiasHasAnUndefinedBiasEverywhere) {
  auto d = fx::nn::Dense(3, 2, fx::identity, false);
  EXPECT_FALSE(d.bias.defined());
  EXPECT_EQ(fx::nn::parameter_count(d), 6);
  auto x = fx::testing::randn({4, 3}, {.seed = 1, .dtype = fx::f32});
  auto g = fx::gradient([&](const fx::nn::Dense& m) { return fx::sum(m(x)); }, d);
  EXPECT_EQ(g.weight.shape(), d.weight.shape());
  EXPECT_FALSE(g.bias.defined());
}

TEST(Dense, GradientsMatchFiniteDifferencesAndHaveTheLayersShape) {
  fx::Generator gen(3);
  auto d = fx::nn::Dense(4, 3, fx::tanh, gen);
  d.bias = fx::randn({3}, gen);  // a non-zero bias exercises the broadcast's pullback
  auto x = fx::testing::randn({5, 4}, {.seed = 2});
  auto y = fx::testing::randn({5, 3}, {.seed = 3});
  auto loss = [&](const fx::nn::Dense& m, const fx::Tensor& x) { return fx::mse(m(x), y); };
  auto r = fx::testing::gradcheck(loss, d, x);
  EXPECT_TRUE(r) << r;
  auto [gm, gx] = fx::gradient(loss, d, x);
  EXPECT_EQ(gm.weight.shape(), d.weight.shape());
  EXPECT_EQ(gm.bias.shape(), d.bias.shape());
  EXPECT_EQ(gx.shape(), x.shape());
  EXPECT_EQ(gm.act, d.act);
}

TEST(Dense, WrongInputWidthNamesTheLayerAndTheShapes) {
  auto d = fx::nn::Dense(8, 5);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        d(fx::zeros({4, 7}));
      },
      {"Dense", "(4, 7)", "(5, 8)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] {
        fx::nn::Dense(fx::zeros({5, 8}), fx::zeros({4}));
      },
      {"Dense", "(4,)", "(5, 8)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] {
        fx::nn::Dense()(fx::zeros({1, 1}));
      },
      {"Dense"}));
}

TEST(Dense, WeightGradientComesOutInTheWeightsLayout) {
  // The optimiser reads a contiguous gradient in place; a transposed one would cost a copy.
  auto d = fx::nn::Dense(6, 4, fx::relu);
  auto x = fx::randn({5, 6});
  auto g = fx::gradient([&](const fx::nn::Dense& m) { return fx::sum(m(x)); }, d);
  EXPECT_TRUE(g.weight.is_contiguous());
}

TEST(Dense, AnyLeadingShapeGivesTheSameRowsAsABatch) {
  fx::Generator gen(4);
  auto d = fx::nn::Dense(3, 2, fx::tanh, gen);
  auto x = fx::randn({2, 4, 3}, gen);
  auto flat = d(x.reshape({8, 3}));
  EXPECT_TRUE(fx::allclose(d(x).reshape({8, 2}), flat, 1e-6, 1e-7));
  EXPECT_EQ(d(fx::ones({3})).shape(), (fx::Shape{2}));
  auto r = fx::testing::gradcheck(
      [&](const fx::nn::Dense& m, const fx::Tensor& x) { return fx::sum(m(x) * m(x)); }, d, x);
  EXPECT_TRUE(r) << r;
}
