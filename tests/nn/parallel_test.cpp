#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

auto cat2 = [](const fx::Tensor& a, const fx::Tensor& b) { return fx::concat({a, b}, 1); };

TEST(Parallel, AppliesEachLayerToTheInputOrToItsOwn) {
  fx::Generator gen(1);
  auto par = fx::nn::Parallel(cat2, fx::nn::Dense(4, 2, fx::identity, gen),
                              fx::nn::Dense(3, 1, fx::identity, gen));
  auto x1 = fx::randn({5, 4}, gen), x2 = fx::randn({5, 3}, gen);
  auto y = par(x1, x2);
  EXPECT_TRUE(
      fx::allclose(y, fx::concat({std::get<0>(par.layers)(x1), std::get<1>(par.layers)(x2)}, 1)));
  auto same = fx::nn::Parallel(fx::nn::add_outputs, fx::nn::Dense(4, 2, fx::identity, gen),
                               fx::nn::Dense(4, 2, fx::identity, gen));
  EXPECT_TRUE(fx::allclose(same(x1), std::get<0>(same.layers)(x1) + std::get<1>(same.layers)(x1)));
  EXPECT_EQ(fx::nn::parameter_count(par), 4 * 2 + 2 + 3 + 1);
}

TEST(Parallel, GradientsMatchFiniteDifferences) {
  auto x = fx::testing::randn({4, 3}, {.seed = 2});
  auto par2 = fx::nn::Parallel(fx::nn::add_outputs,
                               fx::nn::Dense(fx::testing::randn({3, 3}, {.seed = 1}), {}, fx::tanh),
                               fx::nn::Scale(3, fx::identity, true, fx::f64));
  auto r = fx::testing::gradcheck([](const auto& m, const fx::Tensor& x) { return m(x); }, par2, x);
  EXPECT_TRUE(r) << r;
}

}  // namespace
