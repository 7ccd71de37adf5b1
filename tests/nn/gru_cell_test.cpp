#include <gtest/gtest.h>

#include <cmath>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/gru_cell.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {
double sig(double v) { return 1 / (1 + std::exp(-v)); }
fx::Tensor s11(double v) { return fx::tensor({v}, fx::f64).reshape({1, 1}); }
}  // namespace

TEST(GRUCell, ResetGateScalesTheStatesProjectionAfterTheProduct) {
  fx::nn::GRUCell cell;
  cell.weight_ih = fx::tensor({0.5, -1, 2}, fx::f64).reshape({3, 1});
  cell.weight_hh = fx::tensor({1, 0.5, -0.5}, fx::f64).reshape({3, 1});
  cell.bias_ih = fx::tensor({0.1, 0.2, 0.3}, fx::f64);
  cell.bias_hh = fx::tensor({0, -0.1, 0.7}, fx::f64);
  const double x = 0.8, h = -0.3;
  auto [y, h1] = cell(s11(x), s11(h));
  const double r = sig(0.5 * x + 0.1 + h), z = sig(-x + 0.2 + 0.5 * h - 0.1);
  const double n = std::tanh(2 * x + 0.3 + r * (-0.5 * h + 0.7));
  EXPECT_NEAR(h1.item(), (1 - z) * n + z * h, 1e-14);
  EXPECT_NEAR(y.item(), h1.item(), 0);
}

TEST(GRUCell, ShapesAndZeroState) {
  fx::Generator gen(1);
  auto cell = fx::nn::GRUCell(3, 5, gen);
  EXPECT_EQ(cell.weight_ih.shape(), (fx::Shape{15, 3}));
  EXPECT_EQ(cell.weight_hh.shape(), (fx::Shape{15, 5}));
  auto x = fx::randn({4, 3}, gen);
  EXPECT_TRUE(fx::allclose(cell(x).first, cell(x, fx::zeros({4, 5})).first, 0, 0));
  EXPECT_EQ(cell(fx::randn({3}, gen)).first.shape(), (fx::Shape{5}));
}

TEST(GRUCell, GradientsMatchFiniteDifferencesToSecondOrder) {
  fx::Generator gen(2);
  auto cell = fx::nn::GRUCell(3, 4, gen, true, fx::f64);
  auto x = fx::testing::randn({2, 3}, {.seed = 3});
  auto h = fx::testing::randn({2, 4}, {.seed = 4});
  auto f = [](const fx::nn::GRUCell& c, const fx::Tensor& x, const fx::Tensor& h) {
    auto [y, h1] = c(x, h);
    return c(x, h1).first * y;
  };
  auto r = fx::testing::gradcheck(f, cell, x, h);
  EXPECT_TRUE(r) << r;
}

TEST(GRUCell, BadShapesNameTheCellAndShapes) {
  auto cell = fx::nn::GRUCell(3, 4);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)cell(fx::zeros({2, 2, 3}));
      },
      {"fx::nn::GRUCell", "(2, 2, 3)", "(12, 3)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)cell(fx::zeros({2, 3}), fx::zeros({4}));
      },
      {"fx::nn::GRUCell", "(4,)", "(2, 4)"}));
}
