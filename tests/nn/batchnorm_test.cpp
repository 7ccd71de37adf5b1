#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/io/save.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/optim.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(BatchNorm, TrainingUsesBatchStatisticsAndUpdatesRunningOnes) {
  auto bn = fx::nn::BatchNorm(2, fx::identity, {.momentum = 0.5, .dtype = fx::f64});
  bn.scale = fx::tensor({2, 1}, fx::f64);
  bn.bias = fx::tensor({0, 10}, fx::f64);
  // channel 0: 1, 3, 5, 7 (mean 4, biased var 5, unbiased 20/3); channel 1: 2 everywhere.
  auto x = fx::tensor({1, 2, 3, 2, 5, 2, 7, 2}, fx::f64).reshape({4, 2});
  fx::nn::trainmode(bn);
  auto y = fx::to_vector<double>(bn(x));
  const double s = 1 / std::sqrt(5 + 1e-5);
  std::vector<double> want{-3 * s * 2, 10, -1 * s * 2, 10, 1 * s * 2, 10, 3 * s * 2, 10};
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-12) << i;
  // running = 0.5 old + 0.5 new: mean (0 -> 2, 0 -> 1), var (1 -> (1 + 20/3) / 2, 1 -> 0.5).
  auto rm = fx::to_vector<double>(bn.running_mean), rv = fx::to_vector<double>(bn.running_var);
  EXPECT_NEAR(rm[0], 2, 1e-12);
  EXPECT_NEAR(rm[1], 1, 1e-12);
  EXPECT_NEAR(rv[0], (1 + 20.0 / 3) / 2, 1e-12);
  EXPECT_NEAR(rv[1], 0.5, 1e-12);
}

TEST(BatchNorm, TestModeUsesRunningStatistics) {
  auto bn = fx::nn::BatchNorm(2, fx::identity, {.dtype = fx::f64});
  bn.running_mean = fx::tensor({1, -1}, fx::f64);
  bn.running_var = fx::tensor({4, 0.25}, fx::f64);
  auto x = fx::tensor({3, 0, 5, -2}, fx::f64).reshape({2, 2, 1});
  auto y = fx::to_vector<double>(bn(x));  // automatic, outside a gradient: test mode
  EXPECT_NEAR(y[0], 2 / std::sqrt(4 + 1e-5), 1e-12);
  EXPECT_NEAR(y[1], 1 / std::sqrt(0.25 + 1e-5), 1e-12);
  EXPECT_NEAR(y[2], 4 / std::sqrt(4 + 1e-5), 1e-12);
  EXPECT_NEAR(y[3], -1 / std::sqrt(0.25 + 1e-5), 1e-12);
  EXPECT_EQ(fx::to_vector<double>(bn.running_mean), (std::vector<double>{1, -1}));  // untouched
}

TEST(BatchNorm, GradientTrainsAndUpdatesTheCallersRunningStatistics) {
  auto bn = fx::nn::BatchNorm(3);
  auto x = fx::randn({8, 3, 4, 4}) * 2.0 + 1.0;
  auto g = fx::gradient([&](const fx::nn::BatchNorm& m) { return fx::sum(m(x) * x); }, bn);
  EXPECT_TRUE(g.scale.defined() && g.bias.defined());
  auto want = fx::mean(x, {0, 2, 3}) * 0.1;
  EXPECT_TRUE(fx::allclose(bn.running_mean, want, 1e-5, 1e-6));
  // d/dbias of sum(y * x) is the sum of x over each channel.
  EXPECT_TRUE(fx::allclose(g.bias, fx::sum(x, {0, 2, 3}), 1e-4, 1e-3));
}

TEST(BatchNorm, GradientsMatchFiniteDifferencesInBothModes) {
  auto bn = fx::nn::BatchNorm(3, fx::tanh, {.dtype = fx::f64});
  bn.scale = fx::testing::randn({3}, {.seed = 1});
  bn.bias = fx::testing::randn({3}, {.seed = 2});
  bn.running_mean = fx::testing::randn({3}, {.seed = 5});
  bn.running_var = fx::testing::uniform({3}, {.seed = 6, .lo = 0.5, .hi = 2});
  auto x = fx::testing::randn({4, 3, 5}, {.seed = 3});
  auto loss = [](const fx::nn::BatchNorm& m, const fx::Tensor& x) { return m(x); };
  fx::nn::trainmode(bn);
  auto r = fx::testing::gradcheck(loss, bn, x);
  EXPECT_TRUE(r) << r;
  fx::nn::testmode(bn);
  auto r2 = fx::testing::gradcheck(loss, bn, x);
  EXPECT_TRUE(r2) << r2;
  auto plain = fx::nn::BatchNorm(3, fx::identity, {.affine = false, .track_stats = false});
  EXPECT_EQ(fx::nn::parameter_count(plain), 0);
  auto r3 = fx::testing::gradcheck(loss, plain, x);  // batch statistics at test time too
  EXPECT_TRUE(r3) << r3;
}

TEST(BatchNorm, RunningStatisticsAreStateNotParameters) {
  auto bn = fx::nn::BatchNorm(5);
  EXPECT_EQ(fx::nn::parameter_count(bn), 10);
  std::vector<std::string> state;
  fx::for_each_named_state(bn, [&](const std::string& p, fx::Tensor&) { state.push_back(p); });
  EXPECT_EQ(state, (std::vector<std::string>{"running_mean", "running_var"}));
}

TEST(BatchNorm, TrainsInAChainAndSavesItsRunningStatistics) {
  fx::Generator gen(4);
  auto model = fx::nn::Chain(fx::nn::Dense(3, 4, fx::identity, gen), fx::nn::BatchNorm(4, fx::relu),
                             fx::nn::Dense(4, 1, fx::identity, gen));
  auto x = fx::randn({16, 3}, gen), y = fx::randn({16, 1}, gen);
  auto loss = [&](const auto& m) { return fx::mse(m(x), y); };
  auto opt = fx::optim::setup(fx::optim::Adam{0.05}, model);
  fx::nn::trainmode(model);  // the loss below is evaluated in training mode too
  const double before = loss(model).item();
  for (int step = 0; step < 30; ++step) fx::optim::update(opt, model, fx::gradient(loss, model));
  EXPECT_LT(loss(model).item(), before);
  auto& bn = model.get<1>();
  EXPECT_FALSE(fx::allclose(bn.running_mean, fx::zeros({4})));  // the steps updated it
  const std::string path = ::testing::TempDir() + "/batchnorm_state.safetensors";
  fx::io::save(path, model);
  auto fresh =
      fx::nn::Chain(fx::nn::Dense(3, 4), fx::nn::BatchNorm(4, fx::relu), fx::nn::Dense(4, 1));
  fx::io::load(path, fresh);
  EXPECT_TRUE(fx::allclose(fresh.get<1>().running_mean, bn.running_mean, 0, 0));
  EXPECT_TRUE(fx::allclose(fresh.get<1>().running_var, bn.running_var, 0, 0));
  fx::nn::testmode(model);
  EXPECT_TRUE(fx::allclose(fresh(x), model(x), 0, 0));  // test mode: the loaded statistics
}

TEST(BatchNorm, WrongChannelCountNamesTheLayerAndShapes) {
  auto bn = fx::nn::BatchNorm(4);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)bn(fx::zeros({2, 3, 5}));
      },
      {"fx::nn::BatchNorm", "(2, 3, 5)", "4"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { (void)bn(fx::zeros({4})); },
                                             {"fx::nn::BatchNorm", "(4,)"}));
}

}  // namespace
