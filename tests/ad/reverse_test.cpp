// Reverse mode on tensors: what fx::pullback / fx::gradient / fx::withgradient return for every
// kind of argument, and that ordinary C++ (loops, branches, recursion, closures, nesting) is
// differentiated correctly. Scalar (fx::Real) code has its own tests in scalar_ad_test.cpp.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

#include "ad_test_helpers.hpp"

namespace {

using fx::Tensor;

using fx::ad_test::expect_near;
using fx::ad_test::f64;
using fx::ad_test::vec;

struct Affine {
  Tensor w, b, unused;
  double scale = 2;  // a hyperparameter: not a field, never differentiated
  FX_FIELDS(w, b, unused)
};

struct Model {
  Affine first;
  std::vector<Affine> rest;
  FX_FIELDS(first, rest)
};

Affine affine(int64_t in, int64_t out, uint64_t seed) {
  return {fx::testing::randn({out, in}, {.seed = seed}),
          fx::testing::randn({out}, {.seed = seed + 1}),
          fx::testing::randn({3, 3}, {.seed = seed + 2})};
}

Tensor apply(const Affine& a, const Tensor& x) {
  return fx::tanh(fx::matmul(a.w, x) + a.b) * a.scale;
}

// ---- what comes back, by argument kind

TEST(Reverse, SeveralArgumentsGiveATupleOfGradients) {
  Tensor a = f64({0.5, -1, 2}), b = f64({3, 1, -2});
  auto [ga, gb] = fx::gradient(
      [](const Tensor& a, const Tensor& b) { return fx::sum(a * b + fx::tanh(a)); }, a, b);
  std::vector<double> want_a;
  for (int i = 0; i < 3; ++i)
    want_a.push_back(vec(b)[size_t(i)] + 1 - std::pow(std::tanh(vec(a)[size_t(i)]), 2));
  expect_near(ga, want_a);
  expect_near(gb, vec(a));
}

TEST(Reverse, NumberArgumentsGiveNumbers) {
  Tensor x = f64({1, 2, 3});
  // d/ds sum(s * x^2 + s^2) = sum(x^2) + 2 s;  d/dx = 2 s x
  auto [gx, gs] = fx::gradient(
      [](const Tensor& x, const Tensor& s) { return fx::sum(s * x * x) + s * s; }, x, 1.5);
  static_assert(std::is_same_v<decltype(gs), double>);
  EXPECT_NEAR(gs, 14 + 3.0, 1e-12);
  expect_near(gx, {3, 6, 9});
  // A lone number: the gradient is a plain double (a Tensor lambda takes the tensor path).
  double d = fx::gradient([](const Tensor& t) { return fx::sin(t) * t; }, 0.7);
  EXPECT_NEAR(d, std::cos(0.7) * 0.7 + std::sin(0.7), 1e-12);
  float df = fx::gradient([](const Tensor& t) { return t * t; }, 3.0f);
  EXPECT_FLOAT_EQ(df, 6.0f);
}

TEST(Reverse, StructGradientHasTheStructsTypeWithZerosWhereNothingFlowed) {
  Affine layer = affine(4, 3, 10);
  Tensor x = fx::testing::randn({4}, {.seed = 3});
  auto g = fx::gradient([&](const Affine& m) { return fx::sum(apply(m, x)); }, layer);
  static_assert(std::is_same_v<decltype(g), Affine>);
  EXPECT_EQ(g.w.shape(), (fx::Shape{3, 4}));
  EXPECT_EQ(g.b.shape(), (fx::Shape{3}));
  ASSERT_TRUE(g.unused.defined()) << "an unused leaf is a zero tensor, not an undefined one";
  EXPECT_EQ(g.unused.shape(), (fx::Shape{3, 3}));
  EXPECT_EQ(vec(g.unused), std::vector<double>(9, 0.0));
  EXPECT_EQ(g.scale, 2);  // non-field members are copied, not differentiated
  // Values: d/db = scale * (1 - tanh(z)^2); d/dw = d/db outer x.
  auto z = vec(fx::matmul(layer.w, x) + layer.b), xs = vec(x), gb = vec(g.b), gw = vec(g.w);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(gb[i], 2 * (1 - std::tanh(z[i]) * std::tanh(z[i])), 1e-12);
    for (size_t j = 0; j < 4; ++j) EXPECT_NEAR(gw[i * 4 + j], gb[i] * xs[j], 1e-12);
  }
  EXPECT_TRUE(fx::testing::gradcheck([&](const Affine& m) { return apply(m, x); }, layer));
}

TEST(Reverse, NestedStructsAndVectorsOfStructs) {
  Model m{affine(4, 3, 1), {affine(3, 3, 5), affine(3, 2, 9)}};
  Tensor x = fx::testing::randn({4}, {.seed = 4});
  auto loss = [&](const Model& m) {
    Tensor h = apply(m.first, x);
    for (const Affine& a : m.rest) h = apply(a, h);
    return fx::sum(h * h);
  };
  auto g = fx::gradient(loss, m);
  static_assert(std::is_same_v<decltype(g), Model>);
  ASSERT_EQ(g.rest.size(), 2u);
  EXPECT_EQ(g.rest[1].w.shape(), (fx::Shape{2, 3}));
  EXPECT_EQ(vec(g.rest[0].unused), std::vector<double>(9, 0.0));
  EXPECT_TRUE(fx::testing::gradcheck([&](const Model& m) { return loss(m); }, m));
}

TEST(Reverse, StandardContainersAsArguments) {
  Tensor a = f64({1, 2}), b = f64({3, -1});
  auto gv = fx::gradient([](const std::vector<Tensor>& v) { return fx::sum(v[0] * v[1]); },
                         std::vector<Tensor>{a, b});
  ASSERT_EQ(gv.size(), 2u);
  expect_near(gv[0], vec(b));
  expect_near(gv[1], vec(a));

  auto ga = fx::gradient([](const std::array<Tensor, 2>& v) { return fx::sum(v[0] * v[0]); },
                         std::array<Tensor, 2>{a, b});
  expect_near(ga[0], {2, 4});
  expect_near(ga[1], {0, 0});

  auto gt = fx::gradient(
      [](const std::tuple<Tensor, Tensor>& t) {
        return fx::sum(std::get<0>(t) - std::get<1>(t) * 3.0);
      },
      std::make_tuple(a, b));
  expect_near(std::get<0>(gt), {1, 1});
  expect_near(std::get<1>(gt), {-3, -3});

  auto gp =
      fx::gradient([](const std::pair<Tensor, Tensor>& p) { return fx::sum(p.first * p.second); },
                   std::make_pair(a, b));
  expect_near(gp.second, vec(a));

  std::map<std::string, Tensor> named{{"alpha", a}, {"beta", b}};
  auto gm = fx::gradient(
      [](const std::map<std::string, Tensor>& m) { return fx::sum(fx::exp(m.at("beta"))); }, named);
  ASSERT_EQ(gm.size(), 2u);
  expect_near(gm.at("alpha"), {0, 0});
  expect_near(gm.at("beta"), {std::exp(3.0), std::exp(-1.0)});

  auto opt_loss = [](const std::optional<Tensor>& o) {
    return o ? fx::sum(*o * *o) : fx::scalar(1, fx::f64);
  };
  auto go = fx::gradient(opt_loss, std::optional<Tensor>(a));
  ASSERT_TRUE(go.has_value());
  expect_near(*go, {2, 4});
  auto gnone = fx::gradient(opt_loss, std::optional<Tensor>());
  EXPECT_FALSE(gnone.has_value());
}

TEST(Reverse, IntegerArgumentsGetZeroGradients) {
  Tensor x = f64({1, 2, 3}), idx = fx::tensor({2, 2, 0}, fx::i64);
  auto [gx, gi] = fx::gradient(
      [](const Tensor& x, const Tensor& i) { return fx::sum(fx::index_select(x, 0, i)); }, x, idx);
  expect_near(gx, {1, 0, 2});
  EXPECT_EQ(gi.shape(), idx.shape());
  EXPECT_EQ(vec(gi), std::vector<double>(3, 0.0));
}

TEST(Reverse, GradientKeepsTheArgumentsDtype) {
  Tensor x = fx::tensor({0.5, 1.5}, fx::f32);
  auto g = fx::gradient([](const Tensor& x) { return fx::sum(fx::astype(x, fx::f64) * x); }, x);
  EXPECT_EQ(g.dtype(), fx::f32);
  expect_near(g, {1, 3}, 1e-6);
}

// ---- withgradient and pullback

TEST(Reverse, WithgradientReturnsTheValueAndAuxiliaryOutputs) {
  Tensor x = f64({1, -2, 3});
  auto r = fx::withgradient(
      [](const Tensor& x) {
        Tensor y = x * x;
        return std::make_pair(fx::sum(y), fx::argmax(y, 0));  // (loss, aux)
      },
      x);
  EXPECT_DOUBLE_EQ(r.val.first.item(), 14);
  EXPECT_EQ(r.val.second.item(), 2);
  expect_near(r.grad, {2, -4, 6});

  auto t = fx::withgradient(
      [](const Tensor& a, const Tensor& b) { return std::make_tuple(fx::sum(a * b), a + b, 42); },
      x, f64({1, 1, 1}));
  EXPECT_DOUBLE_EQ(std::get<0>(t.val).item(), 2);
  expect_near(std::get<1>(t.val), {2, -1, 4});
  EXPECT_EQ(std::get<2>(t.val), 42);
  expect_near(std::get<0>(t.grad), {1, 1, 1});
  expect_near(std::get<1>(t.grad), {1, -2, 3});

  auto plain = fx::withgradient([](const Tensor& x) { return fx::sum(fx::exp(x)); }, x);
  EXPECT_NEAR(plain.val.item(), std::exp(1.0) + std::exp(-2.0) + std::exp(3.0), 1e-12);
}

TEST(Reverse, PullbackOfAVectorFunctionIsTheTransposedJacobian) {
  Tensor w = fx::testing::randn({3, 4}, {.seed = 8}), x = fx::testing::randn({4}, {.seed = 9});
  auto [y, back] = fx::pullback([&](const Tensor& x) { return fx::matmul(w, x); }, x);
  EXPECT_TRUE(fx::allclose(y, fx::matmul(w, x), 1e-14, 1e-14));
  Tensor u = f64({1, -2, 0.5});
  EXPECT_TRUE(fx::allclose(back(u), fx::matmul(fx::transpose(w), u), 1e-14, 1e-14));
}

TEST(Reverse, CallingBackTwiceGivesTheSameAnswer) {
  Tensor x = fx::testing::randn({5}, {.seed = 1});
  auto [y, back] = fx::pullback([](const Tensor& x) { return fx::tanh(x) * fx::sin(x); }, x);
  Tensor u = fx::testing::randn({5}, {.seed = 2});
  auto g1 = vec(back(u)), g2 = vec(back(u));
  EXPECT_EQ(g1, g2);
  auto g3 = vec(back(u * 2.0));  // linear in the cotangent
  for (size_t i = 0; i < g1.size(); ++i) EXPECT_NEAR(g3[i], 2 * g1[i], 1e-14);
  auto copy = back;  // copies share the tape
  EXPECT_EQ(vec(copy(u)), g1);
}

// ---- ordinary C++ inside f

TEST(Reverse, LoopsBranchesRecursionAndClosures) {
  Tensor x = f64({0.5, -0.75});
  // Loop: x^5 by repeated multiplication.
  auto g_loop = fx::gradient(
      [](const Tensor& x) {
        Tensor y = x;
        for (int i = 0; i < 4; ++i) y = y * x;
        return fx::sum(y);
      },
      x);
  expect_near(g_loop, {5 * std::pow(0.5, 4), 5 * std::pow(-0.75, 4)});
  // Branch on a value: only the taken branch is recorded.
  auto branchy = [](const Tensor& x) {
    return fx::sum(x).item() > 0 ? fx::sum(fx::exp(x)) : fx::sum(x * x * x);
  };
  expect_near(fx::gradient(branchy, x), {3 * 0.25, 3 * 0.5625});
  expect_near(fx::gradient(branchy, f64({1, 2})), {std::exp(1.0), std::exp(2.0)});
  // Recursion: x^n = x * x^(n-1).
  std::function<Tensor(const Tensor&, int)> power = [&](const Tensor& t, int n) -> Tensor {
    return n == 1 ? t : t * power(t, n - 1);
  };
  expect_near(fx::gradient([&](const Tensor& x) { return fx::sum(power(x, 3)); }, x),
              {3 * 0.25, 3 * 0.5625});
  // Closures: a lambda capturing a tracked value, applied twice (x * (x * x)).
  auto g_closure = fx::gradient(
      [](const Tensor& x) {
        auto times_x = [&](const Tensor& t) { return t * x; };
        return fx::sum(times_x(times_x(x)));
      },
      x);
  expect_near(g_closure, {3 * 0.25, 3 * 0.5625});
  // A captured constant is not differentiated.
  Tensor c = f64({10, 20});
  expect_near(fx::gradient([&](const Tensor& x) { return fx::sum(c * x); }, x), {10, 20});
}

TEST(Reverse, FanOutAccumulates) {
  Tensor x = f64({1.5, -2});
  // x used four times: d/dx (x*x + x + sin(x)) = 2x + 1 + cos(x)
  auto g = fx::gradient([](const Tensor& x) { return fx::sum(x * x + x + fx::sin(x)); }, x);
  expect_near(g, {4 + std::cos(1.5), -3 + std::cos(-2.0)});
  // The same tensor passed as two arguments: each argument gets its own cotangent.
  auto [ga, gb] =
      fx::gradient([](const Tensor& a, const Tensor& b) { return fx::sum(a * b * b); }, x, x);
  expect_near(ga, {2.25, 4});
  expect_near(gb, {2 * 1.5 * 1.5, 2 * -2 * -2.0});
  // Broadcasting is fan-out too: a (1,) operand used across (3,).
  auto gs = fx::gradient([](const Tensor& s) { return fx::sum(s * f64({1, 2, 3})); }, f64({7}));
  expect_near(gs, {6});
}

TEST(Reverse, StopGradientBlocksTheFlow) {
  Tensor x = f64({2, -3});
  expect_near(fx::gradient([](const Tensor& x) { return fx::sum(x * fx::stop_gradient(x)); }, x),
              vec(x));
  expect_near(fx::gradient([](const Tensor& x) { return fx::sum(fx::stop_gradient(x * x)); }, x),
              {0, 0});
  // The value passes through unchanged.
  EXPECT_EQ(vec(fx::stop_gradient(x)), vec(x));
}

TEST(Reverse, AFunctionNotDependingOnItsArgumentHasZeroGradient) {
  Tensor x = fx::testing::randn({2, 3});
  Tensor c = fx::testing::randn({4}, {.seed = 5});
  auto g = fx::gradient([&](const Tensor&) { return fx::sum(fx::tanh(c)); }, x);
  ASSERT_TRUE(g.defined());
  EXPECT_EQ(g.shape(), x.shape());
  EXPECT_EQ(vec(g), std::vector<double>(6, 0.0));
  auto [ga, gb] = fx::gradient([](const Tensor& a, const Tensor&) { return fx::sum(a); }, x, c);
  EXPECT_EQ(vec(ga), std::vector<double>(6, 1.0));
  EXPECT_EQ(vec(gb), std::vector<double>(4, 0.0));
}

// ---- higher order

TEST(Reverse, GradientOfGradient) {
  auto cube = [](const Tensor& x) { return x * x * x; };
  auto d1 = [&](const Tensor& x) { return fx::gradient(cube, x); };
  auto d2 = [&](const Tensor& x) { return fx::gradient(d1, x); };
  auto d3 = [&](const Tensor& x) { return fx::gradient(d2, x); };
  for (double v : {-1.5, 0.0, 2.0}) {
    Tensor x = fx::scalar(v, fx::f64);
    EXPECT_NEAR(d1(x).item(), 3 * v * v, 1e-12);
    EXPECT_NEAR(d2(x).item(), 6 * v, 1e-12);
    EXPECT_NEAR(d3(x).item(), 6, 1e-12);
  }
  // d^2/dx^2 sin(x) * x = 2 cos(x) - x sin(x)
  auto f = [](const Tensor& x) { return fx::sin(x) * x; };
  double v = 0.8;
  EXPECT_NEAR(
      fx::gradient([&](const Tensor& x) { return fx::gradient(f, x); }, fx::scalar(v, fx::f64))
          .item(),
      2 * std::cos(v) - v * std::sin(v), 1e-12);
}

TEST(Reverse, NestedDerivativesDoNotConfusePerturbations) {
  // d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1, for any x (Siskind & Pearlmutter).
  for (double v : {-2.0, 0.0, 3.5}) {
    auto outer = fx::gradient(
        [](const Tensor& x) {
          Tensor inner =
              fx::gradient([&](const Tensor& y) { return x + y; }, fx::scalar(1, fx::f64));
          return x * inner;
        },
        fx::scalar(v, fx::f64));
    EXPECT_NEAR(outer.item(), 1.0, 1e-14) << "at x = " << v;
  }
  // d/dx [x * d/dy (x * y)] = d/dx [x^2] = 2x: the inner derivative does depend on x.
  auto outer2 = fx::gradient(
      [](const Tensor& x) {
        Tensor inner = fx::gradient([&](const Tensor& y) { return x * y; }, fx::scalar(4, fx::f64));
        return x * inner;
      },
      fx::scalar(1.25, fx::f64));
  EXPECT_NEAR(outer2.item(), 2.5, 1e-14);
}

TEST(Reverse, SecondOrderThroughCompositesByGradcheck) {
  auto x = fx::testing::randn({3, 4}, {.seed = 21});
  auto w = fx::testing::randn({4, 2}, {.seed = 22});
  auto f = [](const Tensor& x, const Tensor& w) {
    return fx::logsumexp(fx::matmul(fx::softplus(x), w), -1) * fx::sum(x * x, 1);
  };
  auto r = fx::testing::gradcheck(f, x, w);
  EXPECT_TRUE(r) << r;
}

// ---- what is and is not recorded

TEST(Reverse, CodeWithoutDifferentiatedInputsRecordsNothing) {
  Tensor a = fx::testing::randn({8, 8}), b = fx::testing::randn({8});
  fx::ad::reset_tape_stats();
  Tensor c = fx::sum(fx::tanh(fx::matmul(a, b)) * 2.0);  // no recording active at all
  EXPECT_EQ(fx::ad::tape_stats().nodes_recorded, 0u);

  uint64_t constant_nodes = 99, total = 0;
  auto g = fx::gradient(
      [&](const Tensor& x) {
        uint64_t before = fx::ad::tape_stats().nodes_recorded;
        Tensor k = fx::exp(fx::matmul(a, b)) + 1.0;  // untracked: plain kernel speed
        constant_nodes = fx::ad::tape_stats().nodes_recorded - before;
        return fx::sum(k * x);  // mul + sum: two nodes
      },
      b);
  total = fx::ad::tape_stats().nodes_recorded;
  EXPECT_EQ(constant_nodes, 0u);
  EXPECT_EQ(total, 2u);
  EXPECT_TRUE(fx::allclose(g, fx::exp(fx::matmul(a, b)) + 1.0));
}

TEST(Reverse, AnExceptionInsideFLeavesNoTapeActive) {
  Tensor x = f64({1, 2});
  // Each throw must end its recording: were one left active, nesting would pass its limit of
  // fx::kMaxTags within these iterations and a later gradient would throw.
  for (int i = 0; i < 3 * fx::kMaxTags; ++i) {
    EXPECT_THROW(fx::gradient(
                     [](const Tensor& x) -> Tensor {
                       Tensor y = fx::tanh(x);
                       throw std::runtime_error("user error");
                       return fx::sum(y);
                     },
                     x),
                 std::runtime_error);
    // An fx::Error from inside f (a shape error), and one from a nested gradient.
    EXPECT_THROW(
        fx::gradient([](const Tensor& x) { return fx::sum(x + fx::zeros({3}, fx::f64)); }, x),
        fx::Error);
    EXPECT_THROW(fx::gradient(
                     [](const Tensor& x) {
                       return fx::gradient([](const Tensor& y) { return y * fx::zeros({5}); }, x);
                     },
                     fx::scalar(1, fx::f64)),
                 fx::Error);
  }
  // Nothing records afterwards, and later gradients (nested too) are right.
  fx::ad::reset_tape_stats();
  (void)fx::exp(x);
  EXPECT_EQ(fx::ad::tape_stats().nodes_recorded, 0u);
  expect_near(fx::gradient([](const Tensor& x) { return fx::sum(x * x); }, x), {2, 4});
  auto d2 = fx::gradient(
      [](const Tensor& x) { return fx::gradient([](const Tensor& y) { return y * y * y; }, x); },
      fx::scalar(2, fx::f64));
  EXPECT_NEAR(d2.item(), 12, 1e-12);
}

}  // namespace
