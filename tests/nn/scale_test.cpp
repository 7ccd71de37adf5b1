// fx::nn::Scale, the layer docs/adding-a-layer.md builds: its values, gradients against finite
// differences, its place in a Chain and an optimiser step, and its error message.
#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/optim.hpp>
#include <fluxion/testing.hpp>

TEST(Scale, ComputesActOfXTimesScalePlusBias) {
  auto s = fx::nn::Scale(3, fx::relu, /*bias=*/true, fx::f64);
  s.scale = fx::tensor({2, -1, 0.5}, fx::f64);
  s.bias = fx::tensor({0, 1, -1}, fx::f64);
  auto x = fx::tensor({1, 2, 4, -3, 0.5, 2}, fx::f64).reshape({2, 3});
  // x * scale = [[2, -2, 2], [-6, -0.5, 1]]; + bias = [[2, -1, 1], [-6, 0.5, 0]]; relu
  EXPECT_EQ(fx::to_vector<double>(s(x)), (std::vector<double>{2, 0, 1, 0, 0.5, 0}));
  auto nb = fx::nn::Scale(3, fx::identity, /*bias=*/false, fx::f64);
  EXPECT_FALSE(nb.bias.defined());
  EXPECT_EQ(fx::to_vector<double>(nb(x)), fx::to_vector<double>(x));  // scale starts at 1
}

TEST(Scale, GradientsMatchFiniteDifferences) {
  auto s = fx::nn::Scale(4, fx::tanh, true, fx::f64);
  s.scale = fx::testing::randn({4}, {.seed = 1});
  s.bias = fx::testing::randn({4}, {.seed = 2});
  auto x = fx::testing::randn({5, 4}, {.seed = 3});
  auto y = fx::testing::randn({5, 4}, {.seed = 4});
  auto loss = [&](const fx::nn::Scale& m, const fx::Tensor& x) { return fx::mse(m(x), y); };
  auto r = fx::testing::gradcheck(loss, s, x);
  EXPECT_TRUE(r) << r;
  // d/dbias of sum(x * scale + bias) is the number of rows; d/dscale is the column sums of x.
  auto g = fx::gradient([&](const fx::nn::Scale& m) { return fx::sum(m(x)); },
                        fx::nn::Scale(4, fx::identity, true, fx::f64));
  EXPECT_TRUE(fx::allclose(g.bias, fx::full({4}, 5.0, fx::f64)));
  EXPECT_TRUE(fx::allclose(g.scale, fx::sum(x, {0})));
}

TEST(Scale, TrainsInsideAChain) {
  fx::Generator gen(5);
  auto model = fx::nn::Chain(fx::nn::Dense(3, 4, fx::relu, gen), fx::nn::Scale(4));
  EXPECT_EQ(fx::nn::parameter_count(model), 3 * 4 + 4 + 4 + 4);
  auto x = fx::randn({8, 3}, gen), y = fx::randn({8, 4}, gen);
  auto loss = [&](const auto& m) { return fx::mse(m(x), y); };
  auto opt = fx::optim::setup(fx::optim::Descent{0.1}, model);
  const double before = loss(model).item();
  for (int step = 0; step < 20; ++step) fx::optim::update(opt, model, fx::gradient(loss, model));
  EXPECT_LT(loss(model).item(), before);
}

TEST(Scale, WrongInputSizeNamesTheLayerAndShapes) {
  auto s = fx::nn::Scale(4);
  auto call = [&] { (void)s(fx::zeros({2, 3})); };
  EXPECT_TRUE(fx::testing::throws_mentioning(call, {"fx::nn::Scale", "(2, 3)", "(4,)"}));
}
