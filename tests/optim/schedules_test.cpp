// Learning-rate schedules against values computed by hand from the PyTorch /
// ParameterSchedulers.jl formulas quoted in fluxion/optim/schedules.hpp.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include <fluxion/ops.hpp>
#include <fluxion/optim/adjust.hpp>
#include <fluxion/optim/rules.hpp>
#include <fluxion/optim/schedules.hpp>
#include <fluxion/testing.hpp>

using namespace fx::optim;

namespace {
constexpr double pi = std::numbers::pi;
}

TEST(Schedules, StepExpPolyInv) {
  Step step{.start = 1.0, .decay = 0.1, .step_size = 3};
  EXPECT_DOUBLE_EQ(step(0), 1.0);
  EXPECT_DOUBLE_EQ(step(2), 1.0);
  EXPECT_DOUBLE_EQ(step(3), 0.1);
  EXPECT_DOUBLE_EQ(step(7), 0.01);
  Exp e{.start = 2.0, .decay = 0.5};
  EXPECT_DOUBLE_EQ(e(0), 2.0);
  EXPECT_DOUBLE_EQ(e(3), 0.25);
  Poly p{.start = 1.0, .degree = 2, .steps = 4, .end = 0.1};
  EXPECT_DOUBLE_EQ(p(0), 1.0);
  EXPECT_DOUBLE_EQ(p(2), 0.1 + 0.9 * 0.25);
  EXPECT_DOUBLE_EQ(p(4), 0.1);
  EXPECT_DOUBLE_EQ(p(9), 0.1);  // holds the end
  Inv inv{.start = 1.0, .decay = 0.5, .degree = 2};
  EXPECT_DOUBLE_EQ(inv(0), 1.0);
  EXPECT_DOUBLE_EQ(inv(2), 0.25);  // 1 / (1 + 1)^2
}

TEST(Schedules, CosineWithRestartsAndGrowingPeriods) {
  Cosine c{.max = 1.0, .min = 0.2, .period = 4};
  EXPECT_DOUBLE_EQ(c(0), 1.0);
  EXPECT_DOUBLE_EQ(c(2), 0.6);  // half way: the mean
  EXPECT_NEAR(c(1), 0.2 + 0.8 * (1 + std::cos(pi / 4)) / 2, 1e-15);
  EXPECT_DOUBLE_EQ(c(4), 1.0);  // restart
  EXPECT_NEAR(c(5), c(1), 1e-15);
  Cosine grow{.max = 1.0, .min = 0.0, .period = 2, .period_mult = 2};  // periods 2, 4, 8
  EXPECT_DOUBLE_EQ(grow(2), 1.0);
  EXPECT_NEAR(grow(4), 0.5, 1e-15);  // 2 into the 4-step period
  EXPECT_DOUBLE_EQ(grow(6), 1.0);
  Cosine once{.max = 1.0, .min = 0.0, .period = 4, .restart = false};  // torch CosineAnnealingLR
  EXPECT_NEAR(once(4), 0.0, 1e-15);
  EXPECT_NEAR(once(6), 0.5, 1e-15);  // back up, no jump
}

TEST(Schedules, TriangleAndItsDecayingForm) {
  Triangle t{.min = 0.1, .max = 0.5, .half_period = 4};
  EXPECT_DOUBLE_EQ(t(0), 0.1);
  EXPECT_DOUBLE_EQ(t(2), 0.3);
  EXPECT_DOUBLE_EQ(t(4), 0.5);
  EXPECT_DOUBLE_EQ(t(6), 0.3);
  EXPECT_DOUBLE_EQ(t(8), 0.1);
  Triangle t2{.min = 0.1, .max = 0.5, .half_period = 4, .amplitude_decay = 0.5};  // triangular2
  EXPECT_DOUBLE_EQ(t2(4), 0.5);
  EXPECT_DOUBLE_EQ(t2(12), 0.3);  // second cycle's peak: half the height
}

TEST(Schedules, OneCycleFollowsTorchsPhases) {
  // total 10, pct 0.3: warm-up ends at step 2 (0.3 * 10 - 1), annealing at step 9.
  OneCycle oc{.max_lr = 1.0, .total_steps = 10};
  const double initial = 1.0 / 25, final_lr = initial / 1e4;
  EXPECT_NEAR(oc(0), initial, 1e-15);
  EXPECT_NEAR(oc(1), 1.0 + (initial - 1.0) * (1 + std::cos(pi * 0.5)) / 2, 1e-15);
  EXPECT_DOUBLE_EQ(oc(2), 1.0);
  EXPECT_NEAR(oc(5), final_lr + (1.0 - final_lr) * (1 + std::cos(pi * 3 / 7)) / 2, 1e-15);
  EXPECT_NEAR(oc(9), final_lr, 1e-15);
  EXPECT_NEAR(oc(50), final_lr, 1e-15);
}

TEST(Schedules, WarmupThenCosineAndSequences) {
  Schedule s = warmup(4, Cosine{.max = 1.0, .min = 0.0, .period = 10}, 0.2);
  EXPECT_DOUBLE_EQ(s(0), 0.2);
  EXPECT_DOUBLE_EQ(s(2), 0.6);
  EXPECT_DOUBLE_EQ(s(4), 1.0);                                // cosine's step 0
  EXPECT_NEAR(s(9), (1 + std::cos(pi * 5 / 10)) / 2, 1e-15);  // cosine's step 5
  Sequence seq({{Constant{3.0}, 2}, {Linear{1.0, 0.0, 4}, 4}, {Exp{.start = 1, .decay = 0.5}, 0}});
  EXPECT_DOUBLE_EQ(seq(1), 3.0);
  EXPECT_DOUBLE_EQ(seq(3), 0.75);
  EXPECT_DOUBLE_EQ(seq(6), 1.0);
  EXPECT_DOUBLE_EQ(seq(8), 0.25);
  // A user's own schedule is any callable.
  Schedule halves = [](int64_t t) { return 1.0 / double(t + 1); };
  EXPECT_DOUBLE_EQ(halves(3), 0.25);
}

TEST(Schedules, DriveTheLearningRateThroughAdjust) {
  std::vector<fx::Tensor> m{fx::zeros({1}, fx::f64)};
  auto opt = setup(Descent{}, m);
  Step sched{.start = 1.0, .decay = 0.5, .step_size = 1};
  for (int64_t t = 0; t < 3; ++t) {
    adjust(opt, sched(t));
    update(opt, m, std::vector<fx::Tensor>{fx::ones({1}, fx::f64)});
  }
  EXPECT_DOUBLE_EQ(fx::to_vector<double>(m[0])[0], -1.75);  // -(1 + 0.5 + 0.25)
}

TEST(Schedules, BadArgumentsThrow) {
  EXPECT_TRUE(fx::testing::throws_mentioning([] { Exp{1, 0.5}(-1); }, {"Exp", "-1"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([] { Cosine{.period = 0}(3); }, {"Cosine", "period"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([] { Sequence(std::vector<Sequence::Part>{}); },
                                             {"Sequence"}));
}
