// std::complex<fx::Real> in generic code, fx::gradient at complex arguments (Zygote's convention)
// and the holomorphic / Wirtinger derivative helpers, against closed forms and finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <fluxion/ad/complex_scalar.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/testing/helpers.hpp>
#include <vector>

namespace {

using C = std::complex<double>;

void expect_near(C got, C want, double tol, const char* what) {
  EXPECT_NEAR(got.real(), want.real(), tol * std::max(1.0, std::abs(want))) << what;
  EXPECT_NEAR(got.imag(), want.imag(), tol * std::max(1.0, std::abs(want))) << what;
}

// ∂f/∂x + i ∂f/∂y of a real-valued f by central differences.
template <class F>
C fd_gradient(F f, C z, double h = 1e-6) {
  double gx = (f(z + C(h, 0)) - f(z - C(h, 0))) / (2 * h);
  double gy = (f(z + C(0, h)) - f(z - C(0, h))) / (2 * h);
  return {gx, gy};
}

}  // namespace

TEST(ComplexScalar, GradientOfAbs2IsZygotesExample) {
  // Zygote: gradient(abs2, 1 + 2im) == (2 + 4im,)
  EXPECT_EQ(fx::gradient([](auto z) { return std::norm(z); }, C(1, 2)), C(2, 4));
  EXPECT_EQ(fx::gradient([](auto z) { return norm(z); }, C(1, 2)), C(2, 4));
  // |z|: z / |z|
  expect_near(fx::gradient([](auto z) { return std::abs(z); }, C(3, -4)), C(0.6, -0.8), 1e-15,
              "abs");
  expect_near(fx::gradient([](auto z) { return abs(z); }, C(3, -4)), C(0.6, -0.8), 1e-15, "abs");
}

TEST(ComplexScalar, GenericCodeMatchesFiniteDifferences) {
  // Everything libstdc++'s generic std::complex<T> offers, mixed with doubles and complex<double>.
  auto f = [](auto z) {
    using std::exp, std::log, std::sqrt, std::sin, std::cos, std::conj, std::arg, std::pow;
    auto w = z * z + 2.0 * z - C(0.5, 1) / (z + 3.0);
    w = w * exp(z / 4.0) + log(z) - sqrt(z) * conj(z) + sin(z) * cos(z);
    w += std::pow(z, 3) - pow(z, 2.5) + std::tanh(z / 5.0) + std::cosh(z / 7.0);
    return std::real(w) * std::imag(w) + std::abs(w) + std::arg(w) + std::norm(std::conj(w)) / 10.0;
  };
  for (C z : {C(0.7, 0.3), C(1.5, -0.8), C(-0.4, 1.1)}) {
    C g = fx::gradient(f, z);
    C fd = fd_gradient([&](C u) { return f(u); }, z);
    expect_near(g, fd, 1e-6, "generic");
  }
}

TEST(ComplexScalar, VectorOfComplexArguments) {
  // f(v) = Σ |v_k|² + Re(v_0 v_1): ∂/∂x + i∂/∂y of |v|² is 2 v; of Re(v0 v1) w.r.t. v0 is conj(v1).
  auto f = [](const auto& v) {
    using std::norm, std::real;
    decltype(norm(v[0])) s = 0;
    for (const auto& z : v) s += norm(z);
    return s + real(v[0] * v[1]);
  };
  std::vector<C> v = {C(1, 2), C(-0.5, 3), C(2, -1)};
  std::vector<C> g = fx::gradient(f, v);
  ASSERT_EQ(g.size(), 3u);
  expect_near(g[0], 2.0 * v[0] + std::conj(v[1]), 1e-14, "v0");
  expect_near(g[1], 2.0 * v[1] + std::conj(v[0]), 1e-14, "v1");
  expect_near(g[2], 2.0 * v[2], 1e-14, "v2");
  // A complex argument beside a real one.
  auto [gz, gt] = fx::gradient([](auto z, auto t) { return std::norm(z * t); }, C(1, 1), 3.0);
  expect_near(gz, C(18, 18), 1e-14, "z");
  EXPECT_NEAR(gt, 2 * 3.0 * 2, 1e-14);
}

TEST(ComplexScalar, HolomorphicDerivativesMatchClosedForms) {
  C z(0.8, -0.6);
  expect_near(fx::derivative_holomorphic([](auto u) { return u * u; }, z), 2.0 * z, 1e-15, "z^2");
  expect_near(fx::derivative_holomorphic([](auto u) { return std::exp(u); }, z), std::exp(z), 1e-14,
              "exp");
  expect_near(fx::derivative_holomorphic([](auto u) { return std::log(u); }, z), 1.0 / z, 1e-14,
              "log");
  expect_near(fx::derivative_holomorphic([](auto u) { return std::sin(u) / u; }, z),
              (std::cos(z) * z - std::sin(z)) / (z * z), 1e-13, "sinc");
  expect_near(fx::derivative_holomorphic([](auto u) { return 1.0 / (u - 2.0); }, z),
              -1.0 / ((z - 2.0) * (z - 2.0)), 1e-13, "pole");
  // Against a complex finite difference along the real axis.
  auto f = [](auto u) { return std::sqrt(u) * std::cosh(u) + std::pow(u, 3); };
  double h = 1e-6;
  C fd = (f(z + h) - f(z - h)) / (2 * h);
  expect_near(fx::derivative_holomorphic(f, z), fd, 1e-7, "fd");
}

TEST(ComplexScalar, NonHolomorphicFunctionIsAnError) {
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] { (void)fx::derivative_holomorphic([](auto u) { return std::conj(u); }, C(1, 2)); },
      {"fx::derivative_holomorphic", "holomorphic", "wirtinger"}));
}

TEST(ComplexScalar, WirtingerDerivatives) {
  C z(1.5, -0.5);
  auto [a, b] = fx::wirtinger([](auto u) { return std::conj(u); }, z);
  expect_near(a, 0, 1e-15, "conj dz");
  expect_near(b, 1, 1e-15, "conj dzbar");
  auto [c, d] = fx::wirtinger([](auto u) { return std::norm(u); }, z);  // real-valued |z|²
  expect_near(c, std::conj(z), 1e-15, "abs2 dz");
  expect_near(d, z, 1e-15, "abs2 dzbar");
  auto [e, g] = fx::wirtinger([](auto u) { return u * u * u; }, z);  // holomorphic: (3z², 0)
  expect_near(e, 3.0 * z * z, 1e-14, "z^3 dz");
  expect_near(g, 0, 1e-14, "z^3 dzbar");
  // z z̄² : ∂/∂z = z̄², ∂/∂z̄ = 2 z z̄
  auto [p, q] = fx::wirtinger([](auto u) { return u * std::conj(u) * std::conj(u); }, z);
  expect_near(p, std::conj(z) * std::conj(z), 1e-14, "z zbar^2 dz");
  expect_near(q, 2.0 * z * std::conj(z), 1e-14, "z zbar^2 dzbar");
  // For real f, 2 ∂f/∂z̄ is fx::gradient's ∂f/∂x + i ∂f/∂y.
  auto h = [](auto u) { return std::abs(u * u - 1.0); };
  expect_near(2.0 * fx::wirtinger(h, z).second, fx::gradient(h, z), 1e-14, "real f");
}

TEST(ComplexScalar, ValuesAndPartsAreThoseOfComplexDouble) {
  fx::ad::ScalarRecording rec;
  std::complex<fx::Real> z(rec.variable(0.3), rec.variable(-1.2));
  C z0(0.3, -1.2);
  auto same = [](const std::complex<fx::Real>& a, C b) {
    EXPECT_NEAR(a.real().value(), b.real(), 1e-14 * std::max(1.0, std::abs(b)));
    EXPECT_NEAR(a.imag().value(), b.imag(), 1e-14 * std::max(1.0, std::abs(b)));
  };
  same(z * z, z0 * z0);
  same(z / (z + 1.0), z0 / (z0 + 1.0));
  same(std::exp(z), std::exp(z0));
  same(exp(z), std::exp(z0));
  same(std::log(z), std::log(z0));
  same(log(z), std::log(z0));
  same(std::sqrt(z), std::sqrt(z0));
  same(pow(z, 2.5), std::pow(z0, 2.5));
  same(std::pow(z, 3), std::pow(z0, 3));
  EXPECT_NEAR(std::abs(z).value(), std::abs(z0), 1e-15);
  EXPECT_NEAR(std::arg(z).value(), std::arg(z0), 1e-15);
  EXPECT_NEAR(std::norm(z).value(), std::norm(z0), 1e-15);
  EXPECT_EQ(fx::value(z), z0);
}
