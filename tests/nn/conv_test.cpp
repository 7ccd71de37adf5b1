// Conv, ConvTranspose and DepthwiseConv: values by hand, gradients against finite differences
// (f64: gradcheck promotes every leaf, so these run the reference loops; the f32 oneDNN kernels
// are checked against those loops by tests/ops/conv_test.cpp's rows and against libtorch by
// tests/oracle/conv_oracle_test.cpp), training in a Chain, and the errors.
#include <gtest/gtest.h>

#include <fluxion/fluxion.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(ConvLayer, CrossCorrelatesOrConvolvesWhenFlipped) {
  auto c = fx::nn::Conv({3}, 1, 1, fx::identity, {.dtype = fx::f64});
  c.weight = fx::tensor({1, 2, 3}, fx::f64).reshape({1, 1, 3});
  c.bias = fx::tensor({1}, fx::f64);
  auto x = fx::tensor({1, 0, 0, 2}, fx::f64).reshape({1, 1, 4});
  // Cross-correlation: y[p] = x[p] + 2 x[p+1] + 3 x[p+2] + 1.
  EXPECT_EQ(fx::to_vector<double>(c(x)), (std::vector<double>{2, 7}));
  c.flipped = true;  // y[p] = 3 x[p] + 2 x[p+1] + x[p+2] + 1
  EXPECT_EQ(fx::to_vector<double>(c(x)), (std::vector<double>{4, 3}));
}

TEST(ConvLayer, SamePaddingKeepsTheSize) {
  auto c = fx::nn::Conv({3, 4}, 2, 5, fx::relu, {.dilation = {2, 1}, .same = true});
  EXPECT_EQ(c(fx::randn({3, 2, 7, 6})).shape(), (fx::Shape{3, 5, 7, 6}));
  // Stride 2 with same padding: ceil(i / 2).
  auto s = fx::nn::Conv({3, 3}, 2, 4, fx::identity, {.stride = {2}, .same = true});
  EXPECT_EQ(s(fx::randn({1, 2, 7, 8})).shape(), (fx::Shape{1, 4, 4, 4}));
  EXPECT_EQ(fx::nn::outputsize(s, {5, 2, 28, 28}), (fx::Shape{5, 4, 14, 14}));
}

TEST(ConvLayer, GradientsMatchFiniteDifferences) {
  fx::Generator gen(3);
  auto c = fx::nn::Conv({3, 2}, 4, 6, fx::tanh, gen,
                        {.stride = {2, 1},
                         .padding = {1, 0},
                         .padding_hi = {0, 1},
                         .dilation = {1, 2},
                         .groups = 2,
                         .dtype = fx::f64});
  c.bias = fx::testing::randn({6}, {.seed = 1});
  auto x = fx::testing::randn({2, 4, 5, 6}, {.seed = 2});
  auto loss = [](const fx::nn::Conv& m, const fx::Tensor& x) { return fx::sum(m(x) * m(x)); };
  auto r = fx::testing::gradcheck(loss, c, x);  // first and second order, reverse and forward
  EXPECT_TRUE(r) << r;
  c.flipped = true;
  auto rf = fx::testing::gradcheck(loss, {.order = 1}, c, x);
  EXPECT_TRUE(rf) << rf;
}

TEST(ConvLayer, OneAndThreeDimensionalGradients) {
  fx::Generator gen(4);
  auto c1 = fx::nn::Conv({3}, 2, 3, fx::identity, gen, {.stride = {2}, .dtype = fx::f64});
  auto x1 = fx::testing::randn({2, 2, 9}, {.seed = 5});
  auto l1 = [](const fx::nn::Conv& m, const fx::Tensor& x) { return fx::sum(fx::sin(m(x))); };
  auto r1 = fx::testing::gradcheck(l1, c1, x1);
  EXPECT_TRUE(r1) << r1;
  auto c3 = fx::nn::Conv({2, 2, 2}, 2, 2, fx::identity, gen, {.padding = {1}, .dtype = fx::f64});
  auto x3 = fx::testing::randn({1, 2, 3, 3, 2}, {.seed = 6});
  auto r3 = fx::testing::gradcheck(l1, {.order = 1}, c3, x3);
  EXPECT_TRUE(r3) << r3;
}

TEST(ConvTransposeLayer, InvertsTheShapeOfAStridedConv) {
  auto c = fx::nn::Conv({3, 3}, 3, 8, fx::identity, {.stride = {2}, .padding = {1}});
  auto t = fx::nn::ConvTranspose({3, 3}, 8, 3, fx::identity,
                                 {.stride = {2}, .padding = {1}, .output_padding = {1}});
  auto x = fx::randn({2, 3, 8, 10});
  EXPECT_EQ(t(c(x)).shape(), x.shape());
  EXPECT_EQ(t.weight.shape(), (fx::Shape{8, 3, 3, 3}));
}

TEST(ConvTransposeLayer, GradientsMatchFiniteDifferences) {
  fx::Generator gen(8);
  auto t = fx::nn::ConvTranspose(
      {3, 2}, 4, 6, fx::identity, gen,
      {.stride = {2}, .padding = {1}, .groups = 2, .output_padding = {1, 0}, .dtype = fx::f64});
  t.bias = fx::testing::randn({6}, {.seed = 9});
  auto x = fx::testing::randn({2, 4, 3, 3}, {.seed = 10});
  auto loss = [](const fx::nn::ConvTranspose& m, const fx::Tensor& x) {
    return fx::sum(fx::tanh(m(x)));
  };
  auto r = fx::testing::gradcheck(loss, t, x);
  EXPECT_TRUE(r) << r;
}

TEST(DepthwiseConvLayer, OneGroupPerInputChannel) {
  auto d = fx::nn::DepthwiseConv({3, 3}, 4, 8, fx::identity, {.padding = {1}, .dtype = fx::f64});
  EXPECT_EQ(d.geometry.groups, 4);
  EXPECT_EQ(d.weight.shape(), (fx::Shape{8, 1, 3, 3}));
  auto x = fx::testing::randn({2, 4, 5, 5}, {.seed = 11});
  // Output channels 2c and 2c+1 read only input channel c: zeroing channel 0 of x changes only
  // outputs 0 and 1.
  auto y = d(x);
  auto x0 = fx::concat({fx::zeros({2, 1, 5, 5}, fx::f64), fx::slice(x, 1, 1, 4)}, 1);
  auto diff = fx::sum(fx::abs(d(x0) - y), {0, 2, 3});
  auto v = fx::to_vector<double>(diff);
  EXPECT_GT(v[0], 0);
  EXPECT_GT(v[1], 0);
  for (size_t k = 2; k < 8; ++k) EXPECT_EQ(v[k], 0) << k;
  auto loss = [](const fx::nn::Conv& m, const fx::Tensor& x) { return fx::sum(m(x) * m(x)); };
  auto r = fx::testing::gradcheck(loss, {.order = 1}, d, x);
  EXPECT_TRUE(r) << r;
}

TEST(ConvLayer, TrainsInsideAChain) {
  fx::Generator gen(12);
  auto model = fx::nn::Chain(fx::nn::Conv({3, 3}, 1, 4, fx::relu, gen, {.padding = {1}}),
                             fx::nn::MaxPool({2, 2}), fx::Activation(fx::nn::flatten),
                             fx::nn::Dense(4 * 4 * 4, 2, fx::identity, gen));
  auto x = fx::randn({8, 1, 8, 8}, gen), y = fx::randn({8, 2}, gen);
  auto loss = [&](const auto& m) { return fx::mse(m(x), y); };
  auto opt = fx::optim::setup(fx::optim::Adam{0.01}, model);
  const double before = loss(model).item();
  for (int step = 0; step < 30; ++step) fx::optim::update(opt, model, fx::gradient(loss, model));
  EXPECT_LT(loss(model).item(), 0.8 * before);
}

TEST(ConvLayer, DataParallelGradientEqualsTheSerialOne) {
  // Each thread's share runs oneDNN inside the parallel region (one thread per primitive).
  fx::Generator gen(13);
  auto model =
      fx::nn::Chain(fx::nn::Conv({3, 3}, 2, 4, fx::relu, gen, {.padding = {1}}),
                    fx::nn::MaxPool({2, 2}), fx::nn::MeanPool({2, 2}),
                    fx::Activation(fx::nn::flatten), fx::nn::Dense(16, 3, fx::identity, gen));
  auto x = fx::randn({16, 2, 8, 8}, gen), y = fx::randn({16, 3}, gen);
  auto loss = [](const auto& m, const fx::Tensor& x, const fx::Tensor& y) {
    return fx::mse(m(x), y);
  };
  auto [l1, g1] = fx::train::data_parallel_withgradient(loss, model, x, y);
  auto [l2, g2] = fx::withgradient([&](const auto& m) { return loss(m, x, y); }, model);
  EXPECT_NEAR(l1.item(), l2.item(), 1e-5);
  const auto& c1 = std::get<0>(g1.layers);
  const auto& c2 = std::get<0>(g2.layers);
  EXPECT_TRUE(fx::allclose(c1.weight, c2.weight, 1e-4, 1e-5));
  EXPECT_TRUE(fx::allclose(c1.bias, c2.bias, 1e-4, 1e-5));
}

TEST(ConvLayer, LeNetShapesOnTheMetaDevice) {  // the model of docs/layers.md
  fx::Generator gen(1);
  auto model = fx::nn::Chain(fx::nn::Conv({5, 5}, 1, 6, fx::relu, gen, {.padding = {2}}),
                             fx::nn::MaxPool({2, 2}), fx::nn::Conv({5, 5}, 6, 16, fx::relu, gen),
                             fx::nn::MeanPool({2, 2}), fx::Activation(fx::nn::flatten),
                             fx::nn::Dense(400, 10, fx::identity, gen));
  EXPECT_EQ(fx::nn::outputsize(model, {32, 1, 28, 28}), (fx::Shape{32, 10}));
  EXPECT_EQ(fx::nn::parameter_count(model), 6 * 25 + 6 + 16 * 6 * 25 + 16 + 400 * 10 + 10);
  EXPECT_EQ(model(fx::randn({2, 1, 28, 28}, gen)).shape(), (fx::Shape{2, 10}));
}

TEST(ConvLayer, BadConfigurationsNameTheLayerAndShapes) {
  using fx::testing::throws_mentioning;
  auto c = fx::nn::Conv({3, 3}, 3, 8);
  EXPECT_TRUE(throws_mentioning(
      [&] {
        (void)c(fx::zeros({2, 4, 9, 9}));
      },
      {"fx::nn::Conv", "(2, 4, 9, 9)", "(8, 3, 3, 3)", "channels"}));
  EXPECT_TRUE(throws_mentioning(
      [&] {
        (void)c(fx::zeros({2, 3, 2, 9}));
      },
      {"fx::nn::Conv", "(2, 3, 2, 9)", "larger"}));
  EXPECT_TRUE(throws_mentioning(
      [&] {
        (void)c(fx::zeros({3, 9, 9}));
      },
      {"fx::nn::Conv", "(3, 9, 9)", "spatial"}));
  EXPECT_TRUE(throws_mentioning([] { (void)fx::nn::Conv({3}, 6, 4, fx::identity, {.groups = 4}); },
                                {"fx::nn::Conv", "groups 4", "6 => 4"}));
  EXPECT_TRUE(
      throws_mentioning([] { (void)fx::nn::Conv({3}, 2, 2, fx::identity, {.padding = {-1}}); },
                        {"fx::nn::Conv", "padding", "-1"}));
  auto t = fx::nn::ConvTranspose({3, 3}, 4, 2);
  EXPECT_TRUE(throws_mentioning(
      [&] {
        (void)t(fx::zeros({1, 2, 5, 5}));
      },
      {"fx::nn::ConvTranspose", "(1, 2, 5, 5)", "(4, 2, 3, 3)"}));
  EXPECT_TRUE(throws_mentioning([] { (void)fx::nn::DepthwiseConv({3}, 4, 6); },
                                {"fx::nn::DepthwiseConv", "6", "4"}));
}

}  // namespace
