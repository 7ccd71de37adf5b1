#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/chain.hpp>
#include <fluxion/nn/dense.hpp>
#include <fluxion/nn/functors.hpp>
#include <fluxion/nn/losses.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

TEST(Chain, DeducesItsLayersAndAppliesThemInOrder) {
  auto model = fx::nn::Chain(fx::nn::Dense(784, 256, fx::relu), fx::nn::Dense(256, 10));
  static_assert(std::is_same_v<decltype(model), fx::nn::Chain<fx::nn::Dense, fx::nn::Dense>>);
  EXPECT_EQ(model.size(), 2u);
  auto x = fx::randn({3, 784});
  auto y = model(x);
  EXPECT_EQ(y.shape(), (fx::Shape{3, 10}));
  auto& [a, b] = model.layers;
  EXPECT_TRUE(fx::allclose(y, b(a(x)), 0, 0));
  EXPECT_EQ(fx::nn::parameter_count(model), 784 * 256 + 256 + 256 * 10 + 10);
}

TEST(Chain, AcceptsFunctionsLambdasAndNestedChains) {
  fx::Generator gen(1);
  auto inner = fx::nn::Chain(fx::nn::Dense(4, 4, fx::tanh, gen), fx::Activation(fx::softmax));
  auto model = fx::nn::Chain(
      inner, [](const fx::Tensor& h) { return h * 2.0; }, fx::nn::Dense(4, 2, fx::identity, gen));
  auto x = fx::randn({3, 4}, gen);
  auto want = std::get<2>(model.layers)(fx::softmax(std::get<0>(inner.layers)(x)) * 2.0);
  EXPECT_TRUE(fx::allclose(model(x), want, 1e-6, 1e-7));
  std::vector<std::string> names;
  fx::for_each_named_tensor(model,
                            [&](const std::string& n, const fx::Tensor&) { names.push_back(n); });
  EXPECT_EQ(names, (std::vector<std::string>{"layers.0.layers.0.weight", "layers.0.layers.0.bias",
                                             "layers.2.weight", "layers.2.bias"}));
}

TEST(Chain, GradientsMatchFiniteDifferencesAndHaveTheModelsStructure) {
  fx::Generator gen(5);
  auto model =
      fx::nn::Chain(fx::nn::Dense(3, 5, fx::tanh, gen), fx::nn::Dense(5, 4, fx::identity, gen));
  std::get<0>(model.layers).bias = fx::randn({5}, gen);
  auto x = fx::testing::randn({6, 3}, {.seed = 1});
  auto labels = fx::tensor({0, 3, 1, 2, 3, 0}, fx::i64);
  auto loss = [&](const auto& m) { return fx::logitcrossentropy(m(x), labels); };
  auto r = fx::testing::gradcheck(loss, model);
  EXPECT_TRUE(r) << r;
  auto [val, grad] = fx::withgradient(loss, model);
  EXPECT_EQ(val.ndim(), 0);
  static_assert(std::is_same_v<decltype(grad), decltype(model)>);
  int leaves = 0;
  fx::zip_tensors(
      [&](const fx::Tensor& p, const fx::Tensor& g) {
        EXPECT_EQ(g.shape(), p.shape());
        ++leaves;
      },
      model, grad);
  EXPECT_EQ(leaves, 4);
  EXPECT_EQ(std::get<1>(grad.layers).weight.shape(), (fx::Shape{4, 5}));
}

TEST(Chain, ALayersErrorSurfacesUnchanged) {
  auto model = fx::nn::Chain(fx::nn::Dense(4, 3), fx::nn::Dense(2, 1));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        model(fx::zeros({5, 4}));
      },
      {"Dense", "(5, 3)", "(1, 2)"}));
}

TEST(Chain, NamedEntriesAreFoundByNameAndCallThrough) {
  fx::Generator gen(2);
  auto model = fx::nn::Chain(fx::nn::named<"enc">(fx::nn::Dense(4, 3, fx::relu, gen)),
                             fx::Activation(fx::tanh),
                             fx::nn::named<"dec">(fx::nn::Dense(3, 2, fx::identity, gen)));
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(model.get<"enc">())>, fx::nn::Dense>);
  static_assert(decltype(model)::index_of<"dec">() == 2);
  EXPECT_EQ(model.get<"dec">().out_features(), 2);
  EXPECT_EQ(&model.get<"dec">(), &model.get<2>());  // by position: the inner layer too
  auto x = fx::randn({5, 4}, gen);
  EXPECT_TRUE(fx::allclose(model(x), model.get<"dec">()(fx::tanh(model.get<"enc">()(x)))));
  std::vector<std::string> paths;
  fx::for_each_named_tensor(model,
                            [&](const std::string& p, const fx::Tensor&) { paths.push_back(p); });
  EXPECT_EQ(paths.front(), "layers.0.layer.weight");
  auto g = fx::gradient([&](const auto& m) { return fx::sum(m(x)); }, model);
  EXPECT_TRUE(g.get<"enc">().weight.defined());
}

TEST(Chain, SliceCopiesASubChain) {
  fx::Generator gen(3);
  auto model = fx::nn::Chain(fx::nn::Dense(4, 3, fx::relu, gen), fx::nn::Dense(3, 3, fx::tanh, gen),
                             fx::nn::Dense(3, 2, fx::identity, gen));
  auto head = model.slice<0, 2>();
  auto tail = model.slice<2, 3>();
  static_assert(decltype(head)::size() == 2 && decltype(tail)::size() == 1);
  auto x = fx::randn({5, 4}, gen);
  EXPECT_TRUE(fx::allclose(tail(head(x)), model(x), 0, 0));
  auto empty = model.slice<1, 1>();
  EXPECT_TRUE(fx::allclose(empty(x), x, 0, 0));  // no layers: the identity
}
