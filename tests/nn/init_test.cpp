#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <fluxion/linalg.hpp>
#include <fluxion/nn/init.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

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

TEST(Init, LecunInitialisersScaleByFanIn) {
  fx::Generator gen(4);
  auto u = moments(fx::nn::lecun_uniform({300, 500}, gen));
  EXPECT_LE(u.absmax, std::sqrt(3.0 / 500));
  EXPECT_GT(u.absmax, 0.99 * std::sqrt(3.0 / 500));
  EXPECT_NEAR(u.std, std::sqrt(1.0 / 500), 0.01 * std::sqrt(1.0 / 500));
  auto n = moments(fx::nn::lecun_normal({300, 500}, gen));
  EXPECT_NEAR(n.std, std::sqrt(1.0 / 500), 0.01 * std::sqrt(1.0 / 500));
  EXPECT_NEAR(n.mean, 0, 0.01 * std::sqrt(1.0 / 500));
  auto c = moments(fx::nn::lecun_normal({64, 8, 3, 3}, gen, 2.0));  // fan_in 72, gain 2
  EXPECT_NEAR(c.std, 2 / std::sqrt(72.0), 0.03 * 2 / std::sqrt(72.0));
}

TEST(Init, TruncatedNormalStaysInBoundsWithTheTruncatedMoments) {
  fx::Generator gen(5);
  auto w = fx::nn::truncated_normal({400, 500}, gen, {}, fx::f64);
  EXPECT_EQ(w.dtype(), fx::f64);
  auto m = moments(w);
  EXPECT_LE(m.absmax, 2.0);
  EXPECT_GT(m.absmax, 1.99);
  // N(0, 1) truncated to [-2, 2]: variance 1 - 2 * 2 phi(2) / (2 Phi(2) - 1).
  const double phi2 = std::exp(-2.0) / std::sqrt(2 * M_PI), mass = std::erf(2 / M_SQRT2);
  EXPECT_NEAR(m.std, std::sqrt(1 - 4 * phi2 / mass), 5e-3);  // ~3.5 sd of the estimate
  EXPECT_NEAR(m.mean, 0, 8e-3);
  // A shifted, one-sided window: mean + std (phi(a) - phi(b)) / (Phi(b) - Phi(a)).
  auto s =
      moments(fx::nn::truncated_normal({400, 500}, gen, {.mean = 1, .std = 0.5, .lo = 1, .hi = 3}));
  auto v = fx::to_vector<double>(
      fx::nn::truncated_normal({1000}, gen, {.mean = 1, .std = 0.5, .lo = 1, .hi = 3}));
  EXPECT_GE(*std::min_element(v.begin(), v.end()), 1.0);
  EXPECT_LE(*std::max_element(v.begin(), v.end()), 3.0);
  const double a_phi = 1 / std::sqrt(2 * M_PI), b_phi = std::exp(-8.0) / std::sqrt(2 * M_PI);
  const double z = 0.5 * (std::erf(4 / M_SQRT2) - 0.0);
  EXPECT_NEAR(s.mean, 1 + 0.5 * (a_phi - b_phi) / z, 2e-3);
  fx::Generator g1(9), g2(9);
  EXPECT_TRUE(fx::allclose(fx::nn::truncated_normal({3, 4}, g1),
                           fx::nn::truncated_normal({3, 4}, g2), 0, 0));
}

TEST(Init, OrthogonalHasOrthonormalRowsOrColumns) {
  fx::Generator gen(6);
  auto tall = fx::nn::orthogonal({50, 20}, gen, 1.0, fx::f64);
  EXPECT_TRUE(fx::allclose(fx::matmul(tall.t(), tall), fx::linalg::eye(20, fx::f64), 1e-12, 1e-12));
  auto wide = fx::nn::orthogonal({20, 50}, gen, 1.0, fx::f64);
  EXPECT_TRUE(fx::allclose(fx::matmul(wide, wide.t()), fx::linalg::eye(20, fx::f64), 1e-12, 1e-12));
  // A conv weight (16, 4, 3, 3) is 16 x 36: orthonormal rows, scaled by the gain.
  auto conv = fx::nn::orthogonal({16, 4, 3, 3}, gen, 2.0, fx::f64);
  EXPECT_EQ(conv.shape(), (fx::Shape{16, 4, 3, 3}));
  auto rows = conv.reshape({16, 36});
  EXPECT_TRUE(
      fx::allclose(fx::matmul(rows, rows.t()), fx::linalg::eye(16, fx::f64) * 4.0, 1e-12, 1e-12));
  EXPECT_EQ(fx::nn::orthogonal({8, 8}, gen).dtype(), fx::f32);
  fx::Generator g1(3), g2(3);
  EXPECT_TRUE(fx::allclose(fx::nn::orthogonal({6, 4}, g1), fx::nn::orthogonal({6, 4}, g2), 0, 0));
  // Haar: entries of a large orthogonal matrix have mean 0 and variance 1 / n.
  auto big = moments(fx::nn::orthogonal({200, 200}, gen, 1.0, fx::f64));
  EXPECT_NEAR(big.std, std::sqrt(1.0 / 200), 0.02 * std::sqrt(1.0 / 200));
  EXPECT_NEAR(big.mean, 0, 0.02 * std::sqrt(1.0 / 200));
  EXPECT_TRUE(
      fx::testing::throws_mentioning([] { fx::nn::orthogonal({5}); }, {"orthogonal", "(5,)"}));
}

TEST(Init, SparseInitZeroesTheSameFractionOfEveryColumn) {
  fx::Generator gen(7);
  auto w = fx::nn::sparse_init({100, 300}, 0.25, gen, 0.5, fx::f64);
  auto v = fx::to_vector<double>(w);
  double sumsq = 0;
  int64_t nonzero = 0;
  for (int j = 0; j < 300; ++j) {
    int zeros = 0;
    for (int i = 0; i < 100; ++i) zeros += v[i * 300 + j] == 0;
    EXPECT_EQ(zeros, 25) << "column " << j;
  }
  for (double x : v)
    if (x != 0) sumsq += x * x, ++nonzero;
  EXPECT_NEAR(std::sqrt(sumsq / double(nonzero)), 0.5, 0.01);  // the non-zeros are N(0, 0.5^2)
  // ceil(sparsity * rows): 0.1 of 15 rows zeroes 2 per column.
  auto s = fx::to_vector<double>(fx::nn::sparse_init({15, 4}, 0.1, gen));
  for (int j = 0; j < 4; ++j) {
    int zeros = 0;
    for (int i = 0; i < 15; ++i) zeros += s[i * 4 + j] == 0;
    EXPECT_EQ(zeros, 2);
  }
  // The zero pattern differs between columns (it is drawn, not fixed).
  bool differ = false;
  for (int i = 0; i < 100 && !differ; ++i) differ = (v[i * 300] == 0) != (v[i * 300 + 1] == 0);
  EXPECT_TRUE(differ);
  fx::Generator g1(2), g2(2);
  EXPECT_TRUE(fx::allclose(fx::nn::sparse_init({10, 6}, 0.5, g1),
                           fx::nn::sparse_init({10, 6}, 0.5, g2), 0, 0));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] {
        fx::nn::sparse_init({4, 4, 4}, 0.5);
      },
      {"sparse_init", "(4, 4, 4)"}));
}

TEST(Init, IdentityInitPassesTheInputThrough) {
  EXPECT_TRUE(fx::allclose(fx::nn::identity_init({5}), fx::zeros({5}), 0, 0));
  auto x = fx::randn({3, 4}, fx::f64);
  auto w = fx::nn::identity_init({4, 4}, 1.0, 0, fx::f64);
  EXPECT_TRUE(fx::allclose(fx::matmul(x, w.t()), x, 0, 0));
  auto rect = fx::to_vector<double>(fx::nn::identity_init({2, 3}, 2.0));
  EXPECT_EQ(rect, (std::vector<double>{2, 0, 0, 0, 2, 0}));
  // shift rolls the output axis: output i reads input i - shift.
  auto shifted = fx::to_vector<double>(fx::nn::identity_init({3, 3}, 1.0, 1));
  EXPECT_EQ(shifted, (std::vector<double>{0, 0, 1, 1, 0, 0, 0, 1, 0}));
  // A (2, 2, 3, 3) kernel: 1 at the centre (1, 1) where out == in, 0 elsewhere.
  auto k = fx::to_vector<double>(fx::nn::identity_init({2, 2, 3, 3}));
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 2; ++i)
      for (int p = 0; p < 9; ++p) EXPECT_EQ(k[(o * 2 + i) * 9 + p], o == i && p == 4 ? 1 : 0);
}
