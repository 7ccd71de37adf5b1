#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(LayerNorm, NormalisesTheTrailingAxes) {
  auto ln = fx::nn::LayerNorm(4, fx::identity, true, 0.0, fx::f64);
  auto x = fx::tensor({1, 2, 3, 6, -1, -1, 1, 1}, fx::f64).reshape({2, 4});
  // row 0: mean 3, biased var (4 + 1 + 0 + 9) / 4 = 3.5; row 1: mean 0, var 1.
  auto y = fx::to_vector<double>(ln(x));
  const double s = 1 / std::sqrt(3.5);
  std::vector<double> want{-2 * s, -s, 0, 3 * s, -1, -1, 1, 1};
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-12) << i;
  auto ln2 = fx::nn::LayerNorm({3, 4}, fx::identity, false);
  auto z = ln2(fx::randn({5, 3, 4}) * 3.0 + 2.0);
  EXPECT_TRUE(fx::allclose(fx::mean(z, {1, 2}), fx::zeros({5}), 1e-5, 1e-5));
  EXPECT_TRUE(fx::allclose(fx::mean(fx::square(z), {1, 2}), fx::ones({5}), 1e-4, 1e-4));
}

TEST(LayerNorm, GradientsMatchFiniteDifferences) {
  auto ln = fx::nn::LayerNorm({2, 3}, fx::tanh, true, 1e-5, fx::f64);
  ln.scale = fx::testing::randn({2, 3}, {.seed = 1});
  ln.bias = fx::testing::randn({2, 3}, {.seed = 2});
  auto x = fx::testing::randn({4, 2, 3}, {.seed = 3});
  auto r = fx::testing::gradcheck(
      [](const fx::nn::LayerNorm& m, const fx::Tensor& x) { return m(x); }, ln, x);
  EXPECT_TRUE(r) << r;
}

TEST(LayerNorm, WrongTrailingShapeNamesTheLayerAndShapes) {
  auto ln = fx::nn::LayerNorm({3, 4});
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)ln(fx::zeros({2, 4, 3}));
      },
      {"fx::nn::LayerNorm", "(2, 4, 3)", "(3, 4)"}));
}

}  // namespace

namespace {

// The fused kernels against the composed form, f32 and f64, with and without the affine map.
TEST(LayerNorm, FusedKernelsMatchTheComposedForm) {
  for (auto dtype : {fx::f64, fx::f32}) {
    for (bool affine : {true, false}) {
      SCOPED_TRACE(std::string(fx::dtype_name(dtype)) + (affine ? " affine" : " plain"));
      fx::Generator gen(7);
      auto ln = fx::nn::LayerNorm({3, 20}, fx::identity, affine, 1e-5, dtype);
      if (affine)
        ln.scale = fx::randn({3, 20}, gen, dtype), ln.bias = fx::randn({3, 20}, gen, dtype);
      auto x = fx::randn({4, 5, 3, 20}, gen, dtype) * 3.0 + 1.0;
      auto u = fx::randn({4, 5, 3, 20}, gen, dtype);
      const double tol = dtype == fx::f64 ? 1e-12 : 2e-5;
      auto composed = [&](const fx::nn::LayerNorm& m, const fx::Tensor& x) {
        return m.composed(x, 60);
      };
      EXPECT_TRUE(fx::allclose(ln(x), composed(ln, x), tol, tol));
      auto [gm1, gx1] = fx::gradient(
          [&](const fx::nn::LayerNorm& m, const fx::Tensor& x) { return fx::sum(m(x) * u); }, ln,
          x);
      auto [gm2, gx2] =
          fx::gradient([&](const fx::nn::LayerNorm& m,
                           const fx::Tensor& x) { return fx::sum(composed(m, x) * u); },
                       ln, x);
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
