#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <fluxion/nn/init.hpp>
#include <fluxion/ops.hpp>

namespace {

struct Moments {
  double mean = 0, std = 0, absmax = 0;
};
Moments moments(const fx::Tensor& t) {
  auto v = fx::to_vector<double>(t);
  Moments m;
  for (double x : v) m.mean += x / double(v.size());
  for (double x : v) {
    m.std += (x - m.mean) * (x - m.mean) / double(v.size());
    m.absmax = std::max(m.absmax, std::abs(x));
  }
  m.std = std::sqrt(m.std);
  return m;
}

}  // namespace

TEST(Init, FansFollowTheOutInConvention) {
  auto d = fx::nn::fans({256, 784});
  EXPECT_EQ(d.in, 784);
  EXPECT_EQ(d.out, 256);
  auto c = fx::nn::fans({64, 3, 5, 5});
  EXPECT_EQ(c.in, 3 * 25);
  EXPECT_EQ(c.out, 64 * 25);
  auto v = fx::nn::fans({7});
  EXPECT_EQ(v.in, 1);
  EXPECT_EQ(v.out, 7);
}

TEST(Init, GlorotUniformStaysInItsBoundWithTheRightSpread) {
  fx::Generator gen(1);
  auto w = fx::nn::glorot_uniform({300, 500}, gen);
  EXPECT_EQ(w.dtype(), fx::f32);
  double a = std::sqrt(6.0 / 800);
  auto m = moments(w);
  EXPECT_LE(m.absmax, a);
  EXPECT_GT(m.absmax, 0.99 * a);
  EXPECT_NEAR(m.std, a / std::sqrt(3.0), 0.01 * a);
  EXPECT_NEAR(m.mean, 0, 0.01 * a);
}

TEST(Init, NormalInitialisersHaveTheirStandardDeviation) {
  fx::Generator gen(2);
  EXPECT_NEAR(moments(fx::nn::glorot_normal({300, 500}, gen)).std, std::sqrt(2.0 / 800), 2e-3);
  EXPECT_NEAR(moments(fx::nn::kaiming_normal({300, 500}, gen)).std, std::sqrt(2.0 / 500), 2e-3);
  EXPECT_NEAR(moments(fx::nn::kaiming_normal({300, 500}, gen, 1.0)).std, std::sqrt(1.0 / 500),
              2e-3);
  auto k = moments(fx::nn::kaiming_uniform({300, 500}, gen));
  EXPECT_LE(k.absmax, std::sqrt(6.0 / 500));
  EXPECT_NEAR(k.std, std::sqrt(2.0 / 500), 2e-3);
}

TEST(Init, SameSeedSameWeightsAndDtypeIsHonoured) {
  fx::Generator a(9), b(9);
  auto wa = fx::nn::glorot_uniform({4, 3}, a, 1.0, fx::f64);
  auto wb = fx::nn::glorot_uniform({4, 3}, b, 1.0, fx::f64);
  EXPECT_EQ(wa.dtype(), fx::f64);
  EXPECT_TRUE(fx::allclose(wa, wb, 0, 0));
  fx::manual_seed(3);
  auto da = fx::nn::kaiming_uniform({4, 3});
  fx::manual_seed(3);
  EXPECT_TRUE(fx::allclose(da, fx::nn::kaiming_uniform({4, 3}), 0, 0));
}

TEST(Init, EmptyShapesGiveEmptyTensors) {
  EXPECT_EQ(fx::nn::glorot_uniform({0, 5}).numel(), 0);
  EXPECT_EQ(fx::nn::kaiming_normal({3, 0}).shape(), (fx::Shape{3, 0}));
}
