// fx::custom_rule, fx::non_differentiable and fx::hook: gradients against finite differences
// (f64, to second order) or closed forms, one node per rule on the tape, residuals, calling back
// into AD from a rule, rules outliving their handle, and the errors that name the rule.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <tuple>
#include <vector>

#include <fluxion/ad/custom.hpp>
#include <fluxion/ad/forward.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

#include "ad_test_helpers.hpp"

namespace {

using fx::Tensor;

using fx::ad_test::expect_near;
using fx::ad_test::f64;
using fx::ad_test::vec;

// The header's first example: log(1 + exp(x)) with the derivative sigmoid(x).
auto make_log1pexp() {
  return fx::custom_rule(
      "log1pexp", [](const Tensor& x) { return fx::relu(x) + fx::log1p(fx::exp(-fx::abs(x))); },
      [](const Tensor& x, const Tensor&, const Tensor& dy) { return dy * fx::sigmoid(x); });
}

// ---- custom_rule

TEST(CustomRule, Log1pexpIsStableAndItsGradientIsSigmoid) {
  auto log1pexp = make_log1pexp();
  Tensor x = f64({-800, -3, -0.5, 0, 0.5, 3, 800});
  auto y = vec(log1pexp(x));
  EXPECT_NEAR(y[0], 0, 1e-300);
  EXPECT_NEAR(y[3], std::log(2.0), 1e-15);
  EXPECT_NEAR(y[5], std::log1p(std::exp(3.0)), 1e-14);
  EXPECT_EQ(y[6], 800);  // log(1 + exp(800)) overflows when written naively
  Tensor g = fx::gradient([&](const Tensor& x) { return fx::sum(log1pexp(x)); }, x);
  std::vector<double> want;
  for (double v : vec(x)) want.push_back(1 / (1 + std::exp(-v)));
  expect_near(g, want, 1e-15);
}

TEST(CustomRule, Log1pexpPassesGradcheckToSecondOrder) {
  auto log1pexp = make_log1pexp();
  Tensor x = fx::testing::randn({3, 5}, {.seed = 1}) * 3;
  auto r = fx::testing::gradcheck([&](const Tensor& x) { return log1pexp(x * x) * x; }, x);
  EXPECT_TRUE(r) << r;
}

TEST(CustomRule, IsOneNodeOnTheTapeWhateverItsForwardDoes) {
  auto slow_square = fx::custom_rule(
      "slow_square",
      [](const Tensor& x) {
        Tensor y = x * 0;
        for (int k = 0; k < 20; ++k) y = y + x * x / 20;  // 60 ops the tape must not see
        return y;
      },
      [](const Tensor& x, const Tensor&, const Tensor& dy) { return 2 * dy * x; });
  Tensor x = f64({1, -2, 3});
  auto [y, back] = fx::pullback([&](const Tensor& x) { return slow_square(x); }, x);
  EXPECT_EQ(back.recording().num_nodes(), 1u);
  expect_near(back(fx::ones_like(y)), {2, -4, 6});
}

TEST(CustomRule, DesignDocExampleWithoutAName) {
  auto softclip = fx::custom_rule(
      [](const Tensor& x) { return fx::tanh(x); },  // forward
      [](const Tensor&, const Tensor& y, const Tensor& dy) { return dy * (1 - y * y); });
  EXPECT_STREQ(softclip.name(), "custom_rule");
  auto r = fx::testing::gradcheck([&](const Tensor& x) { return softclip(x); },
                                  fx::testing::randn({6}, {.seed = 11}));
  EXPECT_TRUE(r) << r;
}

TEST(CustomRule, NotRecordingRunsTheForwardOnly) {
  auto log1pexp = make_log1pexp();
  fx::ad::reset_tape_stats();
  expect_near(log1pexp(f64({0})), {std::log(2.0)}, 1e-15);
  EXPECT_EQ(fx::ad::tape_stats().nodes_recorded, 0u);
}

TEST(CustomRule, ResidualsReachThePullbackAndSecondOrderSeesThem) {
  // y = x^3 keeps r = 3 x^2; the pullback reads r only, so the second derivative (6x) must come
  // from an outer tape differentiating r.
  int forward_calls = 0;
  auto cube = fx::custom_rule(
      "cube",
      [&](const Tensor& x) {
        ++forward_calls;
        return std::tuple{x * x * x, 3 * x * x};
      },
      [](const Tensor&, const Tensor&, const Tensor& r, const Tensor& dy) { return dy * r; });
  Tensor x = f64({0.5, -1.5, 2});
  expect_near(fx::gradient([&](const Tensor& x) { return fx::sum(cube(x)); }, x), {0.75, 6.75, 12});
  Tensor h = fx::gradient(
      [&](const Tensor& x) {
        return fx::sum(fx::gradient([&](const Tensor& z) { return fx::sum(cube(z)); }, x));
      },
      x);
  expect_near(h, {3, -9, 12});
  auto r = fx::testing::gradcheck([&](const Tensor& x) { return cube(fx::sin(x)); }, x);
  EXPECT_TRUE(r) << r;
  EXPECT_GT(forward_calls, 0);
}

// Forward mode differentiates the forward code; mixed with reverse mode in either order, the
// Hessian of sum(x^3) through a rule whose pullback reads a residual is diag(6x).
TEST(CustomRule, ForwardModeAndMixedModesThroughARuleWithResiduals) {
  auto cube = fx::custom_rule(
      "cube",
      [](const Tensor& x) {
        return std::tuple{x * x * x, 3 * x * x};
      },
      [](const Tensor&, const Tensor&, const Tensor& r, const Tensor& dy) { return dy * r; });
  Tensor x = f64({0.5, -1.5, 2}), v = f64({1, 2, -1});
  expect_near(fx::jvp([&](const Tensor& x) { return cube(x); }, x, v).second, {0.75, 13.5, -12});
  auto loss = [&](const Tensor& x) { return fx::sum(cube(x)); };
  std::vector<double> want = {3, 0, 0, 0, -9, 0, 0, 0, 12};
  expect_near(fx::hessian(loss, x).reshape({9}), want);          // forward over reverse
  expect_near(fx::hessian_reverse(loss, x).reshape({9}), want);  // reverse over reverse
  // Reverse over forward: d/dx sum(J v) = 6 x v.
  Tensor g = fx::gradient(
      [&](const Tensor& x) {
        return fx::sum(fx::jvp([&](const Tensor& z) { return cube(z); }, x, v).second);
      },
      x);
  expect_near(g, {3, -18, -12});
}

TEST(CustomRule, SeveralInputsAndEveryReturnForm) {
  auto fwd = [](const Tensor& a, const Tensor& b) { return a * b; };
  auto as_tuple = fx::custom_rule(
      "mul_tuple", fwd, [](const Tensor& a, const Tensor& b, const Tensor&, const Tensor& dy) {
        return std::tuple{dy * b, dy * a};
      });
  auto as_pair = fx::custom_rule(
      "mul_pair", fwd, [](const Tensor& a, const Tensor& b, const Tensor&, const Tensor& dy) {
        return std::pair{dy * b, dy * a};
      });
  auto as_array = fx::custom_rule(
      "mul_array", fwd, [](const Tensor& a, const Tensor& b, const Tensor&, const Tensor& dy) {
        return std::array<Tensor, 2>{dy * b, dy * a};
      });
  auto as_vector = fx::custom_rule(
      "mul_vector", fwd, [](const Tensor& a, const Tensor& b, const Tensor&, const Tensor& dy) {
        return std::vector<Tensor>{dy * b, dy * a};
      });
  Tensor a = fx::testing::randn({4}, {.seed = 3}), b = fx::testing::randn({4}, {.seed = 4});
  for (auto* name : {"tuple", "pair", "array", "vector"}) {
    SCOPED_TRACE(name);
    auto f = [&](const Tensor& a, const Tensor& b) {
      std::string n = name;
      Tensor y = n == "tuple"   ? as_tuple(a, b)
                 : n == "pair"  ? as_pair(a, b)
                 : n == "array" ? as_array(a, b)
                                : as_vector(a, b);
      return fx::tanh(y);
    };
    auto r = fx::testing::gradcheck(f, a, b);
    EXPECT_TRUE(r) << r;
  }
}

TEST(CustomRule, AnUndefinedCotangentIsZero) {
  auto first_only = fx::custom_rule(
      "first_only", [](const Tensor& a, const Tensor& b) { return a + b; },
      [](const Tensor&, const Tensor&, const Tensor&, const Tensor& dy) {
        return std::tuple{dy, Tensor()};
      });
  auto [ga, gb] =
      fx::gradient([&](const Tensor& a, const Tensor& b) { return fx::sum(first_only(a, b)); },
                   f64({1, 2}), f64({3, 4}));
  expect_near(ga, {1, 1});
  expect_near(gb, {0, 0});
}

TEST(CustomRule, GenericForwardTakesAnExplicitArity) {
  auto scale = fx::custom_rule<2>(
      "scale", [](const auto& x, const auto& s) { return x * s; },
      [](const auto& x, const auto& s, const auto&, const auto& dy) {
        return std::tuple{dy * s, fx::sum(dy * x)};
      });
  auto r = fx::testing::gradcheck([&](const Tensor& x, const Tensor& s) { return scale(x, s); },
                                  fx::testing::randn({3}, {.seed = 5}), fx::scalar(1.5, fx::f64));
  EXPECT_TRUE(r) << r;
  EXPECT_STREQ(scale.name(), "scale");
}

// The pullback calls back into AD: it differentiates the forward code with fx::pullback (what
// Zygote calls rrule_via_ad), here to clip the cotangent of a function it knows nothing about.
TEST(CustomRule, PullbackMayCallBackIntoAD) {
  auto body = [](const Tensor& x, const Tensor& w) { return fx::tanh(x * w) * w; };
  auto via_ad = fx::custom_rule(
      "via_ad", body, [body](const Tensor& x, const Tensor& w, const Tensor&, const Tensor& dy) {
        auto [y, back] = fx::pullback(body, x, w);
        return back(dy);
      });
  Tensor x = fx::testing::randn({5}, {.seed = 6}), w = fx::testing::randn({5}, {.seed = 7});
  auto [gx, gw] = fx::gradient(
      [&](const Tensor& x, const Tensor& w) { return fx::sum(via_ad(x, w) * x); }, x, w);
  auto [hx, hw] =
      fx::gradient([&](const Tensor& x, const Tensor& w) { return fx::sum(body(x, w) * x); }, x, w);
  expect_near(gx, vec(hx));
  expect_near(gw, vec(hw));
  auto r = fx::testing::gradcheck(
      [&](const Tensor& x, const Tensor& w) { return via_ad(x, w) * x; }, x, w);
  EXPECT_TRUE(r) << r;
}

// The header's second example: x* = g(x*, theta) = 0.5 tanh(x*) + theta. Implicit function
// theorem: dx*/dtheta = 1 / (1 - 0.5 (1 - tanh(x*)^2)).
TEST(CustomRule, ImplicitFixedPointMatchesTheClosedFormAndFiniteDifferences) {
  auto g = [](const Tensor& x, const Tensor& th) { return 0.5 * fx::tanh(x) + th; };
  int adjoint_steps = 0;
  auto fixed_point = fx::custom_rule(
      "fixed_point",
      [g](const Tensor& th) {
        Tensor x = fx::zeros_like(th);
        for (int k = 0; k < 200; ++k) x = g(x, th);
        return x;
      },
      [g, &adjoint_steps](const Tensor& th, const Tensor& x, const Tensor& dy) {
        auto [gx, back] = fx::pullback(g, x, th);
        Tensor u = dy;
        for (int k = 0; k < 200; ++k, ++adjoint_steps) u = dy + std::get<0>(back(u));
        return std::get<1>(back(u));
      });
  Tensor th = f64({-1, 0.2, 2});
  Tensor xs = fixed_point(th);
  expect_near(xs, vec(g(xs, th)), 1e-14);  // it is a fixed point
  Tensor grad = fx::gradient([&](const Tensor& t) { return fx::sum(fixed_point(t)); }, th);
  std::vector<double> want;
  for (double x : vec(xs)) want.push_back(1 / (1 - 0.5 * (1 - std::tanh(x) * std::tanh(x))));
  expect_near(grad, want, 1e-12);
  EXPECT_EQ(adjoint_steps, 200);
  auto r = fx::testing::gradcheck([&](const Tensor& t) { return fixed_point(t); },
                                  fx::testing::GradcheckOptions{.order = 1}, th);
  EXPECT_TRUE(r) << r;
}

TEST(CustomRule, MayBeALocalOfTheDifferentiatedFunction) {
  // The rule's handle is gone when back runs; the tape keeps the rule alive.
  Tensor x = f64({0.3, -2});
  auto [y, back] = fx::pullback(
      [](const Tensor& x) {
        auto local = make_log1pexp();
        return fx::sum(local(x));
      },
      x);
  expect_near(back(fx::ones_like(y)), {1 / (1 + std::exp(-0.3)), 1 / (1 + std::exp(2.0))}, 1e-15);
}

TEST(CustomRule, CapturingAnUntrackedTensorIsFine) {
  Tensor c = f64({2, 3});
  auto scale = fx::custom_rule(
      "scale_by_constant", [c](const Tensor& x) { return x * c; },
      [c](const Tensor&, const Tensor&, const Tensor& dy) { return dy * c; });
  expect_near(fx::gradient([&](const Tensor& x) { return fx::sum(scale(x)); }, f64({1, 1})),
              {2, 3});
}

TEST(CustomRule, CapturingATrackedTensorNamesTheRule) {
  Tensor x0 = f64({1, 2}), w0 = f64({3, 4});
  auto bad = [&] {
    fx::gradient(
        [](const Tensor& x, const Tensor& w) {
          auto leaky = fx::custom_rule(
              "leaky", [&w](const Tensor& x) { return x * w; },  // w is differentiated
              [&w](const Tensor&, const Tensor&, const Tensor& dy) { return dy * w; });
          return fx::sum(leaky(x));
        },
        x0, w0);
  };
  EXPECT_TRUE(fx::testing::throws_mentioning(bad, {"custom_rule 'leaky'",
                                                   "not one of its "
                                                   "arguments",
                                                   "capture"}));
  // Captured into a residual, or when the argument itself is not tracked: same error.
  auto bad_residual = [&] {
    fx::gradient(
        [](const Tensor& w) {
          auto leaky = fx::custom_rule(
              "leaky_residual",
              [&w](const Tensor& x) {
                return std::pair{x * 2, x * w};
              },
              [](const Tensor&, const Tensor&, const Tensor& r, const Tensor& dy) {
                return dy * r;
              });
          return fx::sum(leaky(fx::ones({2}, fx::f64)));
        },
        w0);
  };
  EXPECT_TRUE(fx::testing::throws_mentioning(bad_residual, {"'leaky_residual'", "residual 0"}));
}

TEST(CustomRule, CapturingATrackedTensorIsCaughtInNestedDifferentiation) {
  Tensor x0 = f64({0.5, 1});
  auto bad = [&] {
    fx::gradient(
        [](const Tensor& x) {
          return fx::sum(fx::gradient(
              [&](const Tensor& z) {
                auto leaky = fx::custom_rule(
                    "leaky_inner", [&x](const Tensor& z) { return z * x; },
                    [&x](const Tensor&, const Tensor&, const Tensor& dy) { return dy * x; });
                return fx::sum(leaky(z));
              },
              x * 2));
        },
        x0);
  };
  EXPECT_TRUE(fx::testing::throws_mentioning(bad, {"'leaky_inner'", "not one of its arguments"}));
}

TEST(CustomRule, WrongCotangentShapeOrDtypeNamesTheRuleAndShapes) {
  auto bad_shape = fx::custom_rule(
      "bad_shape", [](const Tensor& x) { return x * 2; },
      [](const Tensor&, const Tensor&, const Tensor& dy) { return fx::sum(dy); });
  auto bad_dtype = fx::custom_rule(
      "bad_dtype", [](const Tensor& x) { return x * 2; },
      [](const Tensor&, const Tensor&, const Tensor& dy) { return fx::astype(dy, fx::f32); });
  auto bad_count = fx::custom_rule(
      "bad_count", [](const Tensor& x) { return x * 2; },
      [](const Tensor&, const Tensor&, const Tensor& dy) {
        return std::vector<Tensor>{dy, dy};
      });
  Tensor x = f64({1, 2, 3});
  auto grad_of = [&](const auto& rule) {
    return [&] { fx::gradient([&](const Tensor& x) { return fx::sum(rule(x)); }, x); };
  };
  EXPECT_TRUE(
      fx::testing::throws_mentioning(grad_of(bad_shape), {"'bad_shape'", "input 0", "()", "(3,)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(grad_of(bad_dtype), {"'bad_dtype'", "f32", "f64"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(grad_of(bad_count),
                                             {"'bad_count'", "2 cotangents for 1 inputs"}));
}

TEST(CustomRule, UndefinedInputOrOutputNamesTheRule) {
  auto rule = make_log1pexp();
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { rule(Tensor()); },
                                             {"'log1pexp'", "input 0", "undefined"}));
  auto none = fx::custom_rule(
      "returns_nothing", [](const Tensor&) { return Tensor(); },
      [](const Tensor&, const Tensor&, const Tensor& dy) { return dy; });
  EXPECT_TRUE(
      fx::testing::throws_mentioning([&] { none(f64({1})); }, {"'returns_nothing'", "undefined"}));
}

// ---- non_differentiable

TEST(NonDifferentiable, ValuesPassGradientsAreZero) {
  auto rounded = fx::non_differentiable([](const Tensor& x) { return fx::sign(x) * x * x; });
  Tensor x = f64({-2, 3});
  expect_near(rounded(x), {-4, 9});
  auto g = fx::gradient([&](const Tensor& x) { return fx::sum(rounded(x) + x); }, x);
  expect_near(g, {1, 1});
  fx::ad::reset_tape_stats();
  auto [y, back] = fx::pullback([&](const Tensor& x) { return rounded(x); }, x);
  EXPECT_EQ(back.recording().num_nodes(), 0u);  // nothing inside was recorded
  expect_near(back(fx::ones_like(y)), {0, 0});
}

TEST(NonDifferentiable, StructuresAndNumbersPassThrough) {
  auto stats = fx::non_differentiable([](const std::pair<Tensor, Tensor>& ab, double s) {
    return std::tuple{fx::sum(ab.first) * s, fx::max(ab.second), s};
  });
  Tensor a = f64({1, 2}), b = f64({3, -1});
  auto g = fx::gradient(
      [&](const Tensor& a) {
        auto [s, m, k] = stats(std::pair{a, a * b}, 2.0);
        return s * m * k + fx::sum(a);
      },
      a);
  expect_near(g, {1, 1});
}

// ---- hook

TEST(Hook, ClipsTheCotangentAndLeavesTheValue) {
  Tensor x = f64({-3, 0.5, 4});
  auto clip = [](const Tensor& dy) { return fx::clamp(dy, -1, 1); };
  auto f = [&](const Tensor& x) { return fx::sum(fx::hook(clip, x * x)); };
  EXPECT_DOUBLE_EQ(f(x).item(), 9 + 0.25 + 16);
  // Here the hook sees the cotangent of x^2, all ones, which clipping leaves: d/dx = 2x.
  expect_near(fx::gradient(f, x), {-6, 1, 8});
  // In sum(u x^2) with u = hook(x), u's cotangent is x^2, clipped to [-1, 1]:
  // d/dx = clip(x^2) + 2 u x = clip(x^2) + 2 x^2.
  auto g = [&](const Tensor& x) { return fx::sum(fx::hook(clip, x) * x * x); };
  expect_near(fx::gradient(g, x), {1 + 18, 0.25 + 0.5, 1 + 32});
}

TEST(Hook, APrintingHookSeesTheCotangentAndPassesItOn) {
  std::vector<double> seen;
  Tensor x = f64({1, 2});
  Tensor g = fx::gradient(
      [&](const Tensor& x) {
        Tensor y = fx::hook([&](const Tensor& dy) { seen = vec(dy); }, fx::tanh(x));
        return fx::sum(y * 3);
      },
      x);
  EXPECT_EQ(seen, (std::vector<double>{3, 3}));
  expect_near(g, {3 * (1 - std::pow(std::tanh(1.0), 2)), 3 * (1 - std::pow(std::tanh(2.0), 2))});
}

TEST(Hook, IsDifferentiatedAgain) {
  // A hook changes the gradient on purpose, so finite differences do not apply. With
  // L = sum(sin(y)), y = hook(h, x), h(d) = d^2, the gradient is h(cos y) = cos^2 y. Its own
  // gradient differentiates h (d^2 -> 2d) and flows back through the hook node again, as every
  // cotangent of y does: d/dy sum(cos^2 y) = -sin 2y, hooked: sin^2 2x.
  auto grad = [](const Tensor& x) {
    return fx::gradient(
        [](const Tensor& x) {
          return fx::sum(fx::sin(fx::hook([](const Tensor& dy) { return dy * dy; }, x)));
        },
        x);
  };
  Tensor x = f64({0.3, -1.2, 2});
  std::vector<double> g1, g2;
  for (double v : vec(x)) {
    g1.push_back(std::cos(v) * std::cos(v));
    g2.push_back(std::sin(2 * v) * std::sin(2 * v));
  }
  expect_near(grad(x), g1, 1e-15);
  expect_near(fx::gradient([&](const Tensor& x) { return fx::sum(grad(x)); }, x), g2, 1e-15);
}

TEST(Hook, UntrackedValueIsReturnedAsIsAndNeverCallsTheHook) {
  bool called = false;
  Tensor x = f64({1});
  Tensor y = fx::hook(
      [&](const Tensor& dy) {
        called = true;
        return dy;
      },
      x);
  EXPECT_TRUE(y.same_storage(x));
  fx::gradient(
      [&](const Tensor& z) {
        return fx::sum(z * fx::hook(
                               [&](const Tensor& d) {
                                 called = true;
                                 return d;
                               },
                               x));
      },
      x);
  EXPECT_FALSE(called);
}

TEST(Hook, WrongCotangentShapeIsAnError) {
  auto bad = [] {
    fx::gradient(
        [](const Tensor& x) {
          return fx::sum(fx::hook([](const Tensor& dy) { return fx::sum(dy); }, x));
        },
        f64({1, 2}));
  };
  EXPECT_TRUE(fx::testing::throws_mentioning(bad, {"fx::hook", "()", "(2,)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] { fx::hook([](const Tensor& d) { return d; }, Tensor()); }, {"fx::hook", "undefined"}));
}

}  // namespace
