#include <gtest/gtest.h>

#include <cmath>

#include <fluxion/nn/activations.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

double at(const fx::Tensor& t, int64_t i) { return fx::to_vector<double>(t)[i]; }

}  // namespace

TEST(Activations, SoftmaxRowsSumToOneEvenForHugeLogits) {
  auto x = fx::tensor({1, 2, 3, 1000, 1001, 1002, -5, 0, 5}, fx::f32).reshape({3, 3});
  auto p = fx::softmax(x);
  auto rows = fx::to_vector<double>(fx::sum(p, {1}));
  for (double r : rows) EXPECT_NEAR(r, 1.0, 1e-6);
  // Shift invariance: row 1 is row 0 plus 999, so the probabilities agree.
  auto v = fx::to_vector<double>(p);
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(v[3 + j], v[j], 1e-6);
  EXPECT_NEAR(v[0], std::exp(1.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-6);
}

TEST(Activations, SoftmaxAlongAChosenAxis) {
  auto x = fx::testing::randn({3, 4}, {.seed = 1});
  auto cols = fx::to_vector<double>(fx::sum(fx::softmax(x, 0), {0}));
  for (double c : cols) EXPECT_NEAR(c, 1.0, 1e-12);
}

TEST(Activations, LogsoftmaxIsLogOfSoftmaxAndFiniteWhereSoftmaxUnderflows) {
  auto x = fx::testing::randn({4, 5}, {.seed = 3});
  EXPECT_TRUE(fx::allclose(fx::logsoftmax(x), fx::log(fx::softmax(x)), 1e-12, 1e-12));
  auto far = fx::tensor({0, -2000}, fx::f64);
  auto lp = fx::to_vector<double>(fx::logsoftmax(far));
  EXPECT_NEAR(lp[0], 0.0, 1e-12);
  EXPECT_NEAR(lp[1], -2000.0, 1e-9);
}

TEST(Activations, ValuesAtKnownPoints) {
  auto x = fx::tensor({-2, -1, -0.5, 1}, fx::f64);
  EXPECT_NEAR(at(fx::leakyrelu(x), 0), -0.02, 1e-15);
  EXPECT_NEAR(at(fx::leakyrelu(x, 0.2), 1), -0.2, 1e-15);
  EXPECT_NEAR(at(fx::leakyrelu(x), 3), 1.0, 1e-15);
  EXPECT_NEAR(at(fx::elu(x), 1), std::exp(-1.0) - 1, 1e-15);
  EXPECT_NEAR(at(fx::elu(x, 2.0), 0), 2 * (std::exp(-2.0) - 1), 1e-15);
  EXPECT_NEAR(at(fx::gelu(x), 3), 0.8411919906082768, 1e-14);  // tanh approximation
  EXPECT_NEAR(at(fx::gelu(x), 2), -0.15428599017485606, 1e-14);
  EXPECT_NEAR(at(fx::swish(x), 3), 1 / (1 + std::exp(-1.0)), 1e-15);
}

TEST(Activations, OneArgumentOverloadsAreActivations) {
  fx::Activation all[] = {fx::relu,     fx::sigmoid, fx::tanh,       fx::identity,
                          fx::softplus, fx::softmax, fx::logsoftmax, fx::leakyrelu,
                          fx::elu,      fx::gelu,    fx::swish};
  auto x = fx::testing::randn({2, 3}, {.seed = 4});
  for (fx::Activation f : all) EXPECT_EQ(f(x).shape(), x.shape());
}

TEST(Activations, GradientsMatchFiniteDifferencesToSecondOrder) {
  // Random inputs keep leakyrelu/elu away from their kink at 0.
  auto x = fx::testing::randn({3, 4}, {.seed = 5});
  auto w = fx::testing::randn({3, 4}, {.seed = 6});  // a weighted sum sees every entry
  fx::Activation fs[] = {fx::softmax, fx::logsoftmax, fx::leakyrelu, fx::elu, fx::gelu, fx::swish};
  const char* names[] = {"softmax", "logsoftmax", "leakyrelu", "elu", "gelu", "swish"};
  for (int i = 0; i < 6; ++i) {
    fx::Activation f = fs[i];
    auto r = fx::testing::gradcheck([&](const fx::Tensor& x) { return fx::sum(f(x) * w); }, x);
    EXPECT_TRUE(r) << names[i] << ": " << r;
  }
  auto r0 = fx::testing::gradcheck(
      [&](const fx::Tensor& x) { return fx::sum(fx::softmax(x, 0) * w); }, x);
  EXPECT_TRUE(r0) << "softmax axis 0: " << r0;
}

TEST(Activations, EluGradientStaysFiniteForLargeInputs) {
  auto x = fx::tensor({-3, 100, 1000}, fx::f32);
  auto g = fx::to_vector<double>(
      fx::gradient([](const fx::Tensor& x) { return fx::sum(fx::elu(x)); }, x));
  EXPECT_NEAR(g[0], std::exp(-3.0), 1e-6);
  EXPECT_EQ(g[1], 1.0);
  EXPECT_EQ(g[2], 1.0);
}

TEST(Activations, SoftmaxGradientIsFiniteForHugeLogits) {
  auto x = fx::tensor({1000, 0, -1000}, fx::f32);
  auto g = fx::to_vector<double>(fx::gradient(
      [](const fx::Tensor& x) {
        return fx::sum(fx::logsoftmax(x) * fx::tensor({1, 2, 3}));
      },
      x));
  for (double v : g) EXPECT_TRUE(std::isfinite(v));
}
