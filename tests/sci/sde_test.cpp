// fx::sci::solve_sde: strong order of Euler-Maruyama (1/2) and derivative-free Milstein (1) on
// geometric Brownian motion against its exact solution on the same Brownian path, the path's
// coarsening, and pathwise gradients against finite differences and the exact solution.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/sci/sde.hpp>
#include <fluxion/testing.hpp>

namespace {

using fx::Tensor;
using fx::sci::SDEMethod;

constexpr double kMu = 0.5, kSigma = 0.8;

Tensor gbm_drift(const Tensor& u, const Tensor& mu, double) { return mu * u; }
Tensor gbm_noise(const Tensor& u, const Tensor&, double) { return kSigma * u; }

// Mean over paths of |X_T(numerical) - X_T(exact)|, X_T = exp((mu - sigma^2/2) T + sigma W_T).
double strong_error(const fx::sci::BrownianPath& W, SDEMethod m) {
  const int64_t n = W.noises();
  Tensor u0 = fx::ones({n}, fx::f64), mu = fx::scalar(kMu, fx::f64);
  Tensor uT =
      fx::sci::solve_sde(gbm_drift, gbm_noise, u0, mu, {0.0, W.t_end()}, W, {.method = m}).back();
  Tensor exact = fx::exp((kMu - 0.5 * kSigma * kSigma) * W.t_end() + kSigma * W.value(W.steps()));
  return fx::mean(fx::abs(uT - exact)).item();
}

// Least-squares slope of log(error) against log(dt).
double observed_order(SDEMethod m) {
  fx::Generator gen(11);
  auto fine = fx::sci::brownian_path(400, 0.0, 1.0, 1024, gen);
  std::vector<double> x, y;
  for (int64_t factor : {256, 128, 64, 32, 16}) {
    auto W = fine.coarsened(factor);
    x.push_back(std::log(W.dt));
    y.push_back(std::log(strong_error(W, m)));
  }
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / x.size(), my += y[i] / y.size();
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i)
    sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
  return sxy / sxx;
}

TEST(SolveSde, StrongOrderOnGeometricBrownianMotion) {
  double em = observed_order(SDEMethod::euler_maruyama);
  double milstein = observed_order(SDEMethod::milstein);
  EXPECT_NEAR(em, 0.5, 0.15);
  EXPECT_NEAR(milstein, 1.0, 0.15);
}

TEST(SolveSde, CoarsenedPathIsTheSamePath) {
  fx::Generator gen(2);
  auto W = fx::sci::brownian_path(3, 0.0, 2.0, 8, gen);
  auto C = W.coarsened(4);
  EXPECT_EQ(C.steps(), 2);
  EXPECT_DOUBLE_EQ(C.dt, 1.0);
  auto a = fx::to_vector<double>(W.value(8)), b = fx::to_vector<double>(C.value(2));
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(a[i], b[i], 1e-14);
  // Increments have variance dt.
  fx::Generator g2(3);
  auto V = fx::sci::brownian_path(20000, 0.0, 1.0, 4, g2);
  EXPECT_NEAR(fx::mean(fx::square(V.increments)).item(), 0.25, 0.01);
  EXPECT_THROW(W.coarsened(3), fx::Error);
}

TEST(SolveSde, PathwiseGradient) {
  fx::Generator gen(5);
  auto W = fx::sci::brownian_path(4, 0.0, 1.0, 64, gen);
  Tensor u0 = fx::tensor({1.0, 0.5, 2.0, 1.5}, fx::f64);
  for (SDEMethod m : {SDEMethod::euler_maruyama, SDEMethod::milstein}) {
    auto solve = [&](const Tensor& u0, const Tensor& mu) {
      return fx::sci::solve_sde(gbm_drift, gbm_noise, u0, mu, {0.0, 0.5, 1.0}, W, {.method = m})[2];
    };
    auto r =
        fx::testing::gradcheck(solve, fx::testing::GradcheckOptions{.order = 1, .forward = false},
                               u0, fx::scalar(kMu, fx::f64));
    EXPECT_TRUE(r) << r;
  }
  // Along a fine path, d mean(X_T) / d mu approaches the exact pathwise mean(T X_T).
  auto F = fx::sci::brownian_path(50, 0.0, 1.0, 2048, gen);
  Tensor ones = fx::ones({50}, fx::f64);
  Tensor g = fx::gradient(
      [&](const Tensor& mu) {
        return fx::mean(fx::sci::solve_sde(gbm_drift, gbm_noise, ones, mu, {0.0, 1.0}, F).back());
      },
      fx::scalar(kMu, fx::f64));
  double exact =
      fx::mean(fx::exp((kMu - 0.5 * kSigma * kSigma) + kSigma * F.value(F.steps()))).item();
  EXPECT_NEAR(g.item(), exact, 0.01 * exact);
}

TEST(SolveSde, BadInputsThrow) {
  fx::Generator gen(1);
  auto W = fx::sci::brownian_path(2, 0.0, 1.0, 10, gen);
  Tensor u0 = fx::ones({2}, fx::f64), mu = fx::scalar(kMu, fx::f64);
  EXPECT_THROW(fx::sci::solve_sde(gbm_drift, gbm_noise, u0, mu, {0.0, 0.55}, W), fx::Error);
  EXPECT_THROW(fx::sci::solve_sde(gbm_drift, gbm_noise, u0, mu, {0.0, 2.0}, W), fx::Error);
  EXPECT_THROW(fx::sci::solve_sde(gbm_drift, gbm_noise, fx::ones({3}, fx::f64), mu, {0.0, 1.0}, W),
               fx::Error);
}

}  // namespace
