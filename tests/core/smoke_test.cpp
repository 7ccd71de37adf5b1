#include <gtest/gtest.h>

#include <cmath>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

TEST(Smoke, TanhGradient) {
  fx::Tensor x = fx::tensor({0.5, -1.0, 2.0}, fx::f64);
  auto g = fx::gradient([](const fx::Tensor& x) { return fx::sum(fx::tanh(x)); }, x);
  auto v = fx::to_vector<double>(g);
  EXPECT_NEAR(v[0], 1 - std::tanh(0.5) * std::tanh(0.5), 1e-12);
}

TEST(Smoke, GradcheckSecondOrder) {
  auto x = fx::testing::randn({3, 4}, {.seed = 1});
  auto w = fx::testing::randn({4, 2}, {.seed = 2});
  auto f = [](const fx::Tensor& x, const fx::Tensor& w) {
    return fx::tanh(fx::matmul(x, w)) * fx::sigmoid(fx::sum(x, {1}, true));
  };
  auto r = fx::testing::gradcheck(f, x, w);
  EXPECT_TRUE(r) << r;
}
