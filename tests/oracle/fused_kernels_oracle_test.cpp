// The fused CPU kernels behind bench/layer_table's rows (gelu in both forms, softmax and
// logsoftmax, mse, logitcrossentropy with many classes, LayerNorm, nearest and bilinear Upsample,
// PixelShuffle) against
// libtorch: forward values and the pullback of a random cotangent, in f32 (where gelu_erf uses its
// own erfc polynomial) and f64, at sizes past the kernels' block and threading thresholds. Each
// fluxion figure also goes through the composed form (forward mode, fx::jvp) where that is the
// cheap check that the kernel and the definition agree.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include <fluxion/ad/forward.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

#include "torch_bridge.hpp"

namespace {

using fx::oracle::to_torch;

// |fluxion - torch| <= tol (1 + |torch|) elementwise, naming what differs.
void expect_close(const fx::Tensor& got, const torch::Tensor& want, const std::string& what,
                  double tol) {
  ASSERT_TRUE(got.defined()) << what;
  auto w = want.detach().contiguous().to(torch::kDouble);
  ASSERT_EQ(got.numel(), w.numel()) << what;
  auto g = fx::to_vector<double>(got);
  const double* p = w.data_ptr<double>();
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], p[i], tol * (1 + std::abs(p[i]))) << what << " at " << i;
}

double tolerance(fx::DType t) { return t == fx::f32 ? 2e-5 : 1e-11; }

// y = f(x) and its pullback of u in both libraries, x of the given shape and dtype.
void check_unary(const char* what, fx::Shape shape, fx::DType dtype,
                 const std::function<fx::Tensor(const fx::Tensor&)>& f,
                 const std::function<torch::Tensor(const torch::Tensor&)>& tf, double scale = 3) {
  auto x = fx::astype(fx::testing::randn(shape, {.seed = 1}) * scale, dtype);
  auto [y, back] = fx::pullback(f, x);
  auto u = fx::astype(fx::testing::randn(y.shape(), {.seed = 2}), dtype);
  fx::Tensor dx = back(u);
  auto tx = to_torch(x).requires_grad_();
  auto ty = tf(tx);
  ty.backward(to_torch(u));
  const double tol = tolerance(dtype);
  expect_close(y, ty, std::string(what) + " forward", tol);
  expect_close(dx, tx.grad(), std::string(what) + " gradient", tol);
}

class FusedKernels : public ::testing::TestWithParam<fx::DType> {};

TEST_P(FusedKernels, Gelu) {
  // 5000 elements: several blocks of 512, and a partial one.
  check_unary(
      "gelu_erf", {50, 100}, GetParam(), [](const fx::Tensor& x) { return fx::gelu_erf(x); },
      [](const torch::Tensor& x) { return torch::gelu(x); });
  check_unary(
      "gelu_tanh", {50, 100}, GetParam(), [](const fx::Tensor& x) { return fx::gelu_tanh(x); },
      [](const torch::Tensor& x) { return torch::gelu(x, "tanh"); });
  // The far tails: Phi underflows on the left, saturates on the right.
  check_unary(
      "gelu_erf tails", {4, 100}, GetParam(), [](const fx::Tensor& x) { return fx::gelu_erf(x); },
      [](const torch::Tensor& x) { return torch::gelu(x); }, 12);
}

TEST_P(FusedKernels, SoftmaxAndLogsoftmaxOverTheLastAxis) {
  // 300 rows of 257 (past the threading threshold; rows not a multiple of the 16 lanes).
  check_unary(
      "softmax", {3, 100, 257}, GetParam(), [](const fx::Tensor& x) { return fx::softmax(x); },
      [](const torch::Tensor& x) { return torch::softmax(x, -1); });
  check_unary(
      "logsoftmax", {3, 100, 257}, GetParam(),
      [](const fx::Tensor& x) { return fx::logsoftmax(x); },
      [](const torch::Tensor& x) { return torch::log_softmax(x, -1); });
  check_unary(
      "softmax, one column", {7, 1}, GetParam(), [](const fx::Tensor& x) { return fx::softmax(x); },
      [](const torch::Tensor& x) { return torch::softmax(x, -1); });
}

TEST_P(FusedKernels, MseMeanAndSum) {
  auto t = fx::astype(fx::testing::randn({64, 300}, {.seed = 5}), GetParam());
  check_unary(
      "mse mean", {64, 300}, GetParam(), [t](const fx::Tensor& x) { return fx::mse(x, t); },
      [tt = to_torch(t)](const torch::Tensor& x) { return torch::mse_loss(x, tt); });
  check_unary(
      "mse sum", {64, 300}, GetParam(),
      [t](const fx::Tensor& x) { return fx::mse(x, t, fx::agg::sum); },
      [tt = to_torch(t)](const torch::Tensor& x) {
        return torch::mse_loss(x, tt, at::Reduction::Sum);
      });
}

TEST_P(FusedKernels, LogitcrossentropyWithManyClasses) {
  auto labels = fx::astype(fx::testing::uniform({96}, {.seed = 7, .lo = 0, .hi = 999.9}), fx::i64);
  check_unary(
      "logitcrossentropy", {96, 1000}, GetParam(),
      [labels](const fx::Tensor& x) { return fx::logitcrossentropy(x, labels); },
      [tl = to_torch(labels)](const torch::Tensor& x) { return torch::cross_entropy_loss(x, tl); });
}

TEST_P(FusedKernels, LayerNormAndItsParameters) {
  const fx::DType dt = GetParam();
  auto ln = fx::nn::LayerNorm(96, fx::identity, true, 1e-5, dt);
  ln.scale = fx::astype(fx::testing::randn({96}, {.seed = 3}), dt);
  ln.bias = fx::astype(fx::testing::randn({96}, {.seed = 4}), dt);
  auto x = fx::astype(fx::testing::randn({5, 70, 96}, {.seed = 1}) * 2.0 + 1.0, dt);
  auto [y, back] =
      fx::pullback([](const fx::nn::LayerNorm& m, const fx::Tensor& x) { return m(x); }, ln, x);
  auto u = fx::astype(fx::testing::randn(y.shape(), {.seed = 2}), dt);
  auto [gm, gx] = back(u);
  auto tx = to_torch(x).requires_grad_(), tw = to_torch(ln.scale).requires_grad_(),
       tb = to_torch(ln.bias).requires_grad_();
  auto ty = torch::layer_norm(tx, {96}, tw, tb, 1e-5);
  ty.backward(to_torch(u));
  const double tol = dt == fx::f32 ? 1e-4 : 1e-10;  // dscale sums 350 rows in f32
  expect_close(y, ty, "LayerNorm forward", tol);
  expect_close(gx, tx.grad(), "LayerNorm dx", tol);
  expect_close(gm.scale, tw.grad(), "LayerNorm dscale", tol);
  expect_close(gm.bias, tb.grad(), "LayerNorm dbias", tol);
}

TEST_P(FusedKernels, BilinearUpsampleOneTwoAndThreeAxes) {
  namespace F = torch::nn::functional;
  auto up = [](std::vector<int64_t> s) {
    return [m = fx::nn::Upsample(s, fx::nn::UpsampleMode::bilinear)](const fx::Tensor& x) {
      return m(x);
    };
  };
  check_unary("linear, 1 axis", {2, 3, 9}, GetParam(), up({3}), [](const torch::Tensor& x) {
    return F::interpolate(x, F::InterpolateFuncOptions()
                                 .scale_factor(std::vector<double>{3})
                                 .mode(torch::kLinear)
                                 .align_corners(false));
  });
  check_unary("bilinear", {4, 8, 14, 14}, GetParam(), up({2, 2}), [](const torch::Tensor& x) {
    return F::interpolate(x, F::InterpolateFuncOptions()
                                 .scale_factor(std::vector<double>{2, 2})
                                 .mode(torch::kBilinear)
                                 .align_corners(false));
  });
  check_unary("bilinear, unequal scales", {2, 3, 5, 7}, GetParam(), up({3, 2}),
              [](const torch::Tensor& x) {
                return F::interpolate(x, F::InterpolateFuncOptions()
                                             .scale_factor(std::vector<double>{3, 2})
                                             .mode(torch::kBilinear)
                                             .align_corners(false));
              });
  check_unary("trilinear", {2, 3, 4, 5, 6}, GetParam(), up({2, 2, 2}), [](const torch::Tensor& x) {
    return F::interpolate(x, F::InterpolateFuncOptions()
                                 .scale_factor(std::vector<double>{2, 2, 2})
                                 .mode(torch::kTrilinear)
                                 .align_corners(false));
  });
}

TEST_P(FusedKernels, NearestUpsampleOneTwoAndThreeAxes) {
  namespace F = torch::nn::functional;
  struct Case {
    const char* what;
    fx::Shape shape;
    std::vector<int64_t> scale;
  };
  // Scale 2 along the last axis takes the kernel's paired path, 3 and 1 the general one.
  for (const Case& c : {Case{"1 axis", {2, 3, 9}, {3}}, Case{"2 axes", {4, 8, 14, 14}, {2, 2}},
                        Case{"2 axes, unequal scales", {2, 3, 5, 7}, {3, 1}},
                        Case{"3 axes", {2, 3, 4, 5, 6}, {2, 3, 2}}})
    check_unary(
        c.what, c.shape, GetParam(),
        [m = fx::nn::Upsample(c.scale)](const fx::Tensor& x) { return m(x); },
        [&c](const torch::Tensor& x) {
          return F::interpolate(
              x, F::InterpolateFuncOptions()
                     .scale_factor(std::vector<double>(c.scale.begin(), c.scale.end()))
                     .mode(torch::kNearest));
        });
}

TEST_P(FusedKernels, PixelShuffleAndItsInverse) {
  for (int64_t r : {2, 3})
    check_unary(
        "pixel_shuffle", {2, 5 * r * r, 4, 6}, GetParam(),
        [m = fx::nn::PixelShuffle(r)](const fx::Tensor& x) { return m(x); },
        [r](const torch::Tensor& x) { return torch::pixel_shuffle(x, r); });
}

// The kernels and the composed definitions (which forward mode differentiates) agree: a jvp
// along v equals <pullback of e_i, v> summed, checked here as <J v, u> = <v, J^T u>.
TEST_P(FusedKernels, KernelPullbacksAreTheTransposesOfTheComposedJvps) {
  const fx::DType dt = GetParam();
  const double tol = dt == fx::f32 ? 1e-4 : 1e-10;
  std::vector<std::pair<const char*, std::function<fx::Tensor(const fx::Tensor&)>>> fs = {
      {"gelu_erf", [](const fx::Tensor& x) { return fx::gelu_erf(x); }},
      {"gelu_tanh", [](const fx::Tensor& x) { return fx::gelu_tanh(x); }},
      {"softmax", [](const fx::Tensor& x) { return fx::softmax(x); }},
      {"logsoftmax", [](const fx::Tensor& x) { return fx::logsoftmax(x); }},
      {"upsample nearest",
       [m = fx::nn::Upsample({3, 2})](const fx::Tensor& x) {
         return m(fx::reshape(x, {2, 3, 20, 10}));
       }},
      {"upsample",
       [m = fx::nn::Upsample({2, 3}, fx::nn::UpsampleMode::bilinear)](const fx::Tensor& x) {
         return m(fx::reshape(x, {2, 3, 20, 10}));
       }},
      {"pixel_shuffle", [m = fx::nn::PixelShuffle(2)](const fx::Tensor& x) {
         return m(fx::reshape(x, {2, 12, 5, 10}));
       }}};
  auto x = fx::astype(fx::testing::randn({60, 20}, {.seed = 1}) * 2.0, dt);
  auto v = fx::astype(fx::testing::randn({60, 20}, {.seed = 2}), dt);
  for (auto& [name, f] : fs) {
    auto [y, jv] = fx::jvp(f, x, v);  // composed (forward mode)
    auto u = fx::astype(fx::testing::randn(y.shape(), {.seed = 3}), dt);
    auto [y2, back] = fx::pullback(f, x);  // fused
    fx::Tensor ju = back(u);
    const double a = fx::to_vector<double>(fx::sum(jv * u))[0];
    const double b = fx::to_vector<double>(fx::sum(ju * v))[0];
    EXPECT_NEAR(a, b, tol * (1 + std::abs(a))) << name;
    expect_close(y2, to_torch(y), std::string(name) + " forward, fused against composed", tol);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FusedKernels, ::testing::Values(fx::f32, fx::f64),
                         [](const auto& info) { return std::string(fx::dtype_name(info.param)); });

}  // namespace
