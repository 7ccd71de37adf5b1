#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <fluxion/nn/activations.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

double at(const fx::Tensor& t, int64_t i) { return fx::to_vector<double>(t)[i]; }

}  // namespace

TEST(Activations, SoftmaxRowsSumToOneEvenForHugeLogits) {
  auto x = fx::tensor({1, 2, 3, 1000, 1001, 1002, -5, 0, 5}, fx::f32).reshape({3, 3});
  auto p = fx::softmax(x);
  auto rows = fx::to_vector<double>(fx::sum(p, {1}));
  for (double r : rows) EXPECT_NEAR(r, 1.0, 1e-6);
  // Shift invariance: row 1 is row 0 plus 999, so the probabilities agree.
  auto v = fx::to_vector<double>(p);
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(v[3 + j], v[j], 1e-6);
  EXPECT_NEAR(v[0], std::exp(1.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-6);
}

TEST(Activations, SoftmaxAlongAChosenAxis) {
  auto x = fx::testing::randn({3, 4}, {.seed = 1});
  auto cols = fx::to_vector<double>(fx::sum(fx::softmax(x, 0), {0}));
  for (double c : cols) EXPECT_NEAR(c, 1.0, 1e-12);
}

TEST(Activations, LogsoftmaxIsLogOfSoftmaxAndFiniteWhereSoftmaxUnderflows) {
  auto x = fx::testing::randn({4, 5}, {.seed = 3});
  EXPECT_TRUE(fx::allclose(fx::logsoftmax(x), fx::log(fx::softmax(x)), 1e-12, 1e-12));
  auto far = fx::tensor({0, -2000}, fx::f64);
  auto lp = fx::to_vector<double>(fx::logsoftmax(far));
  EXPECT_NEAR(lp[0], 0.0, 1e-12);
  EXPECT_NEAR(lp[1], -2000.0, 1e-9);
}

TEST(Activations, ValuesAtKnownPoints) {
  auto x = fx::tensor({-2, -1, -0.5, 1}, fx::f64);
  EXPECT_NEAR(at(fx::leakyrelu(x), 0), -0.02, 1e-15);
  EXPECT_NEAR(at(fx::leakyrelu(x, 0.2), 1), -0.2, 1e-15);
  EXPECT_NEAR(at(fx::leakyrelu(x), 3), 1.0, 1e-15);
  EXPECT_NEAR(at(fx::elu(x), 1), std::exp(-1.0) - 1, 1e-15);
  EXPECT_NEAR(at(fx::elu(x, 2.0), 0), 2 * (std::exp(-2.0) - 1), 1e-15);
  EXPECT_NEAR(at(fx::gelu(x), 3), 0.8411919906082768, 1e-14);  // tanh approximation
  EXPECT_NEAR(at(fx::gelu(x), 2), -0.15428599017485606, 1e-14);
  EXPECT_NEAR(at(fx::swish(x), 3), 1 / (1 + std::exp(-1.0)), 1e-15);
}

TEST(Activations, OneArgumentOverloadsAreActivations) {
  fx::Activation all[] = {
      fx::relu,      fx::sigmoid,     fx::tanh,       fx::identity,     fx::softplus,
      fx::softmax,   fx::logsoftmax,  fx::leakyrelu,  fx::elu,          fx::gelu,
      fx::swish,     fx::hardsigmoid, fx::hardtanh,   fx::relu6,        fx::rrelu,
      fx::celu,      fx::selu,        fx::gelu_tanh,  fx::gelu_sigmoid, fx::gelu_erf,
      fx::hardswish, fx::mish,        fx::lisht,      fx::softsign,     fx::logsigmoid,
      fx::logcosh,   fx::tanhshrink,  fx::softshrink, fx::trelu};
  auto x = fx::testing::randn({2, 3}, {.seed = 4});
  for (fx::Activation f : all) EXPECT_EQ(f(x).shape(), x.shape());
}

TEST(Activations, GradientsMatchFiniteDifferencesToSecondOrder) {
  // Random inputs keep leakyrelu/elu away from their kink at 0.
  auto x = fx::testing::randn({3, 4}, {.seed = 5});
  auto w = fx::testing::randn({3, 4}, {.seed = 6});  // a weighted sum sees every entry
  fx::Activation fs[] = {fx::softmax, fx::logsoftmax, fx::leakyrelu, fx::elu, fx::gelu, fx::swish};
  const char* names[] = {"softmax", "logsoftmax", "leakyrelu", "elu", "gelu", "swish"};
  for (int i = 0; i < 6; ++i) {
    fx::Activation f = fs[i];
    auto r = fx::testing::gradcheck([&](const fx::Tensor& x) { return fx::sum(f(x) * w); }, x);
    EXPECT_TRUE(r) << names[i] << ": " << r;
  }
  auto r0 = fx::testing::gradcheck(
      [&](const fx::Tensor& x) { return fx::sum(fx::softmax(x, 0) * w); }, x);
  EXPECT_TRUE(r0) << "softmax axis 0: " << r0;
}

TEST(Activations, EluGradientStaysFiniteForLargeInputs) {
  auto x = fx::tensor({-3, 100, 1000}, fx::f32);
  auto g = fx::to_vector<double>(
      fx::gradient([](const fx::Tensor& x) { return fx::sum(fx::elu(x)); }, x));
  EXPECT_NEAR(g[0], std::exp(-3.0), 1e-6);
  EXPECT_EQ(g[1], 1.0);
  EXPECT_EQ(g[2], 1.0);
}

TEST(Activations, SoftmaxGradientIsFiniteForHugeLogits) {
  auto x = fx::tensor({1000, 0, -1000}, fx::f32);
  auto g = fx::to_vector<double>(fx::gradient(
      [](const fx::Tensor& x) {
        return fx::sum(fx::logsoftmax(x) * fx::tensor({1, 2, 3}));
      },
      x));
  for (double v : g) EXPECT_TRUE(std::isfinite(v));
}

// --- every NNlib activation -------------------------------------------------------------------

namespace {

struct Case {
  const char* name;
  fx::Activation f;
  double (*ref)(double);  // the definition, written on scalars
};

double sig(double x) { return 1 / (1 + std::exp(-x)); }
double hsig(double x) { return std::max(0.0, std::min(1.0, (x + 3) / 6)); }
double gelu_tanh_ref(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
constexpr double kSeluL = 1.0507009873554804934193349852946;
constexpr double kSeluA = 1.6732632423543772848170429916717;

fx::Tensor celu2(const fx::Tensor& x) { return fx::celu(x, 2.0); }
fx::Tensor softshrink1(const fx::Tensor& x) { return fx::softshrink(x, 1.0); }
fx::Tensor trelu2(const fx::Tensor& x) { return fx::trelu(x, 2.0); }
fx::Tensor rrelu_wide(const fx::Tensor& x) { return fx::rrelu(x, 0.1, 0.5); }

const Case kCases[] = {
    {"sigmoid", fx::sigmoid, sig},
    {"hardsigmoid", fx::hardsigmoid, hsig},
    {"hardtanh", fx::hardtanh, [](double x) { return std::max(-1.0, std::min(1.0, x)); }},
    {"relu", fx::relu, [](double x) { return std::max(0.0, x); }},
    {"leakyrelu", fx::leakyrelu, [](double x) { return x > 0 ? x : 0.01 * x; }},
    {"relu6", fx::relu6, [](double x) { return std::min(std::max(x, 0.0), 6.0); }},
    {"rrelu", fx::rrelu, [](double x) { return x >= 0 ? x : (1.0 / 8 + 1.0 / 3) / 2 * x; }},
    {"rrelu(0.1, 0.5)", rrelu_wide, [](double x) { return x >= 0 ? x : 0.3 * x; }},
    {"elu", fx::elu, [](double x) { return x > 0 ? x : std::exp(x) - 1; }},
    {"celu", fx::celu, [](double x) { return x > 0 ? x : std::exp(x) - 1; }},
    {"celu(2)", celu2, [](double x) { return x > 0 ? x : 2 * (std::exp(x / 2) - 1); }},
    {"selu", fx::selu, [](double x) { return kSeluL * (x > 0 ? x : kSeluA * (std::exp(x) - 1)); }},
    {"gelu", fx::gelu, gelu_tanh_ref},
    {"gelu_tanh", fx::gelu_tanh, gelu_tanh_ref},
    {"gelu_sigmoid", fx::gelu_sigmoid, gelu_tanh_ref},  // the same function, through sigmoid
    {"gelu_erf", fx::gelu_erf, [](double x) { return 0.5 * x * (1 + std::erf(x / M_SQRT2)); }},
    {"swish", fx::swish, [](double x) { return x * sig(x); }},
    {"hardswish", fx::hardswish, [](double x) { return x * hsig(x); }},
    {"mish", fx::mish, [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }},
    {"lisht", fx::lisht, [](double x) { return x * std::tanh(x); }},
    {"softplus", fx::softplus, [](double x) { return std::log1p(std::exp(x)); }},
    {"softsign", fx::softsign, [](double x) { return x / (1 + std::abs(x)); }},
    {"logsigmoid", fx::logsigmoid, [](double x) { return std::log(sig(x)); }},
    {"logcosh", fx::logcosh, [](double x) { return std::log(std::cosh(x)); }},
    {"tanhshrink", fx::tanhshrink, [](double x) { return x - std::tanh(x); }},
    {"softshrink", fx::softshrink,
     [](double x) { return x > 0.5    ? x - 0.5
                           : x < -0.5 ? x + 0.5
                                      : 0.0; }},
    {"softshrink(1)", softshrink1, [](double x) { return x > 1    ? x - 1
                                                         : x < -1 ? x + 1
                                                                  : 0.0; }},
    {"trelu", fx::trelu, [](double x) { return x > 1 ? x : 0.0; }},
    {"trelu(2)", trelu2, [](double x) { return x > 2 ? x : 0.0; }},
};

}  // namespace

TEST(Activations, EveryActivationMatchesItsScalarDefinition) {
  // Points on both sides of every kink (0, +-0.5, +-1, 2, +-3, 6), none on one.
  std::vector<double> pts = {-7,  -3.5, -2.5, -1.5, -0.8, -0.3, -0.05, 0.05,
                             0.3, 0.7,  1.2,  2.2,  2.9,  3.3,  4.5,   6.5};
  auto x = fx::from_vector(pts);
  for (const Case& c : kCases) {
    auto y = fx::to_vector<double>(c.f(x));
    ASSERT_EQ(y.size(), pts.size()) << c.name;
    for (size_t i = 0; i < pts.size(); ++i)
      EXPECT_NEAR(y[i], c.ref(pts[i]), 1e-12 * (1 + std::abs(y[i]))) << c.name << " at " << pts[i];
    // f32 too: the same values to single precision.
    auto y32 = fx::to_vector<double>(c.f(x.astype(fx::f32)));
    for (size_t i = 0; i < pts.size(); ++i)
      EXPECT_NEAR(y32[i], c.ref(pts[i]), 2e-6 * (1 + std::abs(y[i]))) << c.name << " f32";
  }
}

TEST(Activations, EveryActivationHasFirstAndSecondOrderGradients) {
  // Spread out so the piecewise ones see both sides of their kinks; random points are never
  // within the finite-difference step of one.
  auto x = fx::testing::randn({3, 5}, {.seed = 21}) * 3.0;
  auto w = fx::testing::randn({3, 5}, {.seed = 22});
  for (const Case& c : kCases) {
    auto r = fx::testing::gradcheck([&](const fx::Tensor& a) { return fx::sum(c.f(a) * w); }, x);
    EXPECT_TRUE(r) << c.name << ": " << r;
  }
}

TEST(Activations, StableFormsStayFiniteFarOut) {
  auto x = fx::tensor({-1000, -50, 50, 1000}, fx::f32);
  auto ls = fx::to_vector<double>(fx::logsigmoid(x));
  EXPECT_NEAR(ls[0], -1000, 1e-3);
  EXPECT_NEAR(ls[3], 0, 1e-6);
  auto lc = fx::to_vector<double>(fx::logcosh(x));
  EXPECT_NEAR(lc[0], 1000 - std::log(2.0), 1e-3);
  EXPECT_NEAR(lc[3], 1000 - std::log(2.0), 1e-3);
  auto mi = fx::to_vector<double>(fx::mish(x));
  EXPECT_NEAR(mi[3], 1000, 1e-3);
  EXPECT_NEAR(mi[0], 0, 1e-6);
  for (fx::Activation f : {fx::logsigmoid, fx::logcosh, fx::mish, fx::selu, fx::celu, fx::gelu_erf,
                           fx::gelu_sigmoid, fx::softsign, fx::swish}) {
    auto g =
        fx::to_vector<double>(fx::gradient([&](const fx::Tensor& a) { return fx::sum(f(a)); }, x));
    for (double v : g) EXPECT_TRUE(std::isfinite(v));
  }
  auto g = fx::to_vector<double>(
      fx::gradient([](const fx::Tensor& a) { return fx::sum(fx::logcosh(a)); }, x));
  EXPECT_NEAR(g[0], -1, 1e-6);  // tanh(x)
  EXPECT_NEAR(g[3], 1, 1e-6);
}

TEST(Activations, RreluDrawsOneSlopePerElementFromTheGenerator) {
  auto x = fx::full({100000}, -2.0, fx::f64);
  fx::Generator a(5), b(5), c(6);
  auto ya = fx::rrelu(x, 0.1, 0.3, a);
  EXPECT_TRUE(fx::allclose(ya, fx::rrelu(x, 0.1, 0.3, b), 0, 0));  // same seed, same slopes
  EXPECT_FALSE(fx::allclose(ya, fx::rrelu(x, 0.1, 0.3, c), 0, 0));
  auto slopes = fx::to_vector<double>(ya / x);
  double mean = 0, lo = 1, hi = 0;
  for (double s : slopes) {
    mean += s / double(slopes.size());
    lo = std::min(lo, s);
    hi = std::max(hi, s);
  }
  EXPECT_GE(lo, 0.1);
  EXPECT_LT(hi, 0.3);
  EXPECT_NEAR(mean, 0.2, 2e-3);  // U(0.1, 0.3): sd of the mean 0.058 / sqrt(1e5)
  // Positive inputs pass through; the gradient is each element's own slope.
  auto xs = fx::tensor({-1, 2, -3, 4}, fx::f64);
  fx::Generator g1(8), g2(8);
  auto y = fx::rrelu(xs, 0.1, 0.3, g1);
  auto grad =
      fx::gradient([&](const fx::Tensor& t) { return fx::sum(fx::rrelu(t, 0.1, 0.3, g2)); }, xs);
  auto yv = fx::to_vector<double>(y), gv = fx::to_vector<double>(grad);
  EXPECT_EQ(yv[1], 2);
  EXPECT_EQ(yv[3], 4);
  EXPECT_EQ(gv[1], 1);
  EXPECT_NEAR(gv[0], yv[0] / -1, 1e-15);
  EXPECT_NEAR(gv[2], yv[2] / -3, 1e-15);
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::rrelu(xs, 0.5, 0.1); }, {"rrelu", "0.5"}));
}

TEST(Activations, SoftmaxAndLogsoftmaxOverASetOfAxes) {
  auto x = fx::testing::randn({2, 3, 4}, {.seed = 23});
  auto p = fx::softmax(x, {1, 2});
  auto totals = fx::to_vector<double>(fx::sum(p, {1, 2}));
  for (double t : totals) EXPECT_NEAR(t, 1.0, 1e-12);
  // The same as a softmax over the two axes flattened into one.
  auto flat = fx::softmax(x.reshape({2, 12}), 1).reshape({2, 3, 4});
  EXPECT_TRUE(fx::allclose(p, flat, 1e-12, 1e-14));
  EXPECT_TRUE(fx::allclose(fx::logsoftmax(x, {1, 2}), fx::log(flat), 1e-12, 1e-12));
  EXPECT_NEAR(fx::sum(fx::softmax(x, fx::Axes{})).item(), 1.0, 1e-12);  // every axis
  auto w = fx::testing::randn({2, 3, 4}, {.seed = 24});
  auto r = fx::testing::gradcheck(
      [&](const fx::Tensor& a) {
        return fx::sum(fx::softmax(a, {0, 2}) * w);
      },
      x);
  EXPECT_TRUE(r) << r;
  auto r2 = fx::testing::gradcheck(
      [&](const fx::Tensor& a) {
        return fx::sum(fx::logsoftmax(a, {0, 1}) * w);
      },
      x);
  EXPECT_TRUE(r2) << r2;
}

TEST(Activations, GluGatesTheFirstHalfWithTheSecond) {
  auto x = fx::testing::randn({3, 4, 6}, {.seed = 25});
  auto y = fx::glu(x);
  EXPECT_EQ(y.shape(), (fx::Shape{3, 4, 3}));
  auto want = fx::slice(x, 2, 0, 3) * fx::sigmoid(fx::slice(x, 2, 3, 6));
  EXPECT_TRUE(fx::allclose(y, want, 0, 0));
  auto y1 = fx::glu(x, 1);
  EXPECT_EQ(y1.shape(), (fx::Shape{3, 2, 6}));
  auto xv = fx::to_vector<double>(x), yv = fx::to_vector<double>(y1);
  // y1[i, j, k] = x[i, j, k] * sigmoid(x[i, j + 2, k])
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 6; ++k)
        EXPECT_NEAR(yv[(i * 2 + j) * 6 + k],
                    xv[(i * 4 + j) * 6 + k] * sig(xv[(i * 4 + j + 2) * 6 + k]), 1e-15);
  auto w = fx::testing::randn({3, 2, 6}, {.seed = 26});
  auto r =
      fx::testing::gradcheck([&](const fx::Tensor& a) { return fx::sum(fx::glu(a, 1) * w); }, x);
  EXPECT_TRUE(r) << r;
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] {
        fx::glu(fx::zeros({2, 5}));
      },
      {"glu", "(2, 5)", "odd"}));
}
