#include <gtest/gtest.h>

#include <cmath>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>

TEST(Smoke, TanhGradient) {
  fx::Tensor x = fx::tensor({0.5, -1.0, 2.0}, fx::f64);
  auto g = fx::gradient([](const fx::Tensor& x) { return fx::sum(fx::tanh(x)); }, x);
  auto v = fx::to_vector<double>(g);
  EXPECT_NEAR(v[0], 1 - std::tanh(0.5) * std::tanh(0.5), 1e-12);
  std::cout << g << "\n";
}
