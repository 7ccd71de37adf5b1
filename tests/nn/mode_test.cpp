#include <gtest/gtest.h>

#include <fluxion/ad/forward.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>

namespace {

// Records whether the layer saw training mode on its last call.
struct Probe {
  fx::nn::Mode mode = fx::nn::Mode::automatic;
  FX_FIELDS(mode)
  static inline bool seen = false;
  fx::Tensor operator()(const fx::Tensor& x) const {
    seen = fx::nn::is_training(mode);
    return x;
  }
};

TEST(Mode, AutomaticTrainsOnlyInsideReverseMode) {
  Probe p;
  auto x = fx::randn({3}, fx::f64);
  (void)p(x);
  EXPECT_FALSE(Probe::seen);
  (void)fx::gradient([&](const fx::Tensor& t) { return fx::sum(p(t)); }, x);
  EXPECT_TRUE(Probe::seen);
  (void)p(x);
  EXPECT_FALSE(Probe::seen);  // back to test mode once the recording ends
  (void)fx::jvp([&](const fx::Tensor& t) { return p(t); }, x, fx::ones_like(x));
  EXPECT_FALSE(Probe::seen);  // forward mode alone is not training
}

TEST(Mode, TestmodeAndTrainmodeReachEveryLayerOfANestedModel) {
  auto model = fx::nn::Chain(Probe{}, fx::nn::Dense(3, 3),
                             fx::nn::Chain(fx::nn::Dropout(0.5), fx::nn::BatchNorm(3)));
  auto modes = [&] {
    return std::vector<fx::nn::Mode>{std::get<0>(model.layers).mode,
                                     std::get<0>(std::get<2>(model.layers).layers).mode,
                                     std::get<1>(std::get<2>(model.layers).layers).mode};
  };
  using M = fx::nn::Mode;
  fx::nn::testmode(model);
  EXPECT_EQ(modes(), (std::vector<M>{M::test, M::test, M::test}));
  auto x = fx::randn({4, 3});
  (void)fx::gradient([&](const auto& m) { return fx::sum(m(x)); }, model);
  EXPECT_FALSE(Probe::seen);  // forced off inside a gradient
  fx::nn::trainmode(model);
  EXPECT_EQ(modes(), (std::vector<M>{M::train, M::train, M::train}));
  (void)model(x);
  EXPECT_TRUE(Probe::seen);  // forced on outside one
  fx::nn::automode(model);
  EXPECT_EQ(modes(), (std::vector<M>{M::automatic, M::automatic, M::automatic}));
}

}  // namespace
