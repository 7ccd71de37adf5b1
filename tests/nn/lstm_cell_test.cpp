#include <gtest/gtest.h>

#include <cmath>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/lstm_cell.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {
double sig(double v) { return 1 / (1 + std::exp(-v)); }
}  // namespace

TEST(LSTMCell, FollowsTheGateOrderIFGO) {
  // One input, one hidden unit: each gate's pre-activation is w_ih * x + w_hh * h + biases.
  fx::nn::LSTMCell cell;
  cell.weight_ih = fx::tensor({0.5, -1, 2, 0.25}, fx::f64).reshape({4, 1});
  cell.weight_hh = fx::tensor({1, 0.5, -0.5, 2}, fx::f64).reshape({4, 1});
  cell.bias_ih = fx::tensor({0.1, 0.2, 0.3, 0.4}, fx::f64);
  cell.bias_hh = fx::tensor({0, -0.1, 0, 0.1}, fx::f64);
  const double x = 0.8, h = -0.3, c = 0.6;
  auto [y, s] =
      cell(fx::tensor({x}, fx::f64).reshape({1, 1}),
           {fx::tensor({h}, fx::f64).reshape({1, 1}), fx::tensor({c}, fx::f64).reshape({1, 1})});
  const double i = sig(0.5 * x + 1 * h + 0.1), f = sig(-1 * x + 0.5 * h + 0.1),
               g = std::tanh(2 * x - 0.5 * h + 0.3), o = sig(0.25 * x + 2 * h + 0.5);
  const double c1 = f * c + i * g, h1 = o * std::tanh(c1);
  EXPECT_NEAR(s.c.item(), c1, 1e-14);
  EXPECT_NEAR(s.h.item(), h1, 1e-14);
  EXPECT_NEAR(y.item(), h1, 1e-14);
}

TEST(LSTMCell, ShapesAndZeroState) {
  fx::Generator gen(1);
  auto cell = fx::nn::LSTMCell(3, 5, gen);
  EXPECT_EQ(cell.weight_ih.shape(), (fx::Shape{20, 3}));
  EXPECT_EQ(cell.weight_hh.shape(), (fx::Shape{20, 5}));
  EXPECT_EQ(cell.bias_ih.shape(), (fx::Shape{20}));
  auto x = fx::randn({4, 3}, gen);
  auto [y, s] = cell(x);
  EXPECT_EQ(s.c.shape(), (fx::Shape{4, 5}));
  auto z = fx::zeros({4, 5});
  EXPECT_TRUE(fx::allclose(y, cell(x, {z, z}).first, 0, 0));
  EXPECT_EQ(cell(fx::randn({3}, gen)).second.h.shape(), (fx::Shape{5}));
}

TEST(LSTMCell, GradientsMatchFiniteDifferencesToSecondOrder) {
  fx::Generator gen(2);
  auto cell = fx::nn::LSTMCell(3, 4, gen, true, fx::f64);
  auto x = fx::testing::randn({2, 3}, {.seed = 3});
  fx::nn::LSTMState s{fx::testing::randn({2, 4}, {.seed = 4}),
                      fx::testing::randn({2, 4}, {.seed = 5})};
  auto f = [](const fx::nn::LSTMCell& c, const fx::Tensor& x, const fx::nn::LSTMState& s) {
    auto [y, s1] = c(x, s);
    auto [y2, s2] = c(x, s1);
    return y2 + s2.c * y;
  };
  auto r = fx::testing::gradcheck(f, cell, x, s);
  EXPECT_TRUE(r) << r;
}

TEST(LSTMCell, BadShapesNameTheCellAndShapes) {
  auto cell = fx::nn::LSTMCell(3, 4);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)cell(fx::zeros({2, 2}));
      },
      {"fx::nn::LSTMCell", "(2, 2)", "(16, 3)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)cell(fx::zeros({2, 3}), {fx::zeros({2, 4}), fx::zeros({2, 5})});
      },
      {"fx::nn::LSTMCell", "c", "(2, 5)", "(2, 4)"}));
}
