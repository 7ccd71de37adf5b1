// fx::Dual: forward-mode arithmetic, <cmath>, comparisons, levels and nesting, against closed
// forms and central finite differences.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <fluxion/ad/dual.hpp>
#include <fluxion/ad/reverse.hpp>
#include <sstream>
#include <type_traits>

namespace {

using fx::Dual;

// Every function fx::Real supports, in one expression (as scalar_ad_test does for Real).
template <class T>
T every_math_function(T x) {
  using std::abs, std::max, std::min;
  return sin(x) * cos(x) + tan(x / 3) + exp(x / 2) + log(x) + log1p(x) + sqrt(x) + tanh(x) +
         sinh(x / 2) + cosh(x / 3) + atan(x) + asin(x / 4) + acos(x / 5) + erf(x) + abs(x - 2) +
         fabs(2 - 3 * x) + pow(x, 2.5) + pow(x, x) + pow(1.5, x) + atan2(x, x + 1) + atan2(0.3, x) +
         hypot(x, 2 * x) + hypot(x, 1.0) + expm1(x / 7) + max(x, 1.0 * x * x) + min(x, 3.0) +
         max(0.5, x) - x / (x + 1) + 2 / x - (1 - x);
}

double central(double (*f)(double), double x, double h = 1e-6) {
  return (f(x + h) - f(x - h)) / (2 * h);
}
double every_math_function_d(double x) { return every_math_function(x); }

}  // namespace

TEST(Dual, ArithmeticMatchesClosedForms) {
  Dual<double> x(3.0, {1.0});
  Dual<double> y = x * x * x - 2 * x + 1.0 / x;  // 3x² - 2 - 1/x²
  EXPECT_DOUBLE_EQ(y.value(), 27 - 6 + 1.0 / 3);
  EXPECT_DOUBLE_EQ(y.partial(0), 27 - 2 - 1.0 / 9);
  Dual<double> q = (x + 1) / (x - 1);  // -2/(x-1)²
  EXPECT_DOUBLE_EQ(q.partial(0), -2.0 / 4);
  Dual<double> z = -x + 5;
  EXPECT_DOUBLE_EQ(z.partial(0), -1.0);
  z += x;
  z *= x;  // 5x
  z -= 1;
  z /= 2;  // 2.5x - 0.5
  EXPECT_DOUBLE_EQ(z.value(), 7.0);
  EXPECT_DOUBLE_EQ(z.partial(0), 2.5);
}

TEST(Dual, EveryMathFunctionMatchesFiniteDifferences) {
  for (double x0 : {0.3, 0.9, 1.7}) {
    Dual<double> x(x0, {1.0});
    Dual<double> y = every_math_function(x);
    EXPECT_DOUBLE_EQ(y.value(), every_math_function(x0));
    double fd = central(every_math_function_d, x0);
    EXPECT_NEAR(y.partial(0), fd, 1e-7 * std::max(1.0, std::abs(fd))) << "at " << x0;
  }
}

TEST(Dual, ChunkedTangentsAreIndependentDirections) {
  // f(a, b, c) = a b sin(c): three partials from one evaluation on Dual<double, 3>.
  using D3 = Dual<double, 3>;
  D3 a(1.5, {1, 0, 0}), b(-2.0, {0, 1, 0}), c(0.7, {0, 0, 1});
  D3 f = a * b * sin(c);
  EXPECT_DOUBLE_EQ(f.partial(0), -2.0 * std::sin(0.7));
  EXPECT_DOUBLE_EQ(f.partial(1), 1.5 * std::sin(0.7));
  EXPECT_DOUBLE_EQ(f.partial(2), 1.5 * -2.0 * std::cos(0.7));
}

namespace {
// Every operator form (Dual op Dual, Dual op number, number op Dual, unary minus) on two inputs.
template <class T>
T operator_forms(T a, T b) {
  return a * b - b / a + 3.0 / a - (2 - b) + (a + 1) * -b / 2 + (b - 0.5) * 4 + 1 / (a * a + b) +
         every_math_function(a * 0.25 + 1.1) * b;
}

// Dual<S, N> (tangents packed into vector groups for double and float, N >= 2) against N runs of
// Dual<double> (one tangent, element by element): component k of a and b is (k + 1) and (1 - k).
template <class S, int N>
void expect_packed_matches_one_at_a_time() {
  std::array<S, N> da{}, db{};
  for (int k = 0; k < N; ++k) {
    da[size_t(k)] = S(k + 1);
    db[size_t(k)] = S(1 - k);
  }
  const Dual<S, N> y = operator_forms(Dual<S, N>(S(0.8), da), Dual<S, N>(S(-1.3), db));
  ASSERT_EQ(y.partials().size(), size_t(N));
  for (int k = 0; k < N; ++k) {
    Dual<double> one = operator_forms(Dual<double>(0.8, {k + 1.0}), Dual<double>(-1.3, {1.0 - k}));
    const double rel = std::is_same_v<S, float> ? 2e-5 : 1e-13;
    const double tol = rel * std::max(1.0, std::abs(one.partial(0)));
    EXPECT_NEAR(double(y.partial(k)), one.partial(0), tol) << "N = " << N << ", component " << k;
    EXPECT_EQ(y.partials()[size_t(k)], y.partial(k));
  }
}
}  // namespace

TEST(Dual, PackedTangentsMatchOneTangentAtATime) {
  expect_packed_matches_one_at_a_time<double, 2>();
  expect_packed_matches_one_at_a_time<double, 3>();
  expect_packed_matches_one_at_a_time<double, 4>();
  expect_packed_matches_one_at_a_time<double, 5>();
  expect_packed_matches_one_at_a_time<double, 15>();
  expect_packed_matches_one_at_a_time<double, 16>();
  expect_packed_matches_one_at_a_time<float, 3>();
  expect_packed_matches_one_at_a_time<float, 9>();
}

TEST(Dual, ComparisonsAndBranchesUseValues) {
  Dual<double> x(2.0, {1.0}), y(2.0, {-7.0});
  EXPECT_TRUE(x == y);  // same value, different tangents
  EXPECT_TRUE(x < 3);
  EXPECT_TRUE(1.5 < x);
  EXPECT_TRUE(x >= y && x <= 2.0 && x != 2.5);
  Dual<Dual<double>> nested(x, {Dual<double>(1.0)});
  EXPECT_TRUE(nested > 1 && nested == x);
  using std::max;
  EXPECT_DOUBLE_EQ(max(x, 3.0 * x).partial(0), 3.0);  // std::max and fx::max agree by value
  EXPECT_TRUE(isfinite(x));
  EXPECT_FALSE(isnan(x));
}

TEST(Dual, ValueRecursesToTheDouble) {
  Dual<Dual<Dual<double>>> x(Dual<Dual<double>>(Dual<double>(1.25)));
  static_assert(std::is_same_v<decltype(fx::value(x)), double>);
  EXPECT_EQ(fx::value(x), 1.25);
  EXPECT_EQ(fx::value(Dual<fx::Real>(fx::Real(0.5))), 0.5);
  std::ostringstream os;
  os << Dual<double, 2>(1.5, {2.0, 3.0});
  EXPECT_EQ(os.str(), "1.5[2 3]_1");
}

TEST(Dual, LevelsKeepPerturbationsApart) {
  using D1 = Dual<double, 1, 1>;
  using D2 = Dual<double, 1, 2>;
  static_assert(std::is_same_v<Dual<double>, D1>);
  static_assert(std::is_same_v<Dual<Dual<double>>, Dual<D1, 1, 2>>);
  D1 x(3.0, {1.0});
  D2 y(5.0, {1.0});
  auto p = x * y;  // both perturbations, level 2 outside
  static_assert(std::is_same_v<decltype(p), Dual<D1, 1, 2>>);
  static_assert(std::is_same_v<decltype(y * x), Dual<D1, 1, 2>>);
  EXPECT_DOUBLE_EQ(p.value().value(), 15.0);
  EXPECT_DOUBLE_EQ(p.value().partial(0), 5.0);     // ∂/∂x
  EXPECT_DOUBLE_EQ(p.partial(0).value(), 3.0);     // ∂/∂y
  EXPECT_DOUBLE_EQ(p.partial(0).partial(0), 1.0);  // ∂²/∂x∂y
  // One level is one perturbation: two Dual<double>s share it (this is what confusion is).
  D1 y_same(5.0, {1.0});
  EXPECT_DOUBLE_EQ((x * y_same).partial(0), 8.0);
}

TEST(Dual, NestedDualsGiveHigherDerivatives) {
  // f = exp(sin x): f''' = e^{sin x} cos x (cos² x - 3 sin x - 1).
  using D3 = Dual<Dual<Dual<double>>>;
  double x0 = 0.7;
  D3 x(Dual<Dual<double>>(Dual<double>(x0, {1.0}), {Dual<double>(1.0)}),
       {Dual<Dual<double>>(Dual<double>(1.0))});
  D3 y = exp(sin(x));
  double s = std::sin(x0), c = std::cos(x0), e = std::exp(s);
  EXPECT_NEAR(y.partial(0).value().value(), c * e, 1e-14);
  EXPECT_NEAR(y.partial(0).partial(0).value(), (c * c - s) * e, 1e-14);
  EXPECT_NEAR(y.partial(0).partial(0).partial(0), e * c * (c * c - 3 * s - 1), 1e-14);
}

TEST(Dual, EveryMathFunctionSecondDerivativeMatchesFiniteDifferences) {
  for (double x0 : {0.4, 1.3}) {
    auto d1 = [](double x) { return every_math_function(Dual<double>(x, {1.0})).partial(0); };
    Dual<Dual<double>> x(Dual<double>(x0, {1.0}), {Dual<double>(1.0)});
    double d2 = every_math_function(x).partial(0).partial(0);
    double h = 1e-5, fd = (d1(x0 + h) - d1(x0 - h)) / (2 * h);
    EXPECT_NEAR(d2, fd, 1e-6 * std::max(1.0, std::abs(fd))) << "at " << x0;
  }
}

TEST(Dual, OverRealRecordsTangentsOnTheTape) {
  // fx::gradient of a Dual<Real> tangent is a second derivative (reverse over forward).
  auto d1 = [](auto x) {
    using R = decltype(x);
    Dual<R> xd(x, {R(1.0)});
    return every_math_function(xd).partial(0);
  };
  for (double x0 : {0.4, 1.3}) {
    double d2 = fx::gradient(d1, x0);
    double h = 1e-5, fd = (d1(x0 + h) - d1(x0 - h)) / (2 * h);
    EXPECT_NEAR(d2, fd, 1e-6 * std::max(1.0, std::abs(fd))) << "at " << x0;
  }
}

TEST(Dual, MixesWithRealConstantsAndVariables) {
  auto f = [](auto r) {  // r: fx::Real; a Dual<double> times a Real is a Dual<Real>
    Dual<double> c(2.0, {1.0});
    auto p = c * r + r;
    static_assert(std::is_same_v<decltype(p), Dual<fx::Real>>);
    return p.partial(0) * 3.0 + p.value();  // 3r + 3r: d/dr = 6
  };
  EXPECT_DOUBLE_EQ(fx::gradient(f, 1.5), 6.0);
}
