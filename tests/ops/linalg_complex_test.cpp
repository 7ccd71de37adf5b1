// fx::linalg on complex matrices (c128, and c64 values): each function's defining identities with
// conjugate transposes, and its derivatives against finite differences in two ways: gradcheck
// (random complex directions, both modes, second order where cheap) and, entry by entry, the
// gradient of a real loss against central differences that perturb the real and the imaginary
// part of each input element separately (fluxion's cotangent is dL/dx + i dL/dy). Eigen- and
// singular vectors enter losses only through a phase-invariant function of them. libtorch
// compares values and gradients in tests/oracle/linalg_oracle_test.
#include <gtest/gtest.h>

#include <complex>
#include <functional>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/linalg.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing/gradcheck.hpp>

namespace {

using fx::Tensor;
using cd = std::complex<double>;
namespace la = fx::linalg;

// Complex normal noise (both parts drawn) plus shift times the identity.
Tensor random_complex(const fx::Shape& s, uint64_t seed, double shift = 0) {
  fx::Generator gen(seed);
  Tensor a = fx::randn(s, gen, fx::c128);
  return shift == 0 ? a : a + shift * la::eye(s[s.size() - 1], fx::c128);
}

Tensor mH(const Tensor& x) { return fx::conj(fx::transpose(x, -2, -1)); }
Tensor eye(int64_t n) { return la::eye(n, fx::c128); }
Tensor flat(const Tensor& x) { return fx::reshape(x, {-1}); }

double max_abs_diff(const Tensor& a, const Tensor& b) { return fx::max(fx::abs(a - b)).item(); }

// Columns multiplied by the phase that makes the first entry of the matching column of `by`
// real and positive: a function of eigenvectors (singular vector pairs, with by = u for both)
// that does not depend on LAPACK's choice of phases but still on every entry.
Tensor fix_phases(const Tensor& v, const Tensor& by) {
  Tensor first = fx::slice(by, -2, 0, 1);
  return v * fx::conj(first) / fx::astype(fx::abs(first), fx::c128);
}

#define EXPECT_GRADCHECK(...)                     \
  do {                                            \
    auto r = fx::testing::gradcheck(__VA_ARGS__); \
    EXPECT_TRUE(r) << r;                          \
  } while (0)

// The gradient of L(z) = Re sum(conj(u) f(z)), u a fixed random cotangent (real for real f),
// against central differences of L in the real and the imaginary part of each element of z.
void expect_entrywise_gradient(const std::function<Tensor(const Tensor&)>& f, const Tensor& z,
                               const std::string& what, double tol = 1e-6) {
  fx::Generator gen(5);
  Tensor y = f(z);
  Tensor u = fx::randn(y.shape(), gen, fx::is_complex(y.dtype()) ? fx::c128 : fx::f64);
  auto loss = [&](const Tensor& x) { return fx::real(fx::sum(fx::conj(u) * f(x))); };
  std::vector<cd> g = fx::to_vector<cd>(fx::gradient(loss, z));
  std::vector<cd> base = fx::to_vector<cd>(z);
  const double eps = 1e-6;
  double scale = 1, worst = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    cd partial[2];
    for (int part = 0; part < 2; ++part) {
      const cd step = part == 0 ? cd(eps, 0) : cd(0, eps);
      std::vector<cd> plus = base, minus = base;
      plus[i] += step;
      minus[i] -= step;
      const double d = (loss(fx::from_vector(plus, z.shape())).item() -
                        loss(fx::from_vector(minus, z.shape())).item()) /
                       (2 * eps);
      partial[part] = d;
    }
    const cd numeric(partial[0].real(), partial[1].real());  // dL/dx + i dL/dy
    worst = std::max(worst, std::abs(numeric - g[i]));
    scale = std::max(scale, std::abs(numeric));
  }
  EXPECT_LT(worst / scale, tol) << what;
}

TEST(LinalgComplex, SolvesAndDeterminantsSatisfyTheirEquations) {
  Tensor a = random_complex({2, 4, 4}, 1, 3), b = random_complex({2, 4, 3}, 2);
  Tensor x = la::solve(a, b);
  EXPECT_EQ(x.dtype(), fx::c128);
  EXPECT_LT(max_abs_diff(fx::matmul(a, x), b), 1e-12);
  EXPECT_LT(max_abs_diff(fx::matmul(la::inv(a), a), fx::expand(eye(4), {2, 4, 4})), 1e-12);
  Tensor l = la::triangular_solve(a, b);
  Tensor lower =
      a * fx::astype(
              fx::tensor({1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1}, fx::f64).reshape({4, 4}),
              fx::c128);
  EXPECT_LT(max_abs_diff(fx::matmul(lower, l), b), 1e-12);
  // det of a diagonal matrix is the product of its entries; of a triangular one too.
  Tensor d = fx::from_vector(std::vector<cd>{{1, 2}, 0, 0, {0, -3}}, {2, 2});
  const cd want = cd(1, 2) * cd(0, -3);
  const cd got = fx::to_vector<cd>(la::det(d))[0];
  EXPECT_NEAR(std::abs(got - want), 0, 1e-12);
  auto [sign, logabs] = la::slogdet(d);
  EXPECT_EQ(logabs.dtype(), fx::f64);
  EXPECT_NEAR(std::abs(fx::to_vector<cd>(sign)[0] - want / std::abs(want)), 0, 1e-12);
  EXPECT_NEAR(logabs.item(), std::log(std::abs(want)), 1e-12);
  EXPECT_NEAR(std::abs(fx::to_vector<cd>(la::logdet(d))[0] - std::log(want)), 0, 1e-12);
  // A row swap: det [[0, z], [w, 0]] = -z w. And det(a) det(b) = det(a b) on random ones.
  Tensor swap = fx::from_vector(std::vector<cd>{0, {2, 1}, {-1, 1}, 0}, {2, 2});
  EXPECT_NEAR(std::abs(fx::to_vector<cd>(la::det(swap))[0] + cd(2, 1) * cd(-1, 1)), 0, 1e-12);
  Tensor b4 = random_complex({2, 4, 4}, 3);
  EXPECT_LT(max_abs_diff(la::det(a) * la::det(b4), la::det(fx::matmul(a, b4))),
            1e-10 * fx::max(fx::abs(la::det(fx::matmul(a, b4)))).item());
  auto [s0, l0] = la::slogdet(fx::zeros({3, 3}, fx::c128));
  EXPECT_EQ(fx::to_vector<cd>(s0)[0], cd(0));
  EXPECT_EQ(l0.item(), -INFINITY);
  EXPECT_NEAR(std::abs(fx::to_vector<cd>(la::trace(d))[0] - cd(1, -1)), 0, 0);
  // c64 runs cgesv & co.: close to the c128 result.
  Tensor xf = la::solve(fx::astype(a, fx::c64), fx::astype(b, fx::c64));
  EXPECT_EQ(xf.dtype(), fx::c64);
  EXPECT_LT(max_abs_diff(fx::astype(xf, fx::c128), x), 1e-4);
}

TEST(LinalgComplex, FactorisationsReconstructTheirInput) {
  Tensor r = random_complex({2, 4, 4}, 4);
  Tensor hpd = fx::matmul(r, mH(r)) + eye(4);
  Tensor l = la::cholesky(hpd);
  EXPECT_LT(max_abs_diff(fx::matmul(l, mH(l)), hpd), 1e-12);
  EXPECT_LT(max_abs_diff(fx::imag(la::diagonal(l)), fx::zeros({2, 4}, fx::f64)), 0 + 1e-300);
  for (fx::Shape s : {fx::Shape{2, 5, 3}, fx::Shape{3, 3}, fx::Shape{3, 5}}) {
    Tensor a = random_complex(s, 5);
    const int64_t k = std::min(s[s.size() - 2], s[s.size() - 1]);
    auto [q, rr] = la::qr(a);
    EXPECT_LT(max_abs_diff(fx::matmul(q, rr), a), 1e-12) << s;
    EXPECT_LT(max_abs_diff(fx::matmul(mH(q), q), eye(k)), 1e-12) << s;
    EXPECT_LT(
        max_abs_diff(fx::imag(la::diagonal(fx::slice(rr, -1, 0, k))), fx::zeros({k}, fx::f64)),
        1e-300)
        << s;  // geqrf: real diagonal
    auto [u, sv, vh] = la::svd(a);
    EXPECT_EQ(sv.dtype(), fx::f64);
    EXPECT_LT(max_abs_diff(fx::matmul(u * fx::unsqueeze(sv, -2), vh), a), 1e-12) << s;
    EXPECT_LT(max_abs_diff(fx::matmul(mH(u), u), eye(k)), 1e-12) << s;
    EXPECT_LT(max_abs_diff(fx::matmul(vh, mH(vh)), eye(k)), 1e-12) << s;
  }
  auto [w, v] = la::eigh(hpd);
  EXPECT_EQ(w.dtype(), fx::f64);
  EXPECT_LT(max_abs_diff(fx::matmul(v * fx::unsqueeze(w, -2), mH(v)), hpd), 1e-11);
  std::vector<double> wv = fx::to_vector<double>(w);
  for (size_t i = 0; i + 1 < 8; ++i)
    if (i != 3) EXPECT_LE(wv[i], wv[i + 1]);
  // eigh reads the Hermitian part: a skew-Hermitian addition changes nothing.
  EXPECT_LT(max_abs_diff(la::eigvalsh(hpd + r - mH(r)), w), 1e-12);
  // The spectrum of a Hermitian matrix is its singular values up to sign: here all positive.
  std::vector<double> sv = fx::to_vector<double>(la::svdvals(hpd));
  for (size_t m = 0; m < 2; ++m)
    for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(sv[m * 4 + i], wv[m * 4 + 3 - i], 1e-11);
}

TEST(LinalgComplex, LeastSquaresPseudoInverseAndExponential) {
  Tensor a = random_complex({2, 6, 3}, 6), b = random_complex({2, 6, 2}, 7);
  Tensor x = la::lstsq(a, b);  // normal equations: a^H (a x - b) = 0
  EXPECT_LT(fx::max(fx::abs(fx::matmul(mH(a), fx::matmul(a, x) - b))).item(), 1e-12);
  Tensor w = random_complex({3, 5}, 8), c = random_complex({3}, 9);
  Tensor xm = la::lstsq(w, c);  // minimum norm: exact, and pinv's
  EXPECT_LT(max_abs_diff(fx::matmul(w, xm), c), 1e-12);
  EXPECT_LT(max_abs_diff(xm, fx::matmul(la::pinv(w), c)), 1e-12);
  Tensor p = la::pinv(a);  // Penrose: a p a = a, p a p = p, a p Hermitian
  EXPECT_LT(max_abs_diff(fx::matmul(fx::matmul(a, p), a), a), 1e-12);
  EXPECT_LT(max_abs_diff(fx::matmul(fx::matmul(p, a), p), p), 1e-12);
  EXPECT_LT(max_abs_diff(fx::matmul(a, p), mH(fx::matmul(a, p))), 1e-12);
  // exp(i t Z) for the Pauli Z is diag(e^{it}, e^{-it}); exp(a) exp(-a) = I.
  const double t = 0.7;
  Tensor z = fx::from_vector(std::vector<cd>{{0, t}, 0, 0, {0, -t}}, {2, 2});
  Tensor want =
      fx::from_vector(std::vector<cd>{std::polar(1.0, t), 0, 0, std::polar(1.0, -t)}, {2, 2});
  EXPECT_LT(max_abs_diff(la::matrix_exp(z), want), 1e-14);
  Tensor m = random_complex({2, 3, 3}, 10);
  EXPECT_LT(max_abs_diff(fx::matmul(la::matrix_exp(m), la::matrix_exp(-m)),
                         fx::expand(eye(3), {2, 3, 3})),
            1e-11);
}

TEST(LinalgComplexGrad, Gradcheck) {
  Tensor a = random_complex({2, 3, 3}, 20, 3), b = random_complex({2, 3, 2}, 21);
  EXPECT_GRADCHECK(la::solve, a, b);
  EXPECT_GRADCHECK([](const Tensor& a, const Tensor& b) { return la::triangular_solve(a, b); }, a,
                   b);
  EXPECT_GRADCHECK(
      [](const Tensor& a, const Tensor& b) { return la::triangular_solve(a, b, true); }, a, b);
  EXPECT_GRADCHECK(la::inv, a);
  EXPECT_GRADCHECK(la::det, a);
  EXPECT_GRADCHECK(la::logdet, a);
  EXPECT_GRADCHECK([](const Tensor& a) { return std::get<0>(la::slogdet(a)); }, a);
  EXPECT_GRADCHECK([](const Tensor& a) { return std::get<1>(la::slogdet(a)); }, a);
  EXPECT_GRADCHECK(la::trace, a);
  EXPECT_GRADCHECK(la::cholesky, random_complex({2, 3, 3}, 22, 5));
  auto qr_flat = [](const Tensor& a) {
    auto [q, r] = la::qr(a);
    return fx::concat({flat(q), flat(r)});
  };
  EXPECT_GRADCHECK(qr_flat, random_complex({2, 4, 3}, 23));
  EXPECT_GRADCHECK(qr_flat, random_complex({3, 3}, 24));
  auto eigh_flat = [](const Tensor& a) {
    auto [w, v] = la::eigh(a);
    return fx::concat({flat(fx::astype(w, fx::c128)), flat(fix_phases(v, v))});
  };
  EXPECT_GRADCHECK(eigh_flat, random_complex({2, 3, 3}, 25));
  auto svd_flat = [](const Tensor& a) {
    auto [u, s, vh] = la::svd(a);
    return fx::concat(
        {flat(fix_phases(u, u)), flat(fx::astype(s, fx::c128)), flat(fix_phases(mH(vh), u))});
  };
  for (fx::Shape s : {fx::Shape{2, 4, 3}, fx::Shape{3, 4}, fx::Shape{3, 3}})
    EXPECT_GRADCHECK(svd_flat, random_complex(s, 26));
  EXPECT_GRADCHECK(la::lstsq, random_complex({5, 3}, 27), random_complex({5, 2}, 28));
  EXPECT_GRADCHECK(la::lstsq, random_complex({3, 5}, 29), random_complex({3}, 30));
  EXPECT_GRADCHECK([](const Tensor& a) { return la::pinv(a); }, random_complex({4, 3}, 31));
  EXPECT_GRADCHECK(la::matrix_exp, random_complex({3, 3}, 32));
}

TEST(LinalgComplexGrad, EntrywiseFiniteDifferencesInRealAndImaginaryParts) {
  Tensor a = random_complex({3, 3}, 40, 3), b = random_complex({3, 2}, 41);
  Tensor hpd = fx::matmul(a, mH(a));
  expect_entrywise_gradient([&](const Tensor& x) { return la::solve(x, b); }, a, "solve a");
  expect_entrywise_gradient([&](const Tensor& x) { return la::solve(a, x); }, b, "solve b");
  expect_entrywise_gradient([&](const Tensor& x) { return la::triangular_solve(x, b, true); }, a,
                            "triangular_solve");
  expect_entrywise_gradient(la::inv, a, "inv");
  expect_entrywise_gradient(la::det, a, "det");
  expect_entrywise_gradient(la::logdet, a, "logdet");
  expect_entrywise_gradient([](const Tensor& x) { return std::get<0>(la::slogdet(x)); }, a,
                            "slogdet sign");
  expect_entrywise_gradient([](const Tensor& x) { return std::get<1>(la::slogdet(x)); }, a,
                            "slogdet logabsdet");
  expect_entrywise_gradient(la::trace, a, "trace");
  expect_entrywise_gradient(la::cholesky, hpd, "cholesky");
  expect_entrywise_gradient([](const Tensor& x) { return std::get<0>(la::qr(x)); },
                            random_complex({4, 3}, 42), "qr q");
  expect_entrywise_gradient([](const Tensor& x) { return std::get<1>(la::qr(x)); },
                            random_complex({4, 3}, 42), "qr r");
  expect_entrywise_gradient(la::eigvalsh, a, "eigvalsh");
  expect_entrywise_gradient(
      [](const Tensor& x) {
        auto [w, v] = la::eigh(x);
        return fix_phases(v, v);
      },
      a, "eigh vectors");
  // A projector onto the two leading eigenvectors: phase-invariant without any fixing.
  expect_entrywise_gradient(
      [](const Tensor& x) {
        Tensor v = fx::slice(std::get<1>(la::eigh(x)), -1, 1, 3);
        return fx::matmul(v, mH(v));
      },
      a, "eigh projector");
  expect_entrywise_gradient(la::svdvals, random_complex({4, 3}, 43), "svdvals");
  for (fx::Shape s : {fx::Shape{4, 3}, fx::Shape{3, 4}})
    expect_entrywise_gradient(
        [](const Tensor& x) {
          auto [u, sv, vh] = la::svd(x);
          return fx::concat({flat(fix_phases(u, u)), flat(fix_phases(mH(vh), u))});
        },
        random_complex(s, 44), "svd vectors");
  expect_entrywise_gradient([&](const Tensor& x) { return la::lstsq(x, b); },
                            random_complex({3, 3}, 45, 2), "lstsq");
  expect_entrywise_gradient([](const Tensor& x) { return la::pinv(x); }, random_complex({3, 4}, 46),
                            "pinv");
  expect_entrywise_gradient(la::matrix_exp, random_complex({3, 3}, 47), "matrix_exp");
}

TEST(LinalgComplexGrad, SinglePrecisionAndRepeatedEigenvalues) {
  // c64 runs the c* routines and its gradients stay c64, close to the c128 ones.
  Tensor a = random_complex({3, 3}, 50, 3), b = random_complex({3, 2}, 51);
  auto loss = [](const Tensor& a, const Tensor& b) {
    return fx::sum(fx::abs2(la::solve(a, b))) + fx::sum(la::eigvalsh(a)) + fx::sum(la::svdvals(a)) +
           fx::real(la::logdet(a));
  };
  auto [ga, gb] = fx::gradient(loss, a, b);
  auto [fa, fb] = fx::gradient(loss, fx::astype(a, fx::c64), fx::astype(b, fx::c64));
  EXPECT_EQ(fa.dtype(), fx::c64);
  EXPECT_LT(max_abs_diff(fx::astype(fa, fx::c128), ga), 1e-4 * fx::max(fx::abs(ga)).item());
  EXPECT_LT(max_abs_diff(fx::astype(fb, fx::c128), gb), 1e-4 * fx::max(fx::abs(gb)).item());
  // A Hermitian matrix with one eigenvalue three times: sum(w^2) = |A|_F^2 has gradient 2A.
  Tensor h = 2 * eye(3);
  Tensor g = fx::gradient([](const Tensor& x) { return fx::sum(fx::square(la::eigvalsh(x))); }, h);
  EXPECT_LT(max_abs_diff(g, 2 * h), 1e-12);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const fx::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(LinalgComplexErrors, NameTheFunctionAndTheShapes) {
  Tensor rect = fx::zeros({2, 3}, fx::c128), sq = fx::ones({3, 3}, fx::c128);
  EXPECT_NE(error_of([&] { la::det(rect); })
                .find("fx::linalg::det: needs square matrices, got "
                      "(2, 3)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              la::solve(sq, fx::ones({3, 1}, fx::f64));
            }).find("fx::linalg::solve: dtypes differ: c128 (3, 3) and f64 (3, 1)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              la::solve(fx::ones({3, 3}, fx::c64), fx::ones({3}, fx::c128));
            }).find("fx::linalg::solve: dtypes differ: c64 (3, 3) and c128 (3,)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { la::inv(sq); }).find("fx::linalg::inv: (3, 3): matrix 0 is singular"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              la::cholesky(-eye(3));
            }).find("fx::linalg::cholesky: (3, 3): matrix 0 is not positive definite"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              la::eigh(fx::ones({2, 3}, fx::c128));
            }).find("fx::linalg::eigh: needs square matrices, got (2, 3)"),
            std::string::npos);
}

}  // namespace
