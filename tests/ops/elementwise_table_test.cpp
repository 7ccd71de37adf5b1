// The math functions' table (fluxion/ops/elementwise_defs.hpp) from every side its one
// definition reaches: for each op, on points of its test range, the tensor op's value and
// gradient against central finite differences, its jvp against the same, its second derivative
// (gradient of gradient) against forward-over-forward Duals, and the fx::Real and fx::Dual
// overloads against the tensor op. The values themselves are pinned for the functions fluxion
// implements (erfinv, digamma, trigamma) by known values and identities; the rest come from
// <cmath> and are compared with libtorch in tests/oracle.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

namespace {

using fx::Tensor;

std::vector<double> points(double lo, double hi, int n = 9) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(lo + (hi - lo) * (i + 0.37) / n);  // off-grid
  return v;
}

bool close(double a, double b, double rtol, double atol = 1e-12) {
  return std::abs(a - b) <= atol + rtol * std::abs(b);
}

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> tensor;
  std::function<double(double)> real_value, real_derivative;  // through fx::Real
  std::function<double(double)> dual_value, dual_derivative;  // through fx::Dual<double>
  std::function<double(double)> dual_second;                  // Dual<Dual<double>>
  double lo, hi;
  int order;  // how often the tensor op differentiates (elem::tensor_order: the polygamma chain ends)
};

// d^2/dx^2 f(x) by forward over forward; tetragamma's needs pentagamma, which Duals lack.
template <class Op, class F>
double second(F f, double v) {
  if constexpr (std::is_same_v<Op, fx::elem::tetragamma_op>) return NAN;
  else return fx::nth_derivative<2>(f, v);
}

// `using namespace fx::elem` lets the generic lambdas compile for double (fx::gradient and
// fx::derivative ask f's result type for the plain argument); Real and Dual find fx::op by
// argument-dependent lookup.
#define FX_UNARY_CASE(op)                                                        \
  UnaryCase{#op,                                                                 \
            [](const Tensor& x) { return fx::op(x); },                           \
            [](double v) {                                                       \
              fx::ad::ScalarRecording rec;                                       \
              return fx::op(rec.variable(v)).value();                            \
            },                                                                   \
            [](double v) {                                                       \
              return fx::gradient(                                               \
                  [](auto x) {                                                   \
                    using namespace fx::elem;                                    \
                    return op(x);                                                \
                  },                                                             \
                  v);                                                            \
            },                                                                   \
            [](double v) { return fx::op(fx::Dual<double>(v, {1.0})).value(); }, \
            [](double v) {                                                       \
              return fx::derivative(                                             \
                  [](auto x) {                                                   \
                    using namespace fx::elem;                                    \
                    return op(x);                                                \
                  },                                                             \
                  v);                                                            \
            },                                                                   \
            [](double v) {                                                       \
              return second<fx::elem::op##_op>(                                  \
                  [](auto x) {                                                   \
                    using namespace fx::elem;                                    \
                    return op(x);                                                \
                  },                                                             \
                  v);                                                            \
            },                                                                   \
            fx::elem::op##_op::lo,                                               \
            fx::elem::op##_op::hi,                                               \
            fx::elem::tensor_order<fx::elem::op##_op>},
std::vector<UnaryCase> unary_cases() { return {FX_ELEMENTWISE_UNARY(FX_UNARY_CASE)}; }
#undef FX_UNARY_CASE

class Unary : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(Unary, OneDefinitionAgreesEverywhere) {
  const UnaryCase& c = GetParam();
  const std::vector<double> p = points(c.lo, c.hi);
  const Tensor x = fx::from_vector(p);  // f64
  auto total = [&](const Tensor& t) { return fx::sum(c.tensor(t)); };
  const auto y = fx::to_vector<double>(c.tensor(x));
  std::vector<double> g, jv, h;
  if (c.order >= 1) {
    g = fx::to_vector<double>(fx::gradient(total, x));
    jv = fx::to_vector<double>(
        fx::jvp([&](const Tensor& u) { return c.tensor(u); }, x, fx::ones_like(x)).second);
  }
  if (c.order >= 2) {
    auto grad = [&](const Tensor& u) { return fx::sum(fx::gradient(total, u)); };
    h = fx::to_vector<double>(fx::gradient(grad, x));
  }
  const double eps = 1e-6;
  for (size_t i = 0; i < p.size(); ++i) {
    const double v = p[i];
    SCOPED_TRACE(c.name + " at " + std::to_string(v));
    const double fd = (c.tensor(fx::scalar(v + eps, fx::f64)).item<double>() -
                       c.tensor(fx::scalar(v - eps, fx::f64)).item<double>()) /
                      (2 * eps);
    EXPECT_TRUE(close(c.real_value(v), y[i], 1e-15, 0)) << "Real value";
    EXPECT_TRUE(close(c.dual_value(v), y[i], 1e-15, 0)) << "Dual value";
    EXPECT_TRUE(close(c.real_derivative(v), fd, 1e-6, 1e-8)) << "Real derivative vs differences";
    EXPECT_TRUE(close(c.dual_derivative(v), fd, 1e-6, 1e-8)) << "Dual derivative vs differences";
    if (c.order >= 1) {
      EXPECT_TRUE(close(g[i], fd, 1e-6, 1e-8)) << "gradient " << g[i] << " vs differences " << fd;
      EXPECT_TRUE(close(jv[i], fd, 1e-6, 1e-8)) << "jvp " << jv[i] << " vs differences " << fd;
      EXPECT_TRUE(close(c.real_derivative(v), g[i], 1e-13)) << "Real derivative vs tensor";
      EXPECT_TRUE(close(c.dual_derivative(v), g[i], 1e-13)) << "Dual derivative vs tensor";
    }
    if (c.order >= 2) {
      EXPECT_TRUE(close(c.dual_second(v), h[i], 1e-11, 1e-11))
          << "second derivative: Dual " << c.dual_second(v) << ", tensor " << h[i];
    }
  }
  // f32 runs the same definition in float.
  const auto y32 = fx::to_vector<double>(c.tensor(fx::astype(x, fx::f32)));
  for (size_t i = 0; i < p.size(); ++i)
    EXPECT_TRUE(close(y32[i], y[i], 2e-6, 1e-6)) << c.name << " f32 at " << p[i];
}

INSTANTIATE_TEST_SUITE_P(Table, Unary, ::testing::ValuesIn(unary_cases()),
                         [](const auto& info) { return info.param.name; });

struct BinaryCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> tensor;
  std::function<std::pair<double, double>(double, double)> real_partials, dual_partials;
};
#define FX_BINARY_CASE(op)                                                       \
  BinaryCase{#op, [](const Tensor& a, const Tensor& b) { return fx::op(a, b); }, \
             [](double a, double b) {                                            \
               fx::ad::ScalarRecording rec;                                      \
               fx::Real ra = rec.variable(a), rb = rec.variable(b);              \
               fx::Real y = fx::op(ra, rb);                                      \
               auto adj = rec.adjoints(y);                                       \
               return std::pair{adj[ra.index()], adj[rb.index()]};               \
             },                                                                  \
             [](double a, double b) {                                            \
               fx::Dual<double, 2> da(a, {1.0, 0.0}), db(b, {0.0, 1.0});         \
               auto y = fx::op(da, db);                                          \
               return std::pair{y.partial(0), y.partial(1)};                     \
             }},
std::vector<BinaryCase> binary_cases() { return {FX_ELEMENTWISE_BINARY(FX_BINARY_CASE)}; }
#undef FX_BINARY_CASE

class Binary : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(Binary, OneDefinitionAgreesEverywhere) {
  const BinaryCase& c = GetParam();
  const std::vector<double> pa = {-1.7, -0.6, 0.4, 1.3, 0.9, -1.1},
                            pb = {0.8, -1.4, 1.9, -0.3, 0.5, -0.7};
  const Tensor a = fx::from_vector(pa), b = fx::from_vector(pb);
  auto [ga, gb] =
      fx::gradient([&](const Tensor& u, const Tensor& w) { return fx::sum(c.tensor(u, w)); }, a, b);
  const auto va = fx::to_vector<double>(ga), vb = fx::to_vector<double>(gb);
  const auto [y, t] = fx::jvp([&](const Tensor& u, const Tensor& w) { return c.tensor(u, w); },
                              std::tuple(a, b), std::tuple(fx::ones_like(a), fx::zeros_like(b)));
  const auto ja = fx::to_vector<double>(t);
  const double eps = 1e-6;
  auto f = [&](double u, double w) {
    return c.tensor(fx::scalar(u, fx::f64), fx::scalar(w, fx::f64)).item<double>();
  };
  for (size_t i = 0; i < pa.size(); ++i) {
    SCOPED_TRACE(c.name + " at " + std::to_string(pa[i]) + ", " + std::to_string(pb[i]));
    const double fa = (f(pa[i] + eps, pb[i]) - f(pa[i] - eps, pb[i])) / (2 * eps);
    const double fb = (f(pa[i], pb[i] + eps) - f(pa[i], pb[i] - eps)) / (2 * eps);
    EXPECT_TRUE(close(va[i], fa, 1e-6, 1e-8)) << va[i] << " vs " << fa;
    EXPECT_TRUE(close(vb[i], fb, 1e-6, 1e-8)) << vb[i] << " vs " << fb;
    EXPECT_TRUE(close(ja[i], fa, 1e-6, 1e-8)) << "jvp " << ja[i] << " vs " << fa;
    const auto [ra, rb] = c.real_partials(pa[i], pb[i]);
    const auto [da, db] = c.dual_partials(pa[i], pb[i]);
    EXPECT_TRUE(close(ra, va[i], 1e-13) && close(rb, vb[i], 1e-13)) << "Real " << ra << " " << rb;
    EXPECT_TRUE(close(da, va[i], 1e-13) && close(db, vb[i], 1e-13)) << "Dual " << da << " " << db;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, Binary, ::testing::ValuesIn(binary_cases()),
                         [](const auto& info) { return info.param.name; });

// ---- the special functions fluxion implements itself

TEST(SpecialFunctions, ErfinvKnownValuesAndInverse) {
  // erfinv(0.5), erfinv(0.9), erfinv(0.999) to 16 digits (e.g. Wolfram, InverseErf).
  EXPECT_NEAR(fx::elem::erfinv(0.5), 0.4769362762044699, 1e-15);
  EXPECT_NEAR(fx::elem::erfinv(0.9), 1.1630871536766743, 2e-15);
  EXPECT_NEAR(fx::elem::erfinv(0.999), 2.3267537655135246, 4e-15);
  EXPECT_NEAR(fx::elem::erfinv(-0.5), -0.4769362762044699, 1e-15);
  EXPECT_EQ(fx::elem::erfinv(1.0), INFINITY);
  EXPECT_EQ(fx::elem::erfinv(-1.0), -INFINITY);
  EXPECT_TRUE(std::isnan(fx::elem::erfinv(1.5)));
  // erf(erfinv(x)) = x across the range, the tails included (through erfc there).
  for (double x = -0.999; x < 1; x += 0.00731)
    EXPECT_NEAR(std::erf(fx::elem::erfinv(x)), x, 2e-16 + 1e-15 * std::abs(x)) << x;
  for (double q0 : {1e-3, 1e-6, 1e-10, 1e-14}) {
    const double x = 1 - q0, q = 1 - x;  // q exactly 1 - x
    const double y = fx::elem::erfinv(x);
    EXPECT_NEAR(std::erfc(y) / q, 1, 1e-12) << q;
  }
  // erfinv(erf(y)) = y where erf is well conditioned.
  for (double y = -2.5; y <= 2.5; y += 0.0913)
    EXPECT_NEAR(fx::elem::erfinv(std::erf(y)), y, 1e-13 * (1 + std::exp(y * y))) << y;
}

TEST(SpecialFunctions, DigammaKnownValuesAndIdentities) {
  constexpr double euler = 0.57721566490153286, pi = 3.14159265358979324;
  EXPECT_NEAR(fx::elem::digamma(1.0), -euler, 1e-15);
  EXPECT_NEAR(fx::elem::digamma(0.5), -euler - 2 * std::log(2.0), 1e-14);
  double harmonic = 0;  // psi(n + 1) = H_n - euler
  for (int n = 1; n < 30; ++n) {
    harmonic += 1.0 / n;
    EXPECT_NEAR(fx::elem::digamma(n + 1.0), harmonic - euler, 1e-14 * (1 + harmonic)) << n;
  }
  for (double x = -4.7; x < 25; x += 0.613) {
    if (std::abs(x - std::round(x)) < 1e-3) continue;
    // Recurrence psi(x + 1) = psi(x) + 1/x and reflection psi(1 - x) - psi(x) = pi cot(pi x).
    EXPECT_NEAR(fx::elem::digamma(x + 1), fx::elem::digamma(x) + 1 / x,
                1e-12 * (1 + std::abs(1 / x)))
        << x;
    EXPECT_NEAR(fx::elem::digamma(1 - x) - fx::elem::digamma(x), pi / std::tan(pi * x),
                1e-12 * (1 + std::abs(1 / std::tan(pi * x))))
        << x;
    // lgamma' = digamma, by differences of std::lgamma.
    if (x > 0) {
      const double h = 1e-5;
      EXPECT_NEAR((std::lgamma(x + h) - std::lgamma(x - h)) / (2 * h), fx::elem::digamma(x), 1e-8)
          << x;
    }
  }
  EXPECT_TRUE(std::isnan(fx::elem::digamma(0.0)));
  EXPECT_TRUE(std::isnan(fx::elem::digamma(-3.0)));
}

TEST(SpecialFunctions, TrigammaKnownValuesAndIdentities) {
  constexpr double pi = 3.14159265358979324;
  EXPECT_NEAR(fx::elem::trigamma(1.0), pi * pi / 6, 1e-15);
  EXPECT_NEAR(fx::elem::trigamma(0.5), pi * pi / 2, 1e-14);
  EXPECT_NEAR(fx::elem::tetragamma(1.0), -2.4041138063191886, 1e-14);     // -2 zeta(3)
  EXPECT_NEAR(fx::elem::pentagamma(1.0), pi * pi * pi * pi / 15, 1e-13);  // 6 zeta(4)
  for (double x = -3.3; x < 25; x += 0.571) {
    if (std::abs(x - std::round(x)) < 0.05) continue;  // differences need room from the poles
    const double t = fx::elem::trigamma(x);
    EXPECT_NEAR(fx::elem::trigamma(x + 1), t - 1 / (x * x), 1e-12 * std::abs(t)) << x;
    const double s = std::sin(pi * x);
    EXPECT_NEAR(fx::elem::trigamma(1 - x) + t, pi * pi / (s * s), 1e-12 * pi * pi / (s * s)) << x;
    // trigamma = digamma' and tetragamma = trigamma', by differences.
    const double h = 1e-5;
    EXPECT_NEAR((fx::elem::digamma(x + h) - fx::elem::digamma(x - h)) / (2 * h), t,
                1e-7 * (1 + std::abs(t)))
        << x;
    const double p2 = fx::elem::tetragamma(x), p3 = fx::elem::pentagamma(x);
    EXPECT_NEAR((fx::elem::trigamma(x + h) - fx::elem::trigamma(x - h)) / (2 * h), p2,
                1e-6 * (1 + std::abs(p2)))
        << x;
    EXPECT_NEAR((fx::elem::tetragamma(x + h) - fx::elem::tetragamma(x - h)) / (2 * h), p3,
                1e-6 * (1 + std::abs(p3)))
        << x;
  }
}

TEST(SpecialFunctions, TetragammaDerivativeOfTensorsIsAnError) {
  const Tensor x = fx::tensor({1.5, 2.5}, fx::f64);
  try {
    (void)fx::gradient([](const Tensor& w) { return fx::sum(fx::tetragamma(w)); }, x);
    ADD_FAILURE() << "no error";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("fx::tetragamma"), std::string::npos) << e.what();
  }
}

TEST(SpecialFunctions, NewFunctionsNeedFloatingTensors) {
  try {
    (void)fx::erfinv(fx::zeros({3}, fx::i64));
    ADD_FAILURE() << "no error";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("fx::erfinv"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("i64"), std::string::npos) << e.what();
  }
}

}  // namespace
