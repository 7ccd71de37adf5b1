#include <gtest/gtest.h>

#include <cmath>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/functors.hpp>
#include <fluxion/nn/losses.hpp>
#include <fluxion/nn/rnn_cell.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {
fx::Tensor col(std::initializer_list<double> v) {
  return fx::tensor(v, fx::f64).reshape({int64_t(v.size()), 1});
}
}  // namespace

TEST(RNNCell, ComputesActOfBothProjectionsPlusBiases) {
  fx::nn::RNNCell cell;
  cell.weight_ih = col({0.5, -2});  // (2, 1)
  cell.weight_hh = fx::tensor({-1, 0, 0.5, 1}, fx::f64).reshape({2, 2});
  cell.bias_ih = fx::tensor({0.1, 0}, fx::f64);
  cell.bias_hh = fx::tensor({0.2, 0.3}, fx::f64);
  auto x = col({2});  // (1, 1)
  auto h = fx::tensor({0.3, -0.4}, fx::f64).reshape({1, 2});
  auto [y, h1] = cell(x, h);
  // unit 0: 0.5*2 + 0.1 + (-1*0.3 + 0*-0.4) + 0.2 = 1.0; unit 1: -4 + 0 + (0.15 - 0.4) + 0.3 = -3.95
  auto v = fx::to_vector<double>(y);
  EXPECT_NEAR(v[0], std::tanh(1.0), 1e-14);
  EXPECT_NEAR(v[1], std::tanh(-3.95), 1e-14);
  EXPECT_TRUE(fx::allclose(y, h1, 0, 0));
  cell.act = fx::relu;
  EXPECT_EQ(fx::to_vector<double>(cell(x, h).first), (std::vector<double>{1.0, 0.0}));
}

TEST(RNNCell, ShapesInitialisationAndZeroState) {
  fx::Generator gen(1);
  auto cell = fx::nn::RNNCell(3, 5, fx::tanh, gen);
  EXPECT_EQ(cell.weight_ih.shape(), (fx::Shape{5, 3}));
  EXPECT_EQ(cell.weight_hh.shape(), (fx::Shape{5, 5}));
  EXPECT_EQ(cell.bias_hh.shape(), (fx::Shape{5}));
  // PyTorch's U(-1/sqrt(hidden), 1/sqrt(hidden)).
  EXPECT_LE(fx::max(fx::abs(cell.weight_hh)).item(), 1 / std::sqrt(5.0));
  auto x = fx::randn({4, 3}, gen);
  EXPECT_TRUE(fx::allclose(cell(x).first, cell(x, fx::zeros({4, 5})).first, 0, 0));
  EXPECT_EQ(cell(fx::randn({3}, gen)).first.shape(), (fx::Shape{5}));  // unbatched
  auto nb = fx::nn::RNNCell(3, 5, fx::tanh, gen, /*bias=*/false);
  EXPECT_FALSE(nb.bias_ih.defined());
  EXPECT_EQ(fx::nn::parameter_count(nb), 15 + 25);
}

TEST(RNNCell, GradientsMatchFiniteDifferencesToSecondOrder) {
  fx::Generator gen(2);
  auto cell = fx::nn::RNNCell(3, 4, fx::tanh, gen, true, fx::f64);
  auto x = fx::testing::randn({2, 3}, {.seed = 3});
  auto h = fx::testing::randn({2, 4}, {.seed = 4});
  auto f = [](const fx::nn::RNNCell& c, const fx::Tensor& x, const fx::Tensor& h) {
    auto [y, h1] = c(x, h);
    return c(x, h1).first * y;  // two steps
  };
  auto r = fx::testing::gradcheck(f, cell, x, h);
  EXPECT_TRUE(r) << r;
}

TEST(RNNCell, BadShapesNameTheCellAndShapes) {
  auto cell = fx::nn::RNNCell(3, 4);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)cell(fx::zeros({2, 5}));
      },
      {"fx::nn::RNNCell", "(2, 5)", "(4, 3)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)cell(fx::zeros({2, 3}), fx::zeros({3, 4}));
      },
      {"fx::nn::RNNCell", "(3, 4)", "(2, 4)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] {
        (void)fx::nn::RNNCell()(fx::zeros({1, 1}));
      },
      {"fx::nn::RNNCell"}));
}
