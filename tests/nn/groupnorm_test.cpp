#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(GroupNorm, NormalisesEachSamplesGroup) {
  auto gn = fx::nn::GroupNorm(4, 2, fx::identity, true, 0.0, fx::f64);
  gn.scale = fx::tensor({1, 1, 2, 2}, fx::f64);
  gn.bias = fx::tensor({0, 0, 0, 5}, fx::f64);
  // one sample, spatial 2: group 0 = channels 0, 1 = {0, 2, 4, 6}; group 1 = {1, 1, 3, 3}.
  auto x = fx::tensor({0, 2, 4, 6, 1, 1, 3, 3}, fx::f64).reshape({1, 4, 2});
  auto y = fx::to_vector<double>(gn(x));
  const double s0 = 1 / std::sqrt(5.0);  // group 0: mean 3, var 5; group 1: mean 2, var 1
  std::vector<double> want{-3 * s0, -s0, s0, 3 * s0, -2, -2, 2 + 5, 2 + 5};
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-12) << i;
}

TEST(GroupNorm, GradientsMatchFiniteDifferences) {
  auto gn = fx::nn::GroupNorm(6, 3, fx::tanh, true, 1e-5, fx::f64);
  gn.scale = fx::testing::randn({6}, {.seed = 1});
  gn.bias = fx::testing::randn({6}, {.seed = 2});
  auto x = fx::testing::randn({2, 6, 3, 2}, {.seed = 3});
  auto r = fx::testing::gradcheck(
      [](const fx::nn::GroupNorm& m, const fx::Tensor& x) { return m(x); }, gn, x);
  EXPECT_TRUE(r) << r;
}

TEST(GroupNorm, BadConfigurationsNameTheLayerAndShapes) {
  EXPECT_TRUE(fx::testing::throws_mentioning([] { (void)fx::nn::GroupNorm(6, 4); },
                                             {"fx::nn::GroupNorm", "4 groups", "6 channels"}));
  auto gn = fx::nn::GroupNorm(6, 3);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)gn(fx::zeros({2, 4, 3}));
      },
      {"fx::nn::GroupNorm", "(2, 4, 3)", "6"}));
}

}  // namespace

namespace {

// The fused kernels against the same function composed from ops, in f32 and f64, with and without
// the affine map: values, and gradients from one reverse-mode gradient (the fused backward).
TEST(GroupNorm, FusedKernelsMatchTheComposedForm) {
  for (auto dtype : {fx::f64, fx::f32}) {
    for (bool affine : {true, false}) {
      SCOPED_TRACE(std::string(fx::dtype_name(dtype)) + (affine ? " affine" : " plain"));
      fx::Generator gen(7);
      auto gn = fx::nn::GroupNorm(8, 4, fx::identity, affine, 1e-5, dtype);
      if (affine) gn.scale = fx::randn({8}, gen, dtype), gn.bias = fx::randn({8}, gen, dtype);
      auto x = fx::randn({3, 8, 5, 6}, gen, dtype) * 3.0 + 1.0;
      auto u = fx::randn({3, 8, 5, 6}, gen, dtype);
      const double tol = dtype == fx::f64 ? 1e-12 : 2e-5;
      auto composed = [&](const fx::nn::GroupNorm& m, const fx::Tensor& x) {
        return fx::nn::detail::group_normalise_composed(x, 4, 8, 1e-5, m.scale, m.bias);
      };
      auto fused = std::get<0>(fx::nn::detail::group_norm_forward(x, gn.scale, gn.bias, 4, 1e-5));
      EXPECT_TRUE(fx::allclose(fused, composed(gn, x), tol, tol));
      EXPECT_TRUE(fx::allclose(gn(x), fused, 0, 0));  // outside a gradient: the kernel
      auto [gm1, gx1] = fx::gradient(
          [&](const fx::nn::GroupNorm& m, const fx::Tensor& x) { return fx::sum(m(x) * u); }, gn,
          x);
      auto [gm2, gx2] =
          fx::gradient([&](const fx::nn::GroupNorm& m,
                           const fx::Tensor& x) { return fx::sum(composed(m, x) * u); },
                       gn, x);
      EXPECT_TRUE(fx::allclose(gx1, gx2, tol, tol));
      EXPECT_EQ(gm1.scale.defined(), affine);
      if (affine) {
        EXPECT_TRUE(fx::allclose(gm1.scale, gm2.scale, tol, 10 * tol));
        EXPECT_TRUE(fx::allclose(gm1.bias, gm2.bias, tol, 10 * tol));
      }
    }
  }
}

}  // namespace
