#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(Dropout, IdentityAtTestTimeInvertedScalingInTraining) {
  fx::Generator gen(1);
  auto drop = fx::nn::Dropout(0.25, {}, &gen);
  auto x = fx::ones({100, 100}, fx::f64);
  EXPECT_EQ(fx::to_vector<double>(drop(x)), fx::to_vector<double>(x));  // automatic: test
  fx::nn::trainmode(drop);
  auto y = fx::to_vector<double>(drop(x));
  int zeros = 0;
  for (double v : y) {
    if (v == 0) ++zeros;
    else EXPECT_DOUBLE_EQ(v, 1 / 0.75);
  }
  EXPECT_NEAR(zeros / 10000.0, 0.25, 0.02);  // 4.6 standard deviations
}

TEST(Dropout, ChannelDropoutDropsWholeFeatureMaps) {
  fx::Generator gen(2);
  auto drop = fx::nn::Dropout(0.5, {0, 1}, &gen);
  fx::nn::trainmode(drop);
  auto y = drop(fx::ones({8, 6, 3, 3}));
  auto per_map = fx::to_vector<double>(fx::sum(fx::reshape(y, {48, 9}) == 0.0, {1}));
  int dropped = 0;
  for (double n : per_map) {
    EXPECT_TRUE(n == 0 || n == 9) << n;  // a map is kept or dropped as a whole
    dropped += n == 9;
  }
  EXPECT_GT(dropped, 8);
  EXPECT_LT(dropped, 40);
}

TEST(Dropout, GradientIsTheScaledMaskAndAppliesInsideGradient) {
  auto x = fx::randn({50}, fx::f64);
  // Two generators seeded alike draw the same mask: d/dx sum(dropout(x)) is that mask / (1 - p),
  // and the automatic mode applies it inside the gradient.
  fx::Generator a(9), b(9);
  auto da = fx::nn::Dropout(0.5, {}, &a), db = fx::nn::Dropout(0.5, {}, &b);
  auto yv = fx::gradient([&](const fx::Tensor& t) { return fx::sum(da(t)); }, x);
  fx::nn::trainmode(db);
  auto mask = db(fx::ones({50}, fx::f64));  // the same draw, outside: 0 or 2
  EXPECT_TRUE(fx::allclose(yv, mask));
  auto vals = fx::to_vector<double>(mask);
  EXPECT_TRUE(std::any_of(vals.begin(), vals.end(), [](double v) { return v == 0; }));
}

TEST(Dropout, GradientsMatchFiniteDifferencesWithAFixedMask) {
  // trainmode with a fresh generator per call: every evaluation draws the same mask.
  auto x = fx::testing::randn({6, 4}, {.seed = 4});
  auto f = [](const fx::Tensor& t) {
    fx::Generator g(11);
    auto d = fx::nn::Dropout(0.3, {1}, &g);
    fx::nn::trainmode(d);
    return fx::tanh(d(t));
  };
  auto r = fx::testing::gradcheck(f, x);
  EXPECT_TRUE(r) << r;
}

TEST(Dropout, BadProbabilityOrAxisNamesTheLayer) {
  EXPECT_TRUE(fx::testing::throws_mentioning([] { (void)fx::nn::Dropout(1.5); },
                                             {"fx::nn::Dropout", "1.5"}));
  auto d = fx::nn::Dropout(0.5, {3});
  fx::nn::trainmode(d);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)d(fx::zeros({2, 3}));
      },
      {"fx::nn::Dropout", "axis 3", "(2, 3)"}));
}

}  // namespace
