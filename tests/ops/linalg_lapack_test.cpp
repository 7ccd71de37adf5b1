// fx::linalg: each function's values against the identities that define it (a x = b, l l^T = a,
// q^T q = I, the Penrose conditions, exp of a rotation generator, ...), its derivatives in both
// modes to second order against finite differences (gradcheck, f64, batched), and the fx::Error
// for each bad input. libtorch compares values and gradients in tests/oracle/linalg_oracle_test.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <fluxion/ad/forward.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/linalg.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing/gradcheck.hpp>

namespace {

using fx::Tensor;
namespace la = fx::linalg;

// Well-conditioned random matrices: the identity times `shift` plus normal noise.
Tensor random_matrix(const fx::Shape& s, uint64_t seed, double shift = 0) {
  fx::Generator gen(seed);
  Tensor a = fx::randn(s, gen, fx::f64);
  return shift == 0 ? a : a + shift * la::eye(s[s.size() - 1], fx::f64);
}

double max_abs_diff(const Tensor& a, const Tensor& b) { return fx::max(fx::abs(a - b)).item(); }

// Columns with a positive first entry: a gauge-invariant function of eigenvectors (whose signs
// LAPACK picks), that still depends on every entry. sign() has no derivative.
Tensor fix_signs(const Tensor& v, const Tensor& by) {
  return v * fx::sign(fx::slice(by, -2, 0, 1));
}

Tensor flat(const Tensor& x) { return fx::reshape(x, {-1}); }

#define EXPECT_GRADCHECK(...)                     \
  do {                                            \
    auto r = fx::testing::gradcheck(__VA_ARGS__); \
    EXPECT_TRUE(r) << r;                          \
  } while (0)

TEST(Linalg, SolveAndInverseSatisfyTheirEquations) {
  Tensor a = random_matrix({2, 4, 4}, 1, 3), b = random_matrix({2, 4, 3}, 2);
  Tensor x = la::solve(a, b);
  EXPECT_LT(max_abs_diff(fx::matmul(a, x), b), 1e-12);
  Tensor v = random_matrix({4, 1}, 3).reshape({4});  // one vector for both systems
  Tensor xv = la::solve(a, v);
  EXPECT_EQ(xv.shape(), fx::Shape({2, 4}));
  EXPECT_LT(max_abs_diff(fx::matmul(a, fx::unsqueeze(xv, -1)),
                         fx::expand(fx::reshape(v, {1, 4, 1}), {2, 4, 1})),
            1e-12);
  EXPECT_LT(max_abs_diff(fx::matmul(la::inv(a), a), fx::expand(la::eye(4, fx::f64), {2, 4, 4})),
            1e-12);
  Tensor af = fx::astype(a, fx::f32), bf = fx::astype(b, fx::f32);
  EXPECT_EQ(la::solve(af, bf).dtype(), fx::f32);
  EXPECT_LT(max_abs_diff(fx::astype(la::solve(af, bf), fx::f64), x), 1e-4);
}

TEST(Linalg, TriangularSolveReadsOneTriangle) {
  Tensor a = random_matrix({3, 3}, 4, 4), b = random_matrix({3, 2}, 5);
  Tensor l = a * fx::tensor({1, 0, 0, 1, 1, 0, 1, 1, 1}, fx::f64).reshape({3, 3});
  EXPECT_LT(max_abs_diff(la::triangular_solve(a, b), la::solve(l, b)), 1e-12);
  EXPECT_LT(
      max_abs_diff(
          la::triangular_solve(a, b, true),
          la::solve(fx::transpose(fx::transpose(a) *
                                  fx::tensor({1, 0, 0, 1, 1, 0, 1, 1, 1}, fx::f64).reshape({3, 3})),
                    b)),
      1e-12);
}

TEST(Linalg, DeterminantsOfKnownMatrices) {
  Tensor a = fx::tensor({2, 1, 1, 3}, fx::f64).reshape({2, 2});  // det 5
  Tensor p = fx::tensor({0, 1, 1, 0}, fx::f64).reshape({2, 2});  // det -1 (a row swap)
  EXPECT_NEAR(la::det(a).item(), 5, 1e-12);
  EXPECT_NEAR(la::det(p).item(), -1, 1e-12);
  EXPECT_NEAR(la::logdet(a).item(), std::log(5.0), 1e-12);
  EXPECT_TRUE(std::isnan(la::logdet(p).item()));
  auto [s, l] = la::slogdet(fx::stack({a, p, fx::zeros({2, 2}, fx::f64)}));
  EXPECT_EQ(fx::to_vector<double>(s), (std::vector<double>{1, -1, 0}));
  EXPECT_NEAR(fx::to_vector<double>(l)[0], std::log(5.0), 1e-12);
  EXPECT_EQ(fx::to_vector<double>(l)[2], -INFINITY);
  EXPECT_NEAR(la::trace(a).item(), 5, 0);
  Tensor r = random_matrix({3, 5, 5}, 6);
  auto w = la::eigvalsh(fx::matmul(r, fx::transpose(r)));  // det = product of eigenvalues
  EXPECT_LT(
      max_abs_diff(la::det(fx::matmul(r, fx::transpose(r))), fx::exp(fx::sum(fx::log(w), {-1}))),
      1e-8 * fx::max(fx::abs(la::det(fx::matmul(r, fx::transpose(r))))).item());
}

TEST(Linalg, FactorisationsReconstructTheirInput) {
  Tensor r = random_matrix({2, 5, 5}, 7);
  Tensor spd = fx::matmul(r, fx::transpose(r)) + la::eye(5, fx::f64);
  Tensor l = la::cholesky(spd);
  EXPECT_LT(max_abs_diff(fx::matmul(l, fx::transpose(l)), spd), 1e-12);
  std::vector<double> lv = fx::to_vector<double>(l);
  for (int64_t m = 0; m < 2; ++m)  // lower triangular, positive diagonal
    for (int64_t i = 0; i < 5; ++i) {
      EXPECT_GT(lv[size_t(m * 25 + i * 5 + i)], 0);
      for (int64_t j = i + 1; j < 5; ++j) EXPECT_EQ(lv[size_t(m * 25 + i * 5 + j)], 0);
    }
  for (fx::Shape s : {fx::Shape{2, 6, 4}, fx::Shape{4, 4}, fx::Shape{3, 5}}) {
    Tensor a = random_matrix(s, 8);
    auto [q, rr] = la::qr(a);
    const int64_t k = std::min(s[s.size() - 2], s[s.size() - 1]);
    EXPECT_LT(max_abs_diff(fx::matmul(q, rr), a), 1e-12) << s;
    EXPECT_LT(max_abs_diff(fx::matmul(fx::transpose(q), q), la::eye(k, fx::f64)), 1e-12) << s;
    auto [u, sv, vh] = la::svd(a);
    EXPECT_LT(max_abs_diff(fx::matmul(u * fx::unsqueeze(sv, -2), vh), a), 1e-12) << s;
    EXPECT_LT(max_abs_diff(fx::matmul(vh, fx::transpose(vh)), la::eye(k, fx::f64)), 1e-12) << s;
    EXPECT_EQ(sv.shape()[sv.ndim() - 1], k);
  }
  auto [w, v] = la::eigh(spd);
  EXPECT_LT(max_abs_diff(fx::matmul(v * fx::unsqueeze(w, -2), fx::transpose(v)), spd), 1e-11);
  std::vector<double> wv = fx::to_vector<double>(w);
  for (size_t i = 0; i + 1 < 5; ++i) EXPECT_LE(wv[i], wv[i + 1]);  // ascending
  // eigh reads the symmetric part.
  Tensor skew = r - fx::transpose(r);
  EXPECT_LT(max_abs_diff(la::eigvalsh(spd + skew), w), 1e-12);
}

TEST(Linalg, LeastSquaresAndPseudoInverse) {
  Tensor a = random_matrix({2, 7, 3}, 9), b = random_matrix({2, 7, 2}, 10);
  Tensor x = la::lstsq(a, b);  // normal equations: a^T (a x - b) = 0
  EXPECT_LT(fx::max(fx::abs(fx::matmul(fx::transpose(a), fx::matmul(a, x) - b))).item(), 1e-12);
  Tensor w = random_matrix({3, 6}, 11), c = random_matrix({3}, 12);
  Tensor xm = la::lstsq(w, c);  // minimum norm: exact, and in the row space of w
  EXPECT_LT(max_abs_diff(fx::matmul(w, xm), c), 1e-12);
  EXPECT_LT(max_abs_diff(xm, fx::matmul(la::pinv(w), c)), 1e-12);
  Tensor p = la::pinv(a);  // Penrose: a p a = a, p a p = p, a p and p a symmetric
  EXPECT_LT(max_abs_diff(fx::matmul(fx::matmul(a, p), a), a), 1e-12);
  EXPECT_LT(max_abs_diff(fx::matmul(fx::matmul(p, a), p), p), 1e-12);
  Tensor ap = fx::matmul(a, p);
  EXPECT_LT(max_abs_diff(ap, fx::transpose(ap)), 1e-12);
  // A rank-1 matrix: the zero singular value is dropped, not inverted.
  Tensor one = fx::tensor({1, 2, 2, 4}, fx::f64).reshape({2, 2});
  EXPECT_LT(max_abs_diff(la::pinv(one), one * (1.0 / 25)), 1e-12);
}

TEST(Linalg, MatrixExponential) {
  const double t = 2.5;  // exp([[0, -t], [t, 0]]) is the rotation by t
  Tensor g = fx::tensor({0, -t, t, 0}, fx::f64).reshape({2, 2});
  Tensor rot = fx::tensor({std::cos(t), -std::sin(t), std::sin(t), std::cos(t)}, fx::f64);
  EXPECT_LT(max_abs_diff(la::matrix_exp(g), rot.reshape({2, 2})), 1e-13);
  Tensor a = random_matrix({2, 4, 4}, 13);  // exp(a) exp(-a) = I, and det exp(a) = exp(tr a)
  EXPECT_LT(max_abs_diff(fx::matmul(la::matrix_exp(a), la::matrix_exp(-a)), la::eye(4, fx::f64)),
            1e-11);
  EXPECT_LT(max_abs_diff(la::det(la::matrix_exp(a)), fx::exp(la::trace(a))),
            1e-10 * fx::max(fx::exp(la::trace(a))).item());
}

TEST(LinalgGrad, SolvesInverseAndDeterminants) {
  Tensor a = random_matrix({2, 3, 3}, 20, 3), b = random_matrix({2, 3, 2}, 21);
  EXPECT_GRADCHECK(la::solve, a, b);
  EXPECT_GRADCHECK([](const Tensor& a, const Tensor& v) { return la::solve(a, v); }, a,
                   random_matrix({3, 1}, 22).reshape({3}));
  EXPECT_GRADCHECK([](const Tensor& a, const Tensor& b) { return la::triangular_solve(a, b); }, a,
                   b);
  EXPECT_GRADCHECK(
      [](const Tensor& a, const Tensor& b) { return la::triangular_solve(a, b, true); }, a, b);
  EXPECT_GRADCHECK(la::inv, a);
  EXPECT_GRADCHECK(la::det, a);
  EXPECT_GRADCHECK(la::logdet, fx::matmul(a, fx::transpose(a)));
  EXPECT_GRADCHECK([](const Tensor& a) { return std::get<1>(la::slogdet(a)); }, -a);
  EXPECT_GRADCHECK(la::trace, a);
}

TEST(LinalgGrad, Factorisations) {
  Tensor a = random_matrix({2, 4, 4}, 23, 5);
  EXPECT_GRADCHECK(la::cholesky, a);  // derivatives of the symmetric part, like the forward
  auto qr_flat = [](const Tensor& a) {
    auto [q, r] = la::qr(a);
    return fx::concat({flat(q), flat(r)});
  };
  EXPECT_GRADCHECK(qr_flat, random_matrix({2, 5, 3}, 24));
  EXPECT_GRADCHECK(qr_flat, random_matrix({3, 3}, 25));
}

TEST(LinalgGrad, SpectralDecompositions) {
  auto eigh_flat = [](const Tensor& a) {
    auto [w, v] = la::eigh(a);
    return fx::concat({flat(w), flat(fix_signs(v, v))});
  };
  EXPECT_GRADCHECK(eigh_flat, random_matrix({2, 4, 4}, 26));
  auto svd_flat = [](const Tensor& a) {
    auto [u, s, vh] = la::svd(a);
    return fx::concat({flat(fix_signs(u, u)), flat(s), flat(fix_signs(fx::transpose(vh), u))});
  };
  for (fx::Shape s : {fx::Shape{2, 5, 3}, fx::Shape{3, 5}, fx::Shape{4, 4}})
    EXPECT_GRADCHECK(svd_flat, random_matrix(s, 27));
}

TEST(LinalgGrad, Composites) {
  EXPECT_GRADCHECK(la::lstsq, random_matrix({2, 6, 3}, 28), random_matrix({2, 6, 2}, 29));
  EXPECT_GRADCHECK(la::lstsq, random_matrix({3, 5}, 30), random_matrix({3}, 31));
  EXPECT_GRADCHECK([](const Tensor& a) { return la::pinv(a); }, random_matrix({5, 3}, 32));
  EXPECT_GRADCHECK(la::matrix_exp, random_matrix({2, 3, 3}, 33));  // norm > 1/2: squarings
}

TEST(LinalgGrad, RepeatedEigenvaluesGiveFiniteEigenvalueGradients) {
  // A multiple of the identity has one eigenvalue three times; sum(w^2) = |A|_F^2 has gradient 2A.
  Tensor a = 2 * la::eye(3, fx::f64);
  Tensor g = fx::gradient([](const Tensor& a) { return fx::sum(fx::square(la::eigvalsh(a))); }, a);
  EXPECT_LT(max_abs_diff(g, 2 * a), 1e-12);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const fx::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(LinalgErrors, NameTheFunctionAndTheShapes) {
  Tensor rect = fx::zeros({2, 3}, fx::f64), sq = fx::ones({3, 3}, fx::f64);
  EXPECT_NE(error_of([&] { la::solve(rect, rect); })
                .find("fx::linalg::solve: needs square "
                      "matrices, got (2, 3)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { la::inv(sq); }).find("fx::linalg::inv: (3, 3): matrix 0 is singular"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              la::solve(sq, fx::zeros({4, 1}, fx::f64));
            }).find("fx::linalg::solve: (3, 3) and (4, 1): right-hand side needs 3 rows"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              la::solve(fx::zeros({2, 3, 3}, fx::f64), fx::zeros({4, 3, 1}, fx::f64));
            }).find("batch axes (2,) and (4,) do not broadcast"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              la::cholesky(-la::eye(3, fx::f64));
            }).find("fx::linalg::cholesky: (3, 3): matrix 0 is not positive definite"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              la::triangular_solve(fx::zeros({2, 2}, fx::f64), fx::ones({2}, fx::f64));
            }).find("fx::linalg::triangular_solve: (2, 2): matrix 0 is singular"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              la::det(fx::ones({3, 3}, fx::i64));
            }).find("fx::linalg::det: needs f32, f64, c64 or c128, got i64 (3, 3)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              la::eigh(fx::ones({3}, fx::f64));
            }).find("fx::linalg::eigh: needs a matrix (..., m, n), got (3,)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              fx::gradient([](const Tensor& a) { return fx::sum(std::get<1>(la::qr(a))); },
                           fx::ones({2, 3}, fx::f64));
            }).find("fx::linalg::qr: the derivative of the reduced QR of a (2, 3) matrix"),
            std::string::npos);
}

}  // namespace
