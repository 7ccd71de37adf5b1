// fx::nn::pad in its five modes and fx::nn::flatten: values by hand, gradients, errors.
#include <gtest/gtest.h>

#include <fluxion/fluxion.hpp>
#include <fluxion/testing.hpp>

namespace {

using fx::nn::PadMode;

TEST(Pad, EachModeByHand) {
  auto x = fx::tensor({1, 2, 3}, fx::f64).reshape({1, 1, 3});
  auto v = [&](PadMode m, double value = 0) {
    return fx::to_vector<double>(fx::nn::pad(x, {2, 1}, m, value));
  };
  EXPECT_EQ(v(PadMode::zeros), (std::vector<double>{0, 0, 1, 2, 3, 0}));
  EXPECT_EQ(v(PadMode::constant, -1), (std::vector<double>{-1, -1, 1, 2, 3, -1}));
  EXPECT_EQ(v(PadMode::reflect), (std::vector<double>{3, 2, 1, 2, 3, 2}));
  EXPECT_EQ(v(PadMode::replicate), (std::vector<double>{1, 1, 1, 2, 3, 3}));
  EXPECT_EQ(v(PadMode::circular), (std::vector<double>{2, 3, 1, 2, 3, 1}));
  EXPECT_EQ(fx::nn::pad(fx::zeros({2, 3, 4, 5}), {1, 2, 0, 3}).shape(), (fx::Shape{2, 3, 7, 8}));
  EXPECT_EQ(fx::nn::flatten(fx::zeros({2, 3, 4, 5})).shape(), (fx::Shape{2, 60}));
}

TEST(Pad, GradientsMatchFiniteDifferences) {
  auto x = fx::testing::randn({1, 2, 3, 4}, {.seed = 1});
  for (auto m : {PadMode::zeros, PadMode::constant, PadMode::reflect, PadMode::replicate,
                 PadMode::circular}) {
    auto r = fx::testing::gradcheck(
        [&](const fx::Tensor& t) {
          return fx::sum(fx::sin(fx::nn::pad(t, {2, 1, 1, 3}, m, 0.5)));
        },
        x);
    EXPECT_TRUE(r) << int(m) << ": " << r;
  }
}

TEST(Pad, BadPaddingNamesTheShapes) {
  using fx::testing::throws_mentioning;
  auto x = fx::zeros({1, 1, 3});
  EXPECT_TRUE(throws_mentioning(
      [&] {
        (void)fx::nn::pad(x, {3, 0}, PadMode::reflect);
      },
      {"fx::nn::pad", "reflect", "(1, 1, 3)"}));
  EXPECT_TRUE(throws_mentioning(
      [&] {
        (void)fx::nn::pad(x, {-1, 0});
      },
      {"fx::nn::pad", "negative", "(1, 1, 3)"}));
  EXPECT_TRUE(throws_mentioning([&] { (void)fx::nn::pad(x, {1}); }, {"fx::nn::pad", "(1, 1, 3)"}));
}

}  // namespace
