// Generic code written for double runs on fx::Real unchanged (issue: everyday idioms that the
// former expression templates rejected), and statement folding keeps the tape as small as
// expression templates made it without changing any gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <fluxion/ad/complex_scalar.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/testing/helpers.hpp>
#include <vector>

namespace {

template <class T>
T sq(T v) {
  return v * v;
}

// Central differences of a generic f at x, component i.
template <class F>
double fd(F& f, std::vector<double> x, size_t i, double h = 1e-6) {
  std::vector<double> a = x, b = x;
  a[i] += h;
  b[i] -= h;
  return (f(a) - f(b)) / (2 * h);
}

template <class F>
void expect_matches_fd(F f, const std::vector<double>& x, double tol = 1e-6) {
  std::vector<double> g = fx::gradient(f, x);
  ASSERT_EQ(g.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(g[i], fd(f, x, i), tol * std::max(1.0, std::abs(g[i]))) << "component " << i;
}

}  // namespace

TEST(GenericCode, AutoVariablesAccumulate) {
  expect_matches_fd(
      [](const auto& w) {
        auto s = w[0] * w[1];
        s = s + w[1] * w[2];
        auto e = exp(w[0]);
        e = e + exp(w[1]);
        return s * e;
      },
      {0.3, -0.7, 1.1});
}

TEST(GenericCode, TemplatesDeduceTheNumberTypeFromAnExpression) {
  expect_matches_fd([](const auto& w) { return sq(log(w[0])) + sq(w[0] * w[1] - 1.0); },
                    {1.7, 0.4});
}

TEST(GenericCode, StdMaxAndMinOfAVariableAndAnExpression) {
  auto f = [](const auto& w) {
    auto m = w[0];
    for (size_t i = 1; i < w.size(); ++i) m = std::max(m, w[i] * 2.0);
    auto n = std::min(w[0] * w[1], w[2]);
    return m + n;
  };
  std::vector<double> x{0.5, 1.5, -2.0};
  std::vector<double> g = fx::gradient(f, x);  // m = 2 w1, n = w2
  EXPECT_EQ(g, (std::vector<double>{0.0, 2.0, 1.0}));
  expect_matches_fd(f, {3.0, 1.0, 2.0});
}

TEST(GenericCode, ComplexPowerWithARealExponent) {
  expect_matches_fd(
      [](const auto& w) {
        using T = std::decay_t<decltype(w[0])>;
        std::complex<T> z(w[0], w[1]);
        auto p = std::pow(z, w[2]);
        auto q = std::pow(z, std::complex<T>(w[2], w[0]));
        return std::real(p) + std::imag(q) + std::abs(p);
      },
      {0.8, -0.6, 1.7});
}

TEST(GenericCode, RoundingFunctionsHaveZeroDerivativeAndFmodItsPartials) {
  auto f = [](const auto& w) {
    using std::floor, std::ceil, std::round, std::trunc, std::fmod;
    return floor(w[0] * 3.0) + ceil(w[0]) * w[1] + round(w[1]) + trunc(w[0] * w[1]) +
           fmod(w[0] * 5.0, w[1]);
  };
  std::vector<double> x{0.37, 1.3};
  std::vector<double> g = fx::gradient(f, x);
  // fmod(5 w0, w1) = 5 w0 - trunc(5 w0 / w1) w1; every rounding function is flat here, so
  // d/dw0 is fmod's 5 and d/dw1 is ceil(w0) (from ceil(w0) w1) less trunc(5 w0 / w1).
  const double t = std::trunc(5 * 0.37 / 1.3);
  EXPECT_DOUBLE_EQ(g[0], 5.0);
  EXPECT_DOUBLE_EQ(g[1], std::ceil(0.37) - t);
  expect_matches_fd(f, x);
}

TEST(GenericCode, ConditionalsAndStandardAlgorithms) {
  expect_matches_fd(
      [](const auto& w) {
        using T = std::decay_t<decltype(w[0])>;
        std::vector<T> v(w.begin(), w.end());
        std::sort(v.begin(), v.end());
        T acc = 0;
        for (const T& e : v) acc = acc > 1.0 ? acc * e : acc + e * e;
        return acc + *std::max_element(v.begin(), v.end());
      },
      {0.9, -0.4, 1.6, 0.2});
}

TEST(GenericCode, FoldingMakesOneStatementPerExpression) {
  fx::ad::ScalarRecording rec;
  fx::Real a = rec.variable(2.0), b = rec.variable(3.0), s = rec.variable(1.0);
  const size_t before = rec.tape().size(), ops = rec.tape().operations();
  s += a * b;                     // one statement: s, a, b
  fx::Real e = exp(a - b * 2.0);  // one statement: a, b
  fx::Real z = a * b + sin(a);    // two temporaries merged: one statement
  EXPECT_EQ(rec.tape().size() - before, 3u);
  EXPECT_EQ(rec.tape().operations() - ops, 3u + 2u + 3u);
  const auto& adj = rec.adjoints(s + e + z);
  const double ev = std::exp(2.0 - 6.0);
  EXPECT_DOUBLE_EQ(adj[a.index()], 3.0 + ev + 3.0 + std::cos(2.0));
  EXPECT_DOUBLE_EQ(adj[b.index()], 2.0 - 2 * ev + 2.0);
}

TEST(GenericCode, CopiesAndNamedValuesAreNeverFolded) {
  fx::ad::ScalarRecording rec;
  fx::Real x = rec.variable(2.0);
  fx::Real t = x * x;              // named: its statement must stay x²
  fx::Real u = fx::Real(t) * 3.0;  // a copy of t, as a getter returning by value makes
  fx::Real v = t * 1.0;            // t read again
  EXPECT_DOUBLE_EQ(rec.adjoints(v)[x.index()], 4.0);
  EXPECT_DOUBLE_EQ(rec.adjoints(u)[x.index()], 12.0);
  std::complex<fx::Real> z(x * x, x);
  fx::Real re = -z.real();  // std::complex returns copies: z keeps x²
  EXPECT_DOUBLE_EQ(rec.adjoints(re)[x.index()], -4.0);
  EXPECT_DOUBLE_EQ(rec.adjoints(z.real())[x.index()], 4.0);
}

TEST(GenericCode, AValueReadAfterBeingMovedIntoAnOperationThrows) {
  fx::ad::ScalarRecording rec;
  fx::Real x = rec.variable(2.0);
  fx::Real t = x * x;
  fx::Real u = std::move(t) * 3.0;  // t's statement now computes u
  EXPECT_DOUBLE_EQ(rec.adjoints(u)[x.index()], 12.0);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        fx::Real w = t + 1.0;
        (void)w;
      },
      {"fx::Real", "std::move"}));
}
