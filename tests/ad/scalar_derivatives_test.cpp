// Derivative operators on scalar generic code (derivative, nth_derivative, gradient_forward,
// jacobian_forward, hessian, hvp, diaghessian), nesting without perturbation confusion, and the
// Zygote paper's Taylor-series example, against closed forms and finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/ad/scalar_derivatives.hpp>
#include <fluxion/fluxion.hpp>  // the scalar operators must coexist with the tensor ones
#include <fluxion/testing/helpers.hpp>
#include <vector>

namespace {

template <class V>
auto rosenbrock(const V& x) {
  using T = typename V::value_type;
  T s = 0;
  for (size_t i = 0; i + 1 < x.size(); ++i)
    s += 100 * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i]);
  return s;
}

std::vector<std::vector<double>> rosenbrock_hessian(const std::vector<double>& x) {
  size_t n = x.size();
  std::vector<std::vector<double>> H(n, std::vector<double>(n, 0.0));
  for (size_t i = 0; i < n; ++i) {
    if (i + 1 < n) {
      H[i][i] += 1200 * x[i] * x[i] - 400 * x[i + 1] + 2;
      H[i][i + 1] = H[i + 1][i] = -400 * x[i];
    }
    if (i > 0) H[i][i] += 200;
  }
  return H;
}

// A function with a loop, a data-dependent branch and a reused intermediate.
template <class V>
auto branchy(const V& x) {
  using T = typename V::value_type;
  using std::exp, std::log, std::sin, std::sqrt;
  T s = 0, prod = 1;
  for (size_t i = 0; i < x.size(); ++i) {
    T u = sin(x[i]) * x[(i + 1) % x.size()];
    s += u > 0 ? u * u : exp(u);
    prod *= 1 + x[i] * x[i] / 10;
  }
  return s * log(prod) + sqrt(1 + s * s);
}

// Central differences of fx::gradient (reverse mode): a Hessian independent of forward mode.
template <class F>
std::vector<std::vector<double>> fd_hessian(F f, std::vector<double> x, double h = 1e-5) {
  size_t n = x.size();
  std::vector<std::vector<double>> H(n, std::vector<double>(n));
  for (size_t j = 0; j < n; ++j) {
    double xj = x[j];
    x[j] = xj + h;
    std::vector<double> gp = fx::gradient(f, x);
    x[j] = xj - h;
    std::vector<double> gm = fx::gradient(f, x);
    x[j] = xj;
    for (size_t i = 0; i < n; ++i) H[i][j] = (gp[i] - gm[i]) / (2 * h);
  }
  return H;
}

const std::vector<double> kX = {0.5, -1.2, 2.0, 0.7, 1.1, -0.3, 0.9};

}  // namespace

TEST(ScalarDerivatives, DerivativeOfScalarAndVectorValuedFunctions) {
  EXPECT_NEAR(fx::derivative([](auto x) { return x * sin(x); }, 1.3),
              std::sin(1.3) + 1.3 * std::cos(1.3), 1e-15);
  EXPECT_EQ(fx::derivative([](auto) { return 4.0; }, 1.0), 0.0);  // constant: zero
  std::vector<double> d = fx::derivative(
      [](auto x) {
        return std::vector<decltype(x)>{x * x, exp(2 * x)};
      },
      0.5);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_DOUBLE_EQ(d[0], 1.0);
  EXPECT_DOUBLE_EQ(d[1], 2 * std::exp(1.0));
}

TEST(ScalarDerivatives, PerturbationConfusionIsAvoidedByLevels) {
  // d/dx [x · d/dy (x + y)] = d/dx [x · 1] = 1. The inner derivative sees that its function's
  // result already carries the outer perturbation (level 1), so y gets level 2; x + y is then a
  // Dual<Dual<double, 1, 1>, 1, 2> and the inner derivative takes only the level-2 part.
  double d = fx::derivative(
      [](auto x) { return x * fx::derivative([&](auto y) { return x + y; }, 1.0); }, 1.0);
  EXPECT_EQ(d, 1.0);
  // The confusion it avoids: with one untagged perturbation for both, d/dy (x + y) would read
  // x's tangent too (1 + 1 = 2) and the result would be 2.
  fx::Dual<double> x(1.0, {1.0}), y_untagged(1.0, {1.0});
  fx::Dual<double> inner_confused = (x + y_untagged).partial(0);
  EXPECT_EQ((x * inner_confused).partial(0), 2.0);
  // Siskind & Pearlmutter's second example: d/dx [x · d/dy (x · y)] at x = 2 is 2x = 4.
  EXPECT_EQ(fx::derivative(
                [](auto x) { return x * fx::derivative([&](auto y) { return x * y; }, 3.0); }, 2.0),
            4.0);
}

TEST(ScalarDerivatives, ThirdDerivativeOfExpSin) {
  // f''' = e^{sin x} cos x (cos² x - 3 sin x - 1).
  auto f = [](auto x) { return exp(sin(x)); };
  for (double x : {-0.4, 0.7, 2.1}) {
    double s = std::sin(x), c = std::cos(x);
    double want = std::exp(s) * c * (c * c - 3 * s - 1);
    EXPECT_NEAR(fx::nth_derivative<3>(f, x), want, 1e-13) << x;
    // The same by composing derivative three times (levels 1, 2, 3 chosen automatically).
    double composed = fx::derivative(
        [&](auto a) {
          return fx::derivative(
              [&](auto b) { return fx::derivative([&](auto c3) { return f(c3); }, b); }, a);
        },
        x);
    EXPECT_NEAR(composed, want, 1e-13) << x;
    EXPECT_NEAR(fx::nth_derivative<2>(f, x), (c * c - s) * std::exp(s), 1e-14);
    EXPECT_NEAR(fx::nth_derivative<0>(f, x), std::exp(s), 0);
  }
}

TEST(ScalarDerivatives, GradientForwardMatchesReverse) {
  std::vector<double> want = fx::gradient([](const auto& v) { return branchy(v); }, kX);
  auto f = [](const auto& v) { return branchy(v); };
  for (const auto& g : {fx::gradient_forward<1>(f, kX), fx::gradient_forward<3>(f, kX),
                        fx::gradient_forward(f, kX)}) {
    ASSERT_EQ(g.size(), kX.size());
    for (size_t i = 0; i < kX.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-12) << i;
  }
}

TEST(ScalarDerivatives, JacobianForwardMatchesClosedForm) {
  // f(x) = (x0 x1, sin x2, Σ x_i², x_{n-1}³)
  auto f = [](const auto& x) {
    using T = typename std::decay_t<decltype(x)>::value_type;
    T sq = 0;
    for (const auto& xi : x) sq += xi * xi;
    return std::vector<T>{x[0] * x[1], sin(x[2]), sq, x.back() * x.back() * x.back()};
  };
  size_t n = kX.size();
  std::vector<std::vector<double>> want(4, std::vector<double>(n, 0.0));
  want[0][0] = kX[1];
  want[0][1] = kX[0];
  want[1][2] = std::cos(kX[2]);
  for (size_t j = 0; j < n; ++j) want[2][j] = 2 * kX[j];
  want[3][n - 1] = 3 * kX[n - 1] * kX[n - 1];
  auto check = [&](const std::vector<std::vector<double>>& J) {
    ASSERT_EQ(J.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
      ASSERT_EQ(J[i].size(), n);
      for (size_t j = 0; j < n; ++j) EXPECT_NEAR(J[i][j], want[i][j], 1e-14) << i << "," << j;
    }
  };
  check(fx::jacobian_forward<1>(f, kX));
  check(fx::jacobian_forward<3>(f, kX));  // 7 = 3 + 3 + 1: a partial last chunk
  check(fx::jacobian_forward(f, kX));
}

TEST(ScalarDerivatives, JacobianForwardRejectsAChangingOutputLength) {
  auto f = [](const auto& x) {  // one output more on the chunk that seeds x[1]
    using T = typename std::decay_t<decltype(x)>::value_type;
    std::vector<T> y(1, x[0]);
    if constexpr (fx::ad::is_dual_v<T>)
      if (x[1].partial(0) == 1) y.push_back(x[1]);
    return y;
  };
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)fx::jacobian_forward<1>(f, std::vector<double>{1.0, 2.0});
      },
      {"fx::jacobian_forward", "outputs"}));
}

TEST(ScalarDerivatives, HessianOfRosenbrockMatchesClosedForm) {
  auto f = [](const auto& v) { return rosenbrock(v); };
  auto want = rosenbrock_hessian(kX);
  for (const auto& H : {fx::hessian<1>(f, kX), fx::hessian<3>(f, kX), fx::hessian(f, kX)}) {
    ASSERT_EQ(H.size(), kX.size());
    for (size_t i = 0; i < kX.size(); ++i)
      for (size_t j = 0; j < kX.size(); ++j)
        EXPECT_NEAR(H[i][j], want[i][j], 1e-11) << i << "," << j;
  }
}

TEST(ScalarDerivatives, HessianOfBranchyCodeMatchesFiniteDifferencesOfTheGradient) {
  auto f = [](const auto& v) { return branchy(v); };
  auto H = fx::hessian(f, kX);
  auto want = fd_hessian(f, kX);
  for (size_t i = 0; i < kX.size(); ++i)
    for (size_t j = 0; j < kX.size(); ++j) {
      EXPECT_NEAR(H[i][j], want[i][j], 1e-5 * std::max(1.0, std::abs(want[i][j])));
      EXPECT_NEAR(H[i][j], H[j][i], 1e-12 * std::max(1.0, std::abs(H[i][j])));
    }
}

TEST(ScalarDerivatives, HvpAndDiagHessianAgreeWithTheHessian) {
  auto f = [](const auto& v) { return branchy(v); };
  auto H = fx::hessian(f, kX);
  std::vector<double> v = {0.3, -1.0, 0.5, 2.0, 0.0, 1.5, -0.7};
  std::vector<double> hv = fx::hvp(f, kX, v);
  std::vector<double> dh = fx::diaghessian(f, kX);
  for (size_t i = 0; i < kX.size(); ++i) {
    double want = 0;
    for (size_t j = 0; j < kX.size(); ++j) want += H[i][j] * v[j];
    EXPECT_NEAR(hv[i], want, 1e-11 * std::max(1.0, std::abs(want)));
    EXPECT_NEAR(dh[i], H[i][i], 1e-11 * std::max(1.0, std::abs(H[i][i])));
  }
  auto rd = fx::diaghessian([](const auto& x) { return rosenbrock(x); }, kX);
  auto rh = rosenbrock_hessian(kX);
  for (size_t i = 0; i < kX.size(); ++i) EXPECT_NEAR(rd[i], rh[i][i], 1e-11);
  EXPECT_TRUE(
      fx::testing::throws_mentioning([&] { (void)fx::hvp(f, kX, {1.0}); }, {"fx::hvp", "7", "1"}));
}

TEST(ScalarDerivatives, OperatorsNestInsideEachOther) {
  // f(x) = Σ x_i · d/dt sin(x_i t) at t = 1 = Σ x_i² cos x_i; the inner derivative captures x_i,
  // which is a Dual<Real> under hessian and a second-order Dual under diaghessian.
  auto f = [](const auto& x) {
    using T = typename std::decay_t<decltype(x)>::value_type;
    T s = 0;
    for (const auto& xi : x) s += xi * fx::derivative([&](auto t) { return sin(xi * t); }, 1.0);
    return s;
  };
  auto second = [](double x) {
    return 2 * std::cos(x) - 4 * x * std::sin(x) - x * x * std::cos(x);
  };
  auto H = fx::hessian(f, kX);
  auto dh = fx::diaghessian(f, kX);
  for (size_t i = 0; i < kX.size(); ++i) {
    for (size_t j = 0; j < kX.size(); ++j)
      EXPECT_NEAR(H[i][j], i == j ? second(kX[i]) : 0.0, 1e-12) << i << "," << j;
    EXPECT_NEAR(dh[i], second(kX[i]), 1e-12);
  }
}

TEST(ScalarDerivatives, ReverseOverForwardThroughFxGradient) {
  // fx::gradient (fx::Real) of a forward derivative: a second derivative.
  auto d1 = [](auto x) { return fx::derivative([](auto t) { return t * t * sin(t); }, x); };
  double x = 0.8;
  double want = 2 * std::sin(x) + 4 * x * std::cos(x) - x * x * std::sin(x);
  EXPECT_NEAR(fx::gradient(d1, x), want, 1e-13);
  // The inner function may capture the outer fx::Real: d/dx [d/dt (x t³) at t = 2] = 12.
  auto captured = [](auto x) { return fx::derivative([&](auto t) { return x * t * t * t; }, 2.0); };
  EXPECT_DOUBLE_EQ(fx::gradient(captured, 0.7), 12.0);
}

// ---- The Zygote paper's example (Innes et al., "A Differentiable Programming System to Bridge
// Machine Learning and Scientific Computing", arXiv:1907.07587, section "simple example"):
//
//   function s(x)
//     t = 0.0; sign = -1.0
//     for i in 1:19
//       if isodd(i)
//         newterm = x^i / factorial(i)
//         abs(newterm) < 1e-8 && return t
//         sign = -sign
//         t += sign * newterm
//       end
//     end
//     return t
//   end
//   gradient(s, 1.0) == (0.5403023037918872,)        # cos(1.0) == 0.5403023058681398
//
// The truncation rule: odd terms x^i/i! up to i = 19, returning *before* adding the first term
// below 1e-8 in magnitude. At x = 1 the terms 1/1!, ..., 1/11! (1/11! = 2.5e-8) are summed and
// 1/13! = 1.6e-10 stops the loop, so the derivative is the cos series through 1/10!:
// Σ_{n=0..5} (-1)^n/(2n)! = 0.5403023037918872, 2.1e-9 below cos(1). Any tolerance in
// (1/13!, 1/11!] gives this number; 1e-10 keeps the 1/13! term and adds 1/12! = 2.1e-9.
namespace {
template <class T>
T taylor_sin(T x, double tol, std::vector<double>& terms) {
  using std::abs, std::pow;
  T t = 0.0;
  double sign = -1.0, factorial = 1.0;
  for (int i = 1; i <= 19; ++i) {
    factorial *= i;
    if (i % 2 == 1) {
      T newterm = pow(x, double(i)) / factorial;
      if (abs(newterm) < tol) return t;  // early exit
      sign = -sign;                      // mutation
      t += sign * newterm;
      terms.push_back(fx::value(newterm));  // a side effect outside the function
    }
  }
  return t;
}

double cos_series(int m) {  // Σ_{n=0..m} (-1)^n/(2n)!
  double s = 0, fact = 1;
  for (int n = 0; n <= m; ++n) {
    if (n > 0) fact *= (2 * n - 1) * (2 * n);
    s += (n % 2 ? -1 : 1) / fact;
  }
  return s;
}
}  // namespace

TEST(ScalarDerivatives, ZygotePaperTaylorSeriesGradient) {
  std::vector<double> terms;
  double g = fx::gradient([&](auto x) { return taylor_sin(x, 1e-8, terms); }, 1.0);
  EXPECT_NEAR(g, 0.5403023037918872, 1e-12);
  EXPECT_DOUBLE_EQ(g, 0.5403023037918872);  // in fact the same double Zygote prints
  EXPECT_EQ(terms.size(), 6u);              // the terms for i = 1, 3, ..., 11 were added
  EXPECT_NEAR(g, cos_series(5), 1e-15);
  EXPECT_GT(std::abs(g - std::cos(1.0)), 2e-9);  // the tolerance matters: this is not cos(1)
  // Forward mode agrees (ForwardDiff.derivative in the paper), and so does a central difference
  // of the plain double function (h small enough not to cross a truncation boundary).
  double d = fx::derivative([&](auto x) { return taylor_sin(x, 1e-8, terms); }, 1.0);
  EXPECT_NEAR(d, 0.5403023037918872, 1e-12);
  EXPECT_DOUBLE_EQ(d, 0.540302303791887);  // ForwardDiff's printout in the paper (1 ulp apart)
  double h = 1e-6;
  double fd = (taylor_sin(1.0 + h, 1e-8, terms) - taylor_sin(1.0 - h, 1e-8, terms)) / (2 * h);
  EXPECT_NEAR(g, fd, 1e-8);
  // A tighter tolerance keeps one more term.
  EXPECT_NEAR(fx::gradient([&](auto x) { return taylor_sin(x, 1e-10, terms); }, 1.0), cos_series(6),
              1e-15);
}
