// fx::sci::lbfgs: the Rosenbrock valley in 2 and 10 dimensions with both line searches, f32
// parameters, and the errors.
#include <gtest/gtest.h>

#include <cmath>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/sci/lbfgs.hpp>

namespace {

using fx::Tensor;

// Extended Rosenbrock: sum over pairs of (1 - x_2i)^2 + 100 (x_2i+1 - x_2i^2)^2; minimum at 1.
std::pair<double, Tensor> rosenbrock(const Tensor& x) {
  auto [f, g] = fx::withgradient(
      [](const Tensor& x) {
        Tensor a = fx::slice(x, 0, 0, x.size(0), 2), b = fx::slice(x, 0, 1, x.size(0), 2);
        return fx::sum(fx::square(1.0 - a) + 100.0 * fx::square(b - a * a));
      },
      x);
  return {f.item(), g};
}

TEST(Lbfgs, MinimisesRosenbrock) {
  for (auto ls : {fx::sci::LineSearch::strong_wolfe, fx::sci::LineSearch::backtracking}) {
    auto r = fx::sci::lbfgs(rosenbrock, fx::tensor({-1.2, 1.0}, fx::f64),
                            {.max_iterations = 200, .line_search = ls});
    EXPECT_TRUE(r.converged) << r.stop;
    EXPECT_LT(r.loss, 1e-14);
    for (double v : fx::to_vector<double>(r.x)) EXPECT_NEAR(v, 1.0, 1e-6);
    EXPECT_LE(r.iterations, 200);
  }
  std::vector<double> start;
  for (int i = 0; i < 10; ++i) start.push_back(i % 2 ? 1.0 : -1.2);
  auto r = fx::sci::lbfgs(rosenbrock, fx::from_vector(start));
  EXPECT_TRUE(r.converged) << r.stop;
  for (double v : fx::to_vector<double>(r.x)) EXPECT_NEAR(v, 1.0, 1e-6);
}

TEST(Lbfgs, WolfeNeedsFewerEvaluationsThanItsIterationsTimesTwo) {
  auto r = fx::sci::lbfgs(rosenbrock, fx::tensor({-1.2, 1.0}, fx::f64));
  EXPECT_TRUE(r.converged);
  EXPECT_LT(r.evaluations, 2 * r.iterations + 10);  // most unit steps are accepted at once
}

TEST(Lbfgs, F32ParametersKeepTheirDtype) {
  auto r = fx::sci::lbfgs(rosenbrock, fx::tensor({-1.2f, 1.0f}), {.gtol = 1e-3});
  EXPECT_EQ(r.x.dtype(), fx::f32);
  for (double v : fx::to_vector<double>(r.x)) EXPECT_NEAR(v, 1.0, 1e-2);
}

TEST(Lbfgs, BadInputsThrow) {
  auto wrong = [](const Tensor&) {
    return std::pair<double, Tensor>(1.0, fx::zeros({3}, fx::f64));
  };
  EXPECT_THROW(fx::sci::lbfgs(wrong, fx::zeros({2}, fx::f64)), fx::Error);
  EXPECT_THROW(fx::sci::lbfgs(rosenbrock, fx::zeros({2}, fx::i64)), fx::Error);
  EXPECT_THROW(fx::sci::lbfgs(rosenbrock, fx::zeros({2}, fx::f64), {.c1 = 0.95}), fx::Error);
}

}  // namespace
