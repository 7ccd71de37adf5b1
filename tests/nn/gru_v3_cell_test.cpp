#include <gtest/gtest.h>

#include <cmath>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/gru_cell.hpp>
#include <fluxion/nn/gru_v3_cell.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {
double sig(double v) { return 1 / (1 + std::exp(-v)); }
}  // namespace

TEST(GRUv3Cell, ResetGateScalesTheStateBeforeTheProduct) {
  // Two hidden units so that the candidate's product mixes r * h across units.
  fx::nn::GRUv3Cell cell;
  cell.weight_ih = fx::tensor({0.5, -1, 2, 1, 0.3, -0.2}, fx::f64).reshape({6, 1});
  cell.weight_hh =
      fx::tensor({1, 0, 0, 1, 0.5, 0, 0, 0.5, -0.5, 1.5, 2, -1}, fx::f64).reshape({6, 2});
  cell.bias_ih = fx::zeros({6}, fx::f64);
  cell.bias_hh = fx::tensor({0, 0, 0, 0, 0.7, -0.4}, fx::f64);
  const double x = 0.8, h[2] = {-0.3, 0.9};
  auto [y, h1] = cell(fx::tensor({x}, fx::f64).reshape({1, 1}),
                      fx::tensor({h[0], h[1]}, fx::f64).reshape({1, 2}));
  const double r[2] = {sig(0.5 * x + h[0]), sig(-1 * x + h[1])};
  const double z[2] = {sig(2 * x + 0.5 * h[0]), sig(1 * x + 0.5 * h[1])};
  const double n0 = std::tanh(0.3 * x + (-0.5 * r[0] * h[0] + 1.5 * r[1] * h[1]) + 0.7);
  const double n1 = std::tanh(-0.2 * x + (2 * r[0] * h[0] - 1 * r[1] * h[1]) - 0.4);
  auto v = fx::to_vector<double>(h1);
  EXPECT_NEAR(v[0], (1 - z[0]) * n0 + z[0] * h[0], 1e-14);
  EXPECT_NEAR(v[1], (1 - z[1]) * n1 + z[1] * h[1], 1e-14);
  // The same weights in a GRUCell give another value: the forms differ where r != 1.
  fx::nn::GRUCell v1;
  v1.weight_ih = cell.weight_ih;
  v1.weight_hh = cell.weight_hh;
  v1.bias_ih = cell.bias_ih;
  v1.bias_hh = cell.bias_hh;
  EXPECT_FALSE(fx::allclose(v1(fx::tensor({x}, fx::f64).reshape({1, 1}),
                               fx::tensor({h[0], h[1]}, fx::f64).reshape({1, 2}))
                                .first,
                            y, 1e-6, 1e-6));
}

TEST(GRUv3Cell, GradientsMatchFiniteDifferencesToSecondOrder) {
  fx::Generator gen(2);
  auto cell = fx::nn::GRUv3Cell(3, 4, gen, true, fx::f64);
  auto x = fx::testing::randn({2, 3}, {.seed = 3});
  auto h = fx::testing::randn({2, 4}, {.seed = 4});
  auto f = [](const fx::nn::GRUv3Cell& c, const fx::Tensor& x, const fx::Tensor& h) {
    auto [y, h1] = c(x, h);
    return c(x, h1).first * y;
  };
  auto r = fx::testing::gradcheck(f, cell, x, h);
  EXPECT_TRUE(r) << r;
  auto nb = fx::nn::GRUv3Cell(3, 4, gen, /*bias=*/false, fx::f64);
  EXPECT_EQ(nb(x).first.shape(), (fx::Shape{2, 4}));
}

TEST(GRUv3Cell, BadShapesNameTheCellAndShapes) {
  auto cell = fx::nn::GRUv3Cell(3, 4);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)cell(fx::zeros({2, 7}));
      },
      {"fx::nn::GRUv3Cell", "(2, 7)", "(12, 3)"}));
}
