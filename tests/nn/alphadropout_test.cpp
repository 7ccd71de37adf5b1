#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(AlphaDropout, KeepsMeanAndVarianceOfStandardInputs) {
  fx::Generator gen(1), data(2);
  auto ad = fx::nn::AlphaDropout(0.2, &gen);
  auto x = fx::randn({200000}, data, fx::f64);
  EXPECT_EQ(fx::to_vector<double>(ad(x)), fx::to_vector<double>(x));  // test time: identity
  fx::nn::trainmode(ad);
  auto y = ad(x);
  const double m = fx::mean(y).item(), v = fx::mean(fx::square(y - m)).item();
  EXPECT_NEAR(m, 0, 0.01);
  EXPECT_NEAR(v, 1, 0.02);
  // Dropped values all take one value, a * alpha' + b.
  const double a = 1 / std::sqrt(0.8 * (1 + 0.2 * fx::nn::AlphaDropout::kAlphaPrime *
                                                fx::nn::AlphaDropout::kAlphaPrime));
  const double dropped =
      a * fx::nn::AlphaDropout::kAlphaPrime - a * fx::nn::AlphaDropout::kAlphaPrime * 0.2;
  auto frac = fx::mean(fx::astype(fx::abs(y - dropped) < 1e-12, fx::f64)).item();
  EXPECT_NEAR(frac, 0.2, 0.005);
}

TEST(AlphaDropout, GradientsMatchFiniteDifferencesWithAFixedMask) {
  auto x = fx::testing::randn({5, 4}, {.seed = 4});
  auto f = [](const fx::Tensor& t) {
    fx::Generator g(12);
    auto d = fx::nn::AlphaDropout(0.4, &g);
    fx::nn::trainmode(d);
    return fx::tanh(d(t));
  };
  auto r = fx::testing::gradcheck(f, x);
  EXPECT_TRUE(r) << r;
}

TEST(AlphaDropout, BadProbabilityNamesTheLayer) {
  EXPECT_TRUE(fx::testing::throws_mentioning([] { (void)fx::nn::AlphaDropout(-0.1); },
                                             {"fx::nn::AlphaDropout", "-0.1"}));
}

}  // namespace
