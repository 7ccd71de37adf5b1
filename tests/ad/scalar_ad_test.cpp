// Scalar reverse mode (fx::Real) through fx::gradient on generic C++ code.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/testing/helpers.hpp>
#include <vector>

namespace {

template <class T>
T rosenbrock(const std::vector<T>& x) {
  T s = 0;
  for (size_t i = 0; i + 1 < x.size(); ++i)
    s += 100 * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i]);
  return s;
}

template <class T>
T fib_like(T x, int n) {  // recursion with branches
  if (n <= 1) return n == 0 ? T(1) : x;
  return fib_like(x, n - 1) * x + (n % 2 ? sin(x) : cos(x));
}

}  // namespace

TEST(ScalarAD, LoopOfSinesMatchesClosedForm) {
  auto f = [](auto x) {
    decltype(x) s = 0;
    for (int i = 0; i < 10; ++i) s += sin(x * i);
    return s;
  };
  double want = 0;
  for (int i = 0; i < 10; ++i) want += i * std::cos(i * 1.3);
  EXPECT_NEAR(fx::gradient(f, 1.3), want, 1e-13);
}

TEST(ScalarAD, EveryMathFunctionMatchesFiniteDifferences) {
  auto f = [](auto x) {
    using std::abs, std::max, std::min;
    return sin(x) * cos(x) + tan(x / 3) + exp(x / 2) + log(x) + log1p(x) + sqrt(x) + tanh(x) +
           sinh(x / 2) + cosh(x / 3) + atan(x) + asin(x / 4) + acos(x / 5) + erf(x) + abs(x - 2) +
           pow(x, 2.5) + pow(x, x) + atan2(x, x + 1) + hypot(x, 2 * x) + expm1(x / 7) +
           max(x, 1.0 * x * x) + min(x, 3.0) - x / (x + 1);
  };
  for (double x : {0.3, 0.9, 1.7}) {
    double h = 1e-6;
    double fd = (fx::value(f(x + h)) - fx::value(f(x - h))) / (2 * h);
    EXPECT_NEAR(fx::gradient(f, x), fd, 1e-6 * std::max(1.0, std::abs(fd))) << "at " << x;
  }
}

TEST(ScalarAD, VectorArgumentGivesVectorGradient) {
  std::vector<double> x = {0.5, -1.2, 2.0, 0.7};
  std::vector<double> g = fx::gradient([](const auto& v) { return rosenbrock(v); }, x);
  ASSERT_EQ(g.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double want = 0;
    if (i + 1 < x.size()) want += -400 * x[i] * (x[i + 1] - x[i] * x[i]) - 2 * (1 - x[i]);
    if (i > 0) want += 200 * (x[i] - x[i - 1] * x[i - 1]);
    EXPECT_NEAR(g[i], want, 1e-10);
  }
}

TEST(ScalarAD, SeveralArgumentsAndArrays) {
  auto f = [](auto a, const auto& b) { return a * b[0] + a * a * b[1]; };
  auto [ga, gb] = fx::gradient(f, 2.0, std::array<double, 2>{3.0, 5.0});
  EXPECT_DOUBLE_EQ(ga, 3.0 + 2 * 2.0 * 5.0);
  EXPECT_DOUBLE_EQ(gb[0], 2.0);
  EXPECT_DOUBLE_EQ(gb[1], 4.0);
}

TEST(ScalarAD, RecursionAndBranches) {
  auto f = [](auto x) { return fib_like(x, 6); };
  double x = 0.8, h = 1e-6;
  double fd = (fib_like(x + h, 6) - fib_like(x - h, 6)) / (2 * h);
  EXPECT_NEAR(fx::gradient(f, x), fd, 1e-7);
}

TEST(ScalarAD, WithGradientReturnsValue) {
  auto [v, g] = fx::withgradient([](auto x) { return x * x * x; }, 2.0);
  EXPECT_DOUBLE_EQ(v, 8.0);
  EXPECT_DOUBLE_EQ(g, 12.0);
}

TEST(ScalarAD, ConstantFunctionHasZeroGradient) {
  EXPECT_EQ(fx::gradient([](auto x) { return decltype(x)(3.0) + 0 * fx::value(x); }, 1.0), 0.0);
}

TEST(ScalarAD, NonGenericLambdaTakingRealIsAccepted) {
  EXPECT_DOUBLE_EQ(fx::gradient([](fx::Real x) { return x * 4.0; }, 1.0), 4.0);
}

TEST(ScalarAD, CapturingAnOuterVariableInANestedGradientIsAnError) {
  auto outer = [](auto x) { return x * fx::gradient([&](auto y) { return x * y; }, 1.0); };
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { (void)fx::gradient(outer, 2.0); },
                                             {"fx::Real", "nested"}));
  // The failed nested call left no recording behind.
  EXPECT_DOUBLE_EQ(fx::gradient([](auto x) { return 3 * x; }, 1.0), 3.0);
}

TEST(ScalarAD, AutoExpressionsKeepTheirOperandsValues) {
  // `auto t = a * b` is a Real holding its value: changing a afterwards must not change t,
  // exactly as with double.
  auto f = [](auto x) {
    auto a = x + 0.0;
    decltype(x) b = 3.0;
    auto t = a * x;  // x²
    b = x * 100;     // not seen by t
    decltype(x) s = t + t * 2;
    return s + 0 * b;  // 3x²
  };
  EXPECT_DOUBLE_EQ(fx::gradient(f, 1.5), 9.0);
}

TEST(ScalarAD, ConditionalsOverDifferentExpressionsHaveAType) {
  auto f = [](auto u) {
    decltype(u) s = 0;
    s += u > 0 ? u * u : exp(u);  // two operands or one
    s += u > 10 ? u * u : 0.0;    // an expression or a number
    s += u < 0 ? u : u * 2.0;     // a Real or an expression
    return s;
  };
  EXPECT_DOUBLE_EQ(fx::gradient(f, 2.0), 2 * 2.0 + 2.0);
  EXPECT_DOUBLE_EQ(fx::gradient(f, -1.0), std::exp(-1.0) + 1.0);
}

TEST(ScalarAD, ExpressionsOfAFinishedRecordingAreRejected) {
  fx::Real stale;
  {
    fx::ad::ScalarRecording rec;
    stale = rec.variable(2.0);
  }
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        fx::Real r = stale * stale + 1.0;
        (void)r;
      },
      {"fx::Real"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] { (void)fx::gradient([&](auto x) { return x * stale; }, 1.0); }, {"fx::Real"}));
}

TEST(ScalarAD, LongTapesGrowCorrectly) {
  // The tape grows many times (statement and operand stacks separately, keeping more room for
  // statements than for operands); the gradient must not notice. Σ_i x_i² over 400k variables:
  // three operands a statement, after 400k variables without operands.
  std::vector<double> x(400000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1e-3 * double(i % 977);
  auto f = [](const auto& v) {
    typename std::decay_t<decltype(v)>::value_type s = 0;
    for (const auto& e : v) s += e * e;
    return s;
  };
  for (int rep = 0; rep < 2; ++rep) {  // the second call reuses the grown tape
    std::vector<double> g = fx::gradient(f, x);
    for (size_t i = 0; i < x.size(); i += 997) ASSERT_DOUBLE_EQ(g[i], 2 * x[i]) << i;
    ASSERT_DOUBLE_EQ(g.back(), 2 * x.back());
  }
}

// The Reals of vector arguments live in buffers kept between gradient calls: calls of growing
// and shrinking sizes, several vector arguments, nested vectors, a function that changes its
// argument, and a gradient inside another one's function all see fresh, correct arguments.
TEST(ScalarAD, VectorArgumentBuffersAreReusedSafely) {
  auto sq = [](const auto& v) {
    typename std::decay_t<decltype(v)>::value_type s = 0;
    for (const auto& e : v) s += e * e;
    return s;
  };
  // 300000 variables outgrow the tape's first statement stack (made in one step, see
  // ScalarRecording::variables).
  for (size_t n : {5, 1000, 3, 0, 64, 300000, 1000}) {
    std::vector<double> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = 0.5 + double(i % 7);
    std::vector<double> g = fx::gradient(sq, x);
    ASSERT_EQ(g.size(), n);
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += g[i] != 2 * x[i];
    EXPECT_EQ(wrong, 0u) << n;
  }
  std::vector<double> a = {1, 2, 3}, b = {4, 5};
  auto [ga, gb] = fx::gradient([](const auto& u, const auto& v) { return u[2] * v[1]; }, a, b);
  EXPECT_EQ(ga, (std::vector<double>{0, 0, 5}));
  EXPECT_EQ(gb, (std::vector<double>{0, 3}));
  std::vector<std::vector<double>> nested = {{1, 2}, {3}};
  auto gn = fx::gradient([](const auto& m) { return m[0][1] * m[1][0]; }, nested);
  EXPECT_EQ(gn, (std::vector<std::vector<double>>{{0, 3}, {2}}));
  // f grows its (by-value) argument: the caller's gradient keeps the argument's length.
  auto grows = [](auto v) {
    v.push_back(v[0] * 2.0);
    return v[0] * v.back();
  };
  EXPECT_EQ(fx::gradient(grows, std::vector<double>{3}), (std::vector<double>{12}));
  // A gradient taken inside the differentiated function, on a vector of plain numbers.
  auto outer = [&](const auto& v) {
    std::vector<double> inner = fx::gradient(sq, std::vector<double>{1, 2, 3});
    return v[0] * inner[2];
  };
  EXPECT_EQ(fx::gradient(outer, std::vector<double>{2}), (std::vector<double>{6}));
}
