// AD through unmodified C++ libraries: Eigen's LU solve and matrix exponential, and
// Boost.Odeint's adaptive Dormand-Prince integrator, instantiated with fx::Real and
// differentiated by fx::gradient; neither library is changed (fluxion/ad/eigen.hpp only
// declares fx::Real's NumTraits). Gradients are checked against finite differences, the matrix
// exponential's against its closed form, and the ODE's against fx::sci's adjoint method.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <boost/numeric/odeint.hpp>
#include <cmath>
#include <fluxion/ad/eigen.hpp>
#include <fluxion/fluxion.hpp>
#include <unsupported/Eigen/MatrixFunctions>
#include <vector>

namespace {

template <class F>
std::vector<double> central_differences(F& f, const std::vector<double>& x, double h = 1e-6) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<double> a = x, b = x;
    a[i] += h;
    b[i] -= h;
    g[i] = (f(a) - f(b)) / (2 * h);
  }
  return g;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "component " << i;
}

// ‖A⁻¹ b‖² by Eigen's PartialPivLU, A built from p (pivoting chooses rows by value).
auto lu_objective = [](const auto& p) {
  using T = std::decay_t<decltype(p[0])>;
  Eigen::Matrix<T, 3, 3> A;
  A << p[0], p[1], 0.5, p[2], p[3], 1.0, 0.2, p[4], 2.0;
  Eigen::Matrix<T, 3, 1> b(T(1.0), T(2.0), T(3.0));
  Eigen::Matrix<T, 3, 1> x = A.partialPivLu().solve(b);
  return x.squaredNorm();
};

// u(t1) of u'' = -k0 u - k1 u', u(0) = 1, u'(0) = 0, by Boost.Odeint's controlled dopri5.
auto odeint_objective = [](const auto& k) {
  using T = std::decay_t<decltype(k[0])>;
  using State = std::vector<T>;
  namespace odeint = boost::numeric::odeint;
  State u{T(1.0), T(0.0)};
  auto rhs = [&](const State& x, State& dx, const T&) {
    dx[0] = x[1];
    dx[1] = -k[0] * x[0] - k[1] * x[1];
  };
  auto stepper =
      odeint::make_controlled(1e-12, 1e-12, odeint::runge_kutta_dopri5<State, T, State, T>());
  odeint::integrate_adaptive(stepper, rhs, u, T(0.0), T(2.0), T(0.01));
  return u[0];
};

}  // namespace

TEST(UnmodifiedLibraries, EigenLuSolveMatchesFiniteDifferences) {
  std::vector<double> p{3.0, 1.0, 1.0, 2.0, 0.1};
  std::vector<double> g = fx::gradient(lu_objective, p);
  expect_close(g, central_differences(lu_objective, p), 1e-6);
}

TEST(UnmodifiedLibraries, EigenMatrixExponentialMatchesItsClosedForm) {
  // exp([[0, a], [-a, 0]]) is a rotation by a: its (0, 1) entry is sin(a), derivative cos(a);
  // scaled by s: exp(s A)(0, 0) = cos(s a), derivative w.r.t. s: -a sin(s a).
  auto f = [](const auto& p) {
    using T = std::decay_t<decltype(p[0])>;
    Eigen::Matrix<T, 2, 2> A;
    A << T(0.0), p[0], -p[0], T(0.0);
    Eigen::Matrix<T, 2, 2> E = (A * p[1]).exp();
    return E(0, 1) + E(0, 0);
  };
  const double a = 0.7, s = 1.3;
  std::vector<double> g = fx::gradient(f, std::vector<double>{a, s});
  EXPECT_NEAR(g[0], s * std::cos(s * a) - s * std::sin(s * a), 1e-10);
  EXPECT_NEAR(g[1], a * std::cos(s * a) - a * std::sin(s * a), 1e-10);
}

TEST(UnmodifiedLibraries, BoostOdeintDopri5MatchesFiniteDifferencesAndTheAdjoint) {
  std::vector<double> k{2.0, 0.3};
  std::vector<double> g = fx::gradient(odeint_objective, k);
  expect_close(g, central_differences(odeint_objective, k, 1e-5), 1e-6);

  // The same gradient by fx::sci's continuous adjoint on tensors.
  fx::Tensor kt = fx::tensor({k[0], k[1]}, fx::f64);
  auto f = [](const fx::Tensor& u, const fx::Tensor& p, double) {
    fx::Tensor x = fx::select(u, 0, 0), v = fx::select(u, 0, 1);
    return fx::stack({v, -fx::select(p, 0, 0) * x - fx::select(p, 0, 1) * v}, 0);
  };
  fx::sci::ODEOptions opt{.method = fx::sci::Method::dopri5, .rtol = 1e-11, .atol = 1e-12};
  opt.sensitivity = fx::sci::Sensitivity::adjoint;
  const fx::Tensor u0 = fx::tensor({1.0, 0.0}, fx::f64);
  fx::Tensor ga = fx::gradient(
      [&](const fx::Tensor& p) {
        return fx::select(fx::sci::solve_ode(f, u0, p, {0.0, 2.0}, opt).back(), 0, 0);
      },
      kt);
  expect_close(g, {fx::select(ga, 0, 0).item(), fx::select(ga, 0, 1).item()}, 1e-6);
}
