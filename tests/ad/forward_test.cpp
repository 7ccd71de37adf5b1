// Forward mode (jvp/pushforward) and the derivative operators: Jacobians both ways, Hessians
// forward-over-reverse and reverse-over-reverse, Hessian-vector products, third derivatives,
// and perturbation confusion. (Every primitive's pushforward is also checked against its
// pullback by fx::testing::gradcheck in the table-driven suite.)
#include <gtest/gtest.h>

#include <cmath>
#include <fluxion/ad/forward.hpp>
#include <fluxion/ops/primitives.hpp>
#include <fluxion/testing.hpp>

using fx::Tensor;

namespace {
Tensor rosenbrock(const Tensor& x) {
  Tensor a = fx::slice(x, 0, 0, x.numel() - 1), b = fx::slice(x, 0, 1, x.numel());
  return fx::sum(100.0 * fx::square(b - a * a) + fx::square(1.0 - a));
}
}  // namespace

TEST(Forward, JvpMatchesClosedForm) {
  Tensor x = fx::tensor({0.3, -0.7, 1.1}, fx::f64), v = fx::tensor({1, 2, -1}, fx::f64);
  auto [y, dy] = fx::jvp([](const Tensor& x) { return fx::sin(x) * x; }, x, v);
  auto xs = fx::to_vector<double>(x), vs = fx::to_vector<double>(v), d = fx::to_vector<double>(dy);
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(d[i], (std::cos(xs[i]) * xs[i] + std::sin(xs[i])) * vs[i], 1e-14);
  auto push = fx::pushforward([](const Tensor& x) { return fx::exp(x); }, x);
  EXPECT_TRUE(fx::allclose(push(v), fx::exp(x) * v, 1e-14, 0));
}

TEST(Forward, SeveralArgumentsAndUntouchedTangents) {
  Tensor a = fx::tensor({1, 2}, fx::f64), b = fx::tensor({3, 4}, fx::f64);
  auto f = [](const Tensor& a, const Tensor& b) { return a * b; };
  auto [y, dy] = fx::jvp(f, std::tuple{a, b}, std::tuple{fx::ones_like(a), fx::zeros_like(b)});
  EXPECT_TRUE(fx::allclose(dy, b, 0, 0));
  // A function that ignores its argument has a zero tangent.
  auto [y2, dy2] = fx::jvp([](const Tensor&) { return fx::ones({2}, fx::f64); }, a, a);
  EXPECT_TRUE(fx::allclose(dy2, fx::zeros({2}, fx::f64), 0, 0));
}

TEST(Forward, JacobianBothWaysAgreeWithClosedForm) {
  Tensor x = fx::tensor({0.5, -1.5, 2.0}, fx::f64);
  auto f = [](const Tensor& x) { return fx::concat({x * x, fx::sum(x, {}, true)}); };  // R^3 -> R^4
  Tensor jr = fx::jacobian(f, x), jf = fx::jacobian_forward(f, x);
  ASSERT_EQ(jr.shape(), (fx::Shape{4, 3}));
  Tensor want = fx::tensor({1, 0, 0, 0, -3, 0, 0, 0, 4, 1, 1, 1}, fx::f64).reshape({4, 3});
  EXPECT_TRUE(fx::allclose(jr, want, 1e-14, 0)) << jr;
  EXPECT_TRUE(fx::allclose(jf, want, 1e-14, 0)) << jf;
}

TEST(Forward, HessiansOfRosenbrockMatchClosedForm) {
  Tensor x = fx::tensor({0.5, -1.2, 0.8}, fx::f64);
  auto v = fx::to_vector<double>(x);
  // Closed form of the Rosenbrock Hessian (tridiagonal).
  std::vector<double> h(9, 0.0);
  for (int i = 0; i < 3; ++i) {
    if (i + 1 < 3) h[i * 3 + i] += 1200 * v[i] * v[i] - 400 * v[i + 1] + 2;
    if (i > 0) h[i * 3 + i] += 200;
    if (i + 1 < 3) h[i * 3 + i + 1] = h[(i + 1) * 3 + i] = -400 * v[i];
  }
  Tensor want = fx::from_vector(h, {3, 3});
  EXPECT_TRUE(fx::allclose(fx::hessian(rosenbrock, x), want, 1e-12, 1e-12));
  EXPECT_TRUE(fx::allclose(fx::hessian_reverse(rosenbrock, x), want, 1e-12, 1e-12));
  Tensor dir = fx::tensor({1, -2, 0.5}, fx::f64);
  EXPECT_TRUE(fx::allclose(fx::hvp(rosenbrock, x, dir), fx::matmul(want, dir), 1e-12, 1e-12));
  EXPECT_TRUE(fx::allclose(fx::diaghessian(rosenbrock, x), fx::tensor({h[0], h[4], h[8]}, fx::f64),
                           1e-12, 1e-12));
}

TEST(Forward, ThirdDerivativeByNesting) {
  // d3/dx3 exp(sin x) = e^{sin x} (cos^3 x - 3 sin x cos x - cos x)
  auto f = [](const Tensor& x) { return fx::sum(fx::exp(fx::sin(x))); };
  auto d1 = [&](const Tensor& x) { return fx::sum(fx::gradient(f, x)); };
  auto d2 = [&](const Tensor& x) { return fx::sum(fx::gradient(d1, x)); };
  Tensor x = fx::scalar(0.7, fx::f64);
  double c = std::cos(0.7), s = std::sin(0.7);
  double want = std::exp(s) * (c * c * c - 3 * s * c - c);
  EXPECT_NEAR(fx::gradient(d2, x).item(), want, 1e-12);     // reverse^3
  auto [y, d3] = fx::jvp(d2, x, fx::scalar(1.0, fx::f64));  // forward over reverse^2
  EXPECT_NEAR(d3.item(), want, 1e-12);
}

TEST(Forward, NoPerturbationConfusion) {
  // d/dx [x * d/dy (x + y)] = 1 at any x, in every combination of modes.
  auto inner_rev = [](const Tensor& x) {
    return x *
           fx::gradient([&](const Tensor& y) { return fx::sum(x + y); }, fx::scalar(1.0, fx::f64));
  };
  auto inner_fwd = [](const Tensor& x) {
    auto [v, dv] = fx::jvp([&](const Tensor& y) { return x + y; }, fx::scalar(1.0, fx::f64),
                           fx::scalar(1.0, fx::f64));
    return x * dv;
  };
  Tensor x = fx::scalar(3.0, fx::f64), one = fx::scalar(1.0, fx::f64);
  EXPECT_DOUBLE_EQ(fx::gradient([&](const Tensor& x) { return inner_rev(x); }, x).item(), 1.0);
  EXPECT_DOUBLE_EQ(fx::gradient([&](const Tensor& x) { return inner_fwd(x); }, x).item(), 1.0);
  EXPECT_DOUBLE_EQ(fx::jvp(inner_rev, x, one).second.item(), 1.0);
  EXPECT_DOUBLE_EQ(fx::jvp(inner_fwd, x, one).second.item(), 1.0);
}

TEST(Forward, PrimitiveWithoutPushforwardIsANamedError) {
  fx::Primitive twice{
      .name = "twice_without_jvp",
      .forward = fx::elementwise_forward,
      .pullback = [](const fx::PullbackArgs&, const Tensor& dy, Tensor* dx) { dx[0] = dy * 2.0; }};
  (void)(fx::ones({1}) * 2.0);  // backends register on the first dispatch
  for (fx::Primitive* p : fx::builtin_primitives())
    if (p == &fx::mul_scalar_p)
      std::copy(std::begin(p->kernels[0]), std::end(p->kernels[0]), std::begin(twice.kernels[0]));
  auto f = [&](const Tensor& x) { return fx::bind(twice, {x}, fx::ScalarAttrs{2}); };
  Tensor x = fx::tensor({1, 2}, fx::f64);
  EXPECT_TRUE(fx::allclose(fx::gradient([&](const Tensor& x) { return fx::sum(f(x)); }, x),
                           fx::full({2}, 2.0, fx::f64), 0, 0));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { (void)fx::jvp(f, x, x); },
                                             {"fx::jvp", "twice_without_jvp", "pushforward"}));
}
