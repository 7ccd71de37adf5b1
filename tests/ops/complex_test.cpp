// Complex tensors: rows for the complex primitives and for the real primitives that also take
// complex inputs (run by primitives_test.cpp: tuned vs reference kernels in c64 and c128, and
// gradcheck in c128 with Re <a, b> as the inner product), plus checks of the gradient
// convention, FFT values and error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include <fluxion/ad/forward.hpp>
#include <fluxion/ad/reverse.hpp>

#include "op_rows.hpp"

namespace fx::rows {

std::vector<Row> complex_rows() {
  auto us = unary_shapes();
  auto bs = binary_shapes();
  const std::vector<DType> cd = {c64, c128};
  const Opts cu = {.cases = us, .range = {-2, 2}, .dtypes = cd, .complex = true};
  const Opts cb = {.cases = bs, .range = {-2, 2}, .dtypes = cd, .complex = true};
  // Away from 0, where |z| and arg z are not differentiable.
  Opts away = cu;
  away.range = {0.3, 2};
  auto with_cases = [](Opts o, std::vector<Case> cs) {
    o.cases = std::move(cs);
    return o;
  };
  auto fft_shapes = shapes({{16}, {5, 12}, {3, 7, 9}, {1}, {0, 4}});
  return {
      // ---- the complex primitives
      {"complex", bin(fx::complex), {.cases = bs}},
      {"real", un(fx::real), cu},
      {"imag", un(fx::imag), cu},
      {"conj", un(fx::conj), cu},
      {"angle", un(fx::angle), away},
      {"complex_abs", un(fx::abs), away},
      {"fft", un([](const Tensor& x) { return fx::fft(x); }), with_cases(cu, fft_shapes)},
      {"fft_axis0", un([](const Tensor& x) { return fx::fft(x, 0); }), with_cases(cu, fft_shapes)},
      {"ifft", un([](const Tensor& x) { return fx::ifft(x); }), with_cases(cu, fft_shapes)},
      {"fft2", un(fx::fft2), with_cases(cu, shapes({{6, 10}, {2, 5, 4}}))},
      {"fft_of_real",
       un([](const Tensor& x) { return fx::fft(x); }),
       {.cases = shapes({{16}, {3, 10}})}},
      {"abs2_complex", un(fx::abs2), cu},
      {"polar", bin(fx::polar), {.cases = pairs({{{4, 5}, {4, 5}}, {{3}, {2, 3}}})}},
      // ---- real primitives on complex inputs (holomorphic: pullbacks through conj(f'(z)))
      {"neg_complex", un(fx::neg), cu},
      {"exp_complex", un(fx::exp), cu},
      {"log_complex", un(fx::log), away},
      {"sin_complex", un(fx::sin), cu},
      {"cos_complex", un(fx::cos), cu},
      {"tanh_complex", un(fx::tanh), with_cases(cu, shapes({{5, 7}, {}}))},
      {"sigmoid_complex", un(fx::sigmoid), with_cases(cu, shapes({{5, 7}, {}}))},
      {"sqrt_complex", un(fx::sqrt), away},
      {"square_complex", un(fx::square), cu},
      {"pow_scalar_complex", un([](const Tensor& x) { return fx::pow(x, 2.5); }), away},
      {"add_complex", bin(fx::add), cb},
      {"sub_complex", bin(fx::sub), cb},
      {"mul_complex", bin(fx::mul), cb},
      {"div_complex", bin(fx::div), with_cases(away, bs)},
      {"mul_scalar_complex", un([](const Tensor& x) { return x * 1.5 + 2.0; }), cu},
      {"mixed_real_complex",
       [](const Args& a) { return fx::mul(a[0], fx::astype(a[1], c128)) + a[1]; },
       {.cases = pairs({{{4, 5}, {4, 5}}, {{3}, {2, 3}}})}},
      {"sum_complex", un([](const Tensor& x) { return fx::sum(x, {0}); }),
       with_cases(cu, shapes({{45, 65}, {5, 7, 11}, {1, 3, 1}}))},
      {"sum_all_complex", un([](const Tensor& x) { return fx::sum(x); }), cu},
      {"mean_complex", un([](const Tensor& x) { return fx::mean(x, {1}); }),
       with_cases(cu, shapes({{4, 6}, {2, 3, 5}}))},
      {"matmul_complex", bin(fx::matmul),
       with_cases(cb, pairs({{{45, 65}, {65, 33}},
                             {{3, 4}, {4, 2}},
                             {{65}, {65, 33}},
                             {{2, 3, 4, 5}, {5, 6}},
                             {{5, 0}, {0, 3}}}))},
      {"finiteness_complex",
       un([](const Tensor& x) {
         Tensor y = with_nonfinite(x);
         return fx::stack({fx::isnan(y), fx::isinf(y), fx::isfinite(y)});
       }),
       {.cases = us, .order = 0, .why = "bool output", .dtypes = cd, .complex = true}},
      {"any_all_complex",
       un([](const Tensor& x) {
         Tensor y = fx::where(fx::real(x) > 0.0, x, fx::astype(fx::zeros({}), x.dtype()));
         return fx::stack({fx::any(y, -1), fx::all(y, -1)});
       }),
       {.cases = shapes({{45, 2}, {3, 1}}),
        .order = 0,
        .why = "bool output",
        .dtypes = cd,
        .complex = true}},
      {"where_complex", [](const Args& a) { return fx::where(fx::real(a[0]) > 0.0, a[0], a[1]); },
       cb},
      {"views_complex", un([](const Tensor& x) {
         return fx::concat({fx::transpose(x), fx::transpose(x) * 2.0}, 0);
       }),
       with_cases(cu, shapes({{4, 6}, {3, 1}}))},
  };
}

}  // namespace fx::rows

namespace {

using C = std::complex<double>;

fx::Tensor ctensor(std::vector<C> v) { return fx::from_vector(v); }

TEST(Complex, ZygoteConventionForAbs2) {
  // Zygote: gradient(abs2, 1 + 2im) == (2 + 4im,): dL/dx + i dL/dy.
  auto g =
      fx::gradient([](const fx::Tensor& z) { return fx::sum(fx::abs2(z)); }, ctensor({{1, 2}}));
  EXPECT_EQ(g.dtype(), fx::c128);
  EXPECT_EQ(fx::to_vector<C>(g)[0], C(2, 4));
}

TEST(Complex, GradientOfRealLossMatchesPartialDerivatives) {
  // L(z) = sum |exp(z) * w|: the gradient's parts are the partials in x and y.
  fx::Tensor w = ctensor({{0.5, -1}, {2, 0.25}, {-1, 1}});
  auto loss = [&](const fx::Tensor& z) { return fx::sum(fx::abs(fx::exp(z) * w)); };
  fx::Tensor z = ctensor({{0.1, 0.2}, {-0.3, 1.0}, {0.7, -0.4}});
  auto g = fx::to_vector<C>(fx::gradient(loss, z));
  auto zv = fx::to_vector<C>(z);
  const double h = 1e-6;
  for (size_t k = 0; k < zv.size(); ++k) {
    auto at = [&](C dz) {
      auto v = zv;
      v[k] += dz;
      return loss(ctensor(v)).item();
    };
    double dx = (at({h, 0}) - at({-h, 0})) / (2 * h);
    double dy = (at({0, h}) - at({0, -h})) / (2 * h);
    EXPECT_NEAR(g[k].real(), dx, 1e-7);
    EXPECT_NEAR(g[k].imag(), dy, 1e-7);
  }
}

TEST(Complex, HolomorphicPullbackIsConjugateDerivative) {
  // For holomorphic f and L = Re(u * f(z)): dL/dz-cotangent = conj(u f'(z)).
  C z0(0.3, -0.7), u(1.5, 0.5);
  auto g = fx::gradient(
      [&](const fx::Tensor& z) { return fx::real(fx::sum(fx::sin(z) * ctensor({u}))); },
      ctensor({z0}));
  EXPECT_LT(std::abs(fx::to_vector<C>(g)[0] - std::conj(u * std::cos(z0))), 1e-14);
}

TEST(Complex, ForwardModeIsTheComplexDerivative) {
  C z0(0.3, -0.7), v(0.2, 1.1);
  auto [y, dy] =
      fx::jvp([](const fx::Tensor& z) { return fx::exp(z) * z; }, ctensor({z0}), ctensor({v}));
  (void)y;
  C want = (std::exp(z0) * z0 + std::exp(z0)) * v;
  EXPECT_LT(std::abs(fx::to_vector<C>(dy)[0] - want), 1e-14);
}

TEST(Complex, FftMatchesTheDefinitionAndInverts) {
  const int n = 12;
  std::vector<C> x(n);
  for (int k = 0; k < n; ++k) x[k] = C(std::cos(0.3 * k), std::sin(1.7 * k) - 0.2);
  auto X = fx::to_vector<C>(fx::fft(ctensor(x)));
  for (int k = 0; k < n; ++k) {
    C want = 0;
    for (int t = 0; t < n; ++t) want += x[t] * std::polar(1.0, -2 * std::numbers::pi * k * t / n);
    EXPECT_LT(std::abs(X[k] - want), 1e-12) << k;
  }
  auto back = fx::to_vector<C>(fx::ifft(fx::fft(ctensor(x))));
  for (int k = 0; k < n; ++k) EXPECT_LT(std::abs(back[k] - x[k]), 1e-14);
  // Real input: X[n - k] = conj(X[k]).
  auto R = fx::to_vector<C>(fx::fft(fx::tensor({1, 2, 3, 4, 5}, fx::f64)));
  EXPECT_LT(std::abs(R[0] - C(15, 0)), 1e-13);
  EXPECT_LT(std::abs(R[1] - std::conj(R[4])), 1e-13);
}

TEST(Complex, FftGradientOfPowerSpectrum) {
  // L = sum |fft(x)|^2 = n sum x^2 (Parseval), so dL/dx = 2 n x for real x.
  auto x = fx::tensor({0.5, -1, 2, 0.25, 3, -0.5, 1, 1}, fx::f64);
  auto g = fx::gradient([](const fx::Tensor& x) { return fx::sum(fx::abs2(fx::fft(x))); }, x);
  EXPECT_EQ(g.dtype(), fx::f64);
  EXPECT_TRUE(fx::allclose(g, x * 16.0, 1e-12, 1e-12)) << g;
}

TEST(Complex, PartsAndPrinting) {
  auto z = fx::complex(fx::tensor({1, -3}), fx::tensor({2, 0.5}));
  EXPECT_EQ(z.dtype(), fx::c64);
  EXPECT_EQ(fx::to_vector<float>(fx::real(z)), (std::vector<float>{1, -3}));
  EXPECT_EQ(fx::to_vector<float>(fx::imag(z)), (std::vector<float>{2, 0.5}));
  EXPECT_NEAR(fx::to_vector<float>(fx::abs(z))[0], std::sqrt(5.0f), 1e-6);
  EXPECT_EQ(fx::to_vector<std::complex<float>>(fx::conj(z))[1], std::complex<float>(-3, -0.5));
  EXPECT_NEAR(fx::to_vector<float>(fx::angle(z))[1], std::atan2(0.5f, -3.0f), 1e-6);
  EXPECT_EQ(z.to_string(), "Tensor(c64, (2,)) [1+2i, -3+0.5i]");
  EXPECT_EQ(fx::promote(fx::c64, fx::f64), fx::c128);
  EXPECT_EQ((fx::tensor({1, 2}, fx::f64) + z).dtype(), fx::c128);
  EXPECT_EQ(fx::sum(z).item_complex(), C(-2, 2.5));
}

TEST(Complex, OrderBasedOpsAndLossyConversionsThrowNamedErrors) {
  auto z = fx::complex(fx::ones({3}), fx::ones({3}));
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const fx::Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message([&] { (void)fx::relu(z); }).find("fx::relu: not defined for complex"),
            std::string::npos);
  EXPECT_NE(message([&] { (void)fx::max(z); }).find("fx::max"), std::string::npos);
  EXPECT_NE(message([&] { (void)(z > 0.0); }).find("fx::gt"), std::string::npos);
  EXPECT_NE(message([&] { (void)fx::maximum(z, z); }).find("fx::maximum"), std::string::npos);
  EXPECT_NE(message([&] { (void)fx::astype(z, fx::f32); }).find("fx::astype: c64 (3,) to f32"),
            std::string::npos);
  EXPECT_NE(message([&] { (void)fx::to_vector<double>(z); }).find("fx::to_vector"),
            std::string::npos);
  EXPECT_NE(message([&] { (void)fx::sum(z).item(); }).find("item_complex"), std::string::npos);
  EXPECT_NE(message([&] { (void)fx::log1p(z); }).find("fx::log1p"), std::string::npos);
  EXPECT_NE(message([&] { (void)fx::fft(fx::scalar(1)); }).find("fx::fft"), std::string::npos);
  EXPECT_NE(message([&] { (void)fx::fft(z, 3); }).find("axis 3 out of range"), std::string::npos);
  EXPECT_NE(message([&] { (void)fx::complex(z, z); }).find("fx::complex: needs real parts"),
            std::string::npos);
  // A complex loss has no gradient: the error says so instead of picking a part.
  EXPECT_NE(message([&] {
              (void)fx::gradient([](const fx::Tensor& x) { return fx::sum(x); }, z);
            }).find("floating"),
            std::string::npos);
}

}  // namespace

namespace {

TEST(Complex, HolomorphicDerivativeIsAJvpWithUnitTangent) {
  // d/dz (z^2 exp(z)) = (2z + z^2) exp(z), read off forward mode with tangent 1.
  std::vector<std::complex<double>> zs = {{0.3, -0.7}, {-1.2, 0.4}};
  auto f = [](const fx::Tensor& z) { return z * z * fx::exp(z); };
  fx::Tensor z = fx::from_vector(zs);
  auto [w, df] = fx::jvp(f, z, fx::ones_like(z));
  (void)w;
  auto got = fx::to_vector<std::complex<double>>(df);
  for (size_t k = 0; k < zs.size(); ++k) {
    std::complex<double> want = (2.0 * zs[k] + zs[k] * zs[k]) * std::exp(zs[k]);
    EXPECT_LT(std::abs(got[k] - want), 1e-13);
  }
}

}  // namespace
