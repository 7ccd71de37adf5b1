#include <gtest/gtest.h>

#include <fluxion/nn/chain.hpp>
#include <fluxion/nn/dense.hpp>
#include <fluxion/nn/functors.hpp>
#include <fluxion/ops.hpp>

namespace {

// A user layer with a non-trainable integer buffer and a hyperparameter.
struct Counter {
  fx::Tensor scale = fx::ones({3});
  fx::Tensor seen = fx::zeros({1}, fx::i64);
  double momentum = 0.1;
  FX_FIELDS(scale, seen)
};

}  // namespace

TEST(Functors, TrainablesShareStorageInTraversalOrder) {
  auto model =
      fx::nn::Chain(fx::nn::Dense(3, 4), fx::nn::Dense(4, 2, fx::identity, false), Counter{});
  auto ps = fx::nn::trainables(model);
  ASSERT_EQ(ps.size(), 4u);  // weight, bias, weight (no bias), scale; the i64 buffer is not one
  EXPECT_EQ(ps[0].shape(), (fx::Shape{4, 3}));
  EXPECT_EQ(ps[1].shape(), (fx::Shape{4}));
  EXPECT_EQ(ps[2].shape(), (fx::Shape{2, 4}));
  EXPECT_EQ(ps[3].shape(), (fx::Shape{3}));
  EXPECT_TRUE(ps[0].same_storage(std::get<0>(model.layers).weight));
  EXPECT_EQ(fx::nn::parameter_count(model), 12 + 4 + 8 + 3);
}

TEST(Functors, FmapTransformsEveryLeafAndKeepsTheRest) {
  auto d = fx::nn::Dense(3, 2, fx::tanh);
  auto d64 = fx::nn::fmap([](const fx::Tensor& t) { return t.astype(fx::f64); }, d);
  EXPECT_EQ(d64.weight.dtype(), fx::f64);
  EXPECT_EQ(d64.bias.dtype(), fx::f64);
  EXPECT_EQ(d64.act, d.act);
  EXPECT_EQ(d.weight.dtype(), fx::f32);  // the original is untouched
  auto stepped =
      fx::nn::fmap([](const fx::Tensor& p, const fx::Tensor& g) { return p - g * 0.5; }, d,
                   fx::nn::fmap([](const fx::Tensor& t) { return fx::ones_like(t); }, d));
  EXPECT_TRUE(fx::allclose(stepped.weight, d.weight - 0.5));
  auto nb = fx::nn::Dense(3, 2, fx::identity, false);
  EXPECT_FALSE(fx::nn::fmap([](const fx::Tensor& t) { return t * 2.0; }, nb).bias.defined());
}

TEST(Functors, FmapOverMismatchedStructuresThrows) {
  std::vector<fx::Tensor> a = {fx::zeros({2}), fx::zeros({2})}, b = {fx::zeros({2})};
  EXPECT_THROW(fx::nn::fmap([](const fx::Tensor& x, const fx::Tensor& y) { return x + y; }, a, b),
               fx::Error);
}
