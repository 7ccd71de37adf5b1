// Rows for the convolution and pooling primitives (tuned oneDNN kernels against the reference
// loops in f32 and f64 on every layout, gradients to second order against finite differences in
// f64), and values worked out by hand.
#include <gtest/gtest.h>

#include "op_rows.hpp"

namespace fx::rows {

namespace {
const ConvGeometry strided = {.stride = {2}, .padding = {1}, .groups = 2};
const ConvGeometry dilated = {.padding = {1}, .padding_hi = {2}, .dilation = {2}};
const ConvGeometry mixed3d = {.stride = {1, 2, 1}, .padding = {0, 1, 1}};
const PoolGeometry pool2 = {.kernel = {2}};
const PoolGeometry pool_padded = {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}};
const PoolGeometry pool_exclude = {
    .kernel = {3}, .stride = {2}, .padding = {1}, .count_include_pad = false};
}  // namespace

std::vector<Row> conv_rows() {
  return {
      // 2-d, stride 2, padding 1, two groups, bias.
      {"conv",
       [](const Args& a) { return fx::conv(a[0], a[1], a[2], strided); },
       {.cases = {{In{{2, 4, 7, 6}}, In{{6, 2, 3, 3}}, In{{6}}}}}},
      // 1-d, dilation 2, asymmetric padding, no bias; 3-d with a stride per axis.
      {"conv1d_dilated_asymmetric",
       [](const Args& a) { return fx::conv(a[0], a[1], Tensor(), dilated); },
       {.cases = pairs({{{2, 3, 9}, {4, 3, 3}}})}},
      {"conv3d",
       [](const Args& a) { return fx::conv(a[0], a[1], a[2], mixed3d); },
       {.cases = {{In{{1, 2, 4, 5, 4}}, In{{3, 2, 2, 3, 2}}, In{{3}}}}}},
      {"conv_backward_data",
       [](const Args& a) {
         return fx::conv_backward_data(a[0], a[1], Shape{2, 4, 7, 6}, strided);
       },
       {.cases = pairs({{{2, 6, 4, 3}, {6, 2, 3, 3}}})}},
      {"conv_backward_weights",
       [](const Args& a) {
         return fx::conv_backward_weights(a[0], a[1], Shape{6, 2, 3, 3}, strided);
       },
       {.cases = pairs({{{2, 4, 7, 6}, {2, 6, 4, 3}}})}},
      // Output padding 1 with stride 2: the size conv maps back to 4 that is one larger.
      {"conv_transpose",
       [](const Args& a) {
         return fx::conv_transpose(a[0], a[1], a[2], {.stride = {2}, .padding = {1}}, {1});
       },
       {.cases = {{In{{2, 3, 4, 3}}, In{{3, 2, 3, 3}}, In{{2}}}}}},
      {"max_pool",
       [](const Args& a) { return fx::max_pool(a[0], pool_padded); },
       {.cases = shapes({{2, 3, 7, 5}})}},
      {"max_pool1d",
       [](const Args& a) { return fx::max_pool(a[0], pool2); },
       {.cases = shapes({{2, 3, 9}})}},
      {"max_pool3d",
       [](const Args& a) { return fx::max_pool(a[0], pool2); },
       {.cases = shapes({{1, 2, 4, 5, 4}})}},
      {"max_pool_backward",
       [](const Args& a) { return fx::max_pool_backward(a[0], a[1], pool_padded); },
       {.cases = pairs({{{2, 3, 7, 5}, {2, 3, 4, 4}}})}},
      {"avg_pool",
       [](const Args& a) { return fx::avg_pool(a[0], pool_padded); },
       {.cases = shapes({{2, 3, 7, 5}})}},
      {"avg_pool_exclude_padding",
       [](const Args& a) { return fx::avg_pool(a[0], pool_exclude); },
       {.cases = shapes({{2, 3, 8, 7}, {1, 2, 9}})}},
      {"avg_pool_backward",
       [](const Args& a) {
         return fx::avg_pool_backward(a[0], Shape{2, 3, 7, 5}, pool_padded);
       },
       {.cases = shapes({{2, 3, 4, 4}})}},
  };
}

}  // namespace fx::rows

namespace {

TEST(ConvOp, OneDimensionalValuesByHand) {
  // x = [1, 2, 3, 4], w = [1, 0, -1], bias 0.5: y[p] = x[p] - x[p + 2] + 0.5.
  auto x = fx::tensor({1, 2, 3, 4}, fx::f64).reshape({1, 1, 4});
  auto w = fx::tensor({1, 0, -1}, fx::f64).reshape({1, 1, 3});
  auto b = fx::tensor({0.5}, fx::f64);
  EXPECT_EQ(fx::to_vector<double>(fx::conv(x, w, b)), (std::vector<double>{-1.5, -1.5}));
  // Padding 1, stride 2: the padded input is [0, 1, 2, 3, 4, 0], windows at 0, 2.
  EXPECT_EQ(fx::to_vector<double>(fx::conv(x, w, fx::Tensor(), {.stride = {2}, .padding = {1}})),
            (std::vector<double>{-2, -2}));
  // The f32 path (oneDNN) gives the same.
  EXPECT_EQ(fx::to_vector<float>(fx::conv(fx::astype(x, fx::f32), fx::astype(w, fx::f32))),
            (std::vector<float>{-2, -2}));
}

TEST(ConvOp, OneDnnRunsF32AndItsGradients) {
  // The rows compare oneDNN with the reference only where oneDNN takes the call: make sure it
  // does take f32 convolutions, their two adjoints and the pooling primitives.
  fx::testing::BackendScope scope;
  auto x = fx::randn({2, 4, 9, 8}), w = fx::randn({6, 2, 3, 3}), b = fx::randn({6});
  auto loss = [&](const fx::Tensor& x, const fx::Tensor& w) {
    auto y = fx::conv(x, w, b, {.stride = {2}, .padding = {1}, .groups = 2});
    return fx::sum(fx::max_pool(y, {.kernel = {2}})) + fx::sum(fx::avg_pool(y, {.kernel = {2}}));
  };
  (void)fx::gradient(loss, x, w);
  for (const fx::Primitive* p :
       {&fx::conv_p, &fx::conv_backward_data_p, &fx::conv_backward_weights_p, &fx::max_pool_p,
        &fx::max_pool_backward_p, &fx::avg_pool_p, &fx::avg_pool_backward_p})
    EXPECT_GT(scope.kernel_calls(*p, fx::testing::kTunedRank), 0) << p->name;
}

TEST(ConvOp, TransposeIsTheAdjointOfConv) {
  // <conv(x, w), y> == <x, conv_backward_data(y, w)> == <w, conv_backward_weights(x, y)>.
  auto x = fx::testing::randn({2, 4, 6, 5}, {.seed = 1});
  auto w = fx::testing::randn({6, 2, 3, 2}, {.seed = 2});
  fx::ConvGeometry g{.stride = {2, 1}, .padding = {1}, .dilation = {1, 2}, .groups = 2};
  auto y = fx::testing::randn(fx::conv(x, w, fx::Tensor(), g).shape(), {.seed = 3});
  const double a = fx::sum(fx::conv(x, w, fx::Tensor(), g) * y).item();
  EXPECT_NEAR(a, fx::sum(x * fx::conv_backward_data(y, w, x.shape(), g)).item(), 1e-10);
  EXPECT_NEAR(a, fx::sum(w * fx::conv_backward_weights(x, y, w.shape(), g)).item(), 1e-10);
}

TEST(ConvOp, MetaDeviceGivesTheShape) {
  auto x = fx::Tensor::empty({8, 3, 28, 28}, fx::f32, fx::Device::meta);
  auto w = fx::Tensor::empty({16, 3, 5, 5}, fx::f32, fx::Device::meta);
  auto y = fx::conv(x, w, fx::Tensor(), {.stride = {2}, .padding = {2}});
  EXPECT_EQ(y.shape(), (fx::Shape{8, 16, 14, 14}));
  EXPECT_EQ(fx::max_pool(y, {.kernel = {2}}).shape(), (fx::Shape{8, 16, 7, 7}));
}

TEST(ConvOp, BadGeometryNamesTheOpAndShapes) {
  auto x = fx::zeros({1, 4, 5, 5}), w = fx::zeros({2, 3, 3, 3});
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { (void)fx::conv(x, w); },
                                             {"fx::conv", "(1, 4, 5, 5)", "(2, 3, 3, 3)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)fx::conv(x, fx::zeros({2, 4, 7, 7}));
      },
      {"fx::conv", "larger", "(2, 4, 7, 7)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)fx::conv(x, fx::zeros({3, 2, 3, 3}), fx::Tensor(), {.groups = 2});
      },
      {"fx::conv", "groups 2", "(3, 2, 3, 3)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)fx::conv(x, fx::zeros({2, 4, 3, 3}), fx::Tensor(), {.padding = {-1}});
      },
      {"fx::conv", "padding", "-1"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] { (void)fx::max_pool(x, {.kernel = {2}, .padding = {2}}); },
      {"fx::max_pool", "padding"}));
}

TEST(PoolOp, ValuesByHand) {
  auto x = fx::tensor({1, 5, 2, 0, 3, 4, -1, 6}, fx::f64).reshape({1, 1, 2, 4});
  EXPECT_EQ(fx::to_vector<double>(fx::max_pool(x, {.kernel = {2}})), (std::vector<double>{5, 6}));
  EXPECT_EQ(fx::to_vector<double>(fx::avg_pool(x, {.kernel = {2}})),
            (std::vector<double>{13.0 / 4, 7.0 / 4}));
  auto xf = fx::astype(x, fx::f32);
  EXPECT_EQ(fx::to_vector<float>(fx::max_pool(xf, {.kernel = {2}})), (std::vector<float>{5, 6}));
  // The gradient goes to each window's maximum.
  auto g = fx::gradient(
      [](const fx::Tensor& t) { return fx::sum(fx::max_pool(t, {.kernel = {2}})); }, xf);
  EXPECT_EQ(fx::to_vector<float>(g), (std::vector<float>{0, 1, 0, 0, 0, 0, 0, 1}));
}

}  // namespace
