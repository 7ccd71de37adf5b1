// The control-flow and rule constructs (fx::checkpointed, fx::cond, fx::scan, fx::custom_rule)
// under every transformation and pairs of them: vmap, trace, reverse and forward mode, both
// orders of vmap and gradient, traced gradients and jvps, second order both ways. Values against
// the eager loop over examples; derivatives against central differences (f64).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fluxion/fluxion.hpp>
#include <fluxion/testing.hpp>

namespace {

using fx::Tensor;
using Fn = std::function<Tensor(const Tensor&)>;

struct Construct {
  std::string name;
  Fn f;  // (4,) -> (4,)
};

std::vector<Construct> constructs() {
  const Tensor w = fx::testing::randn({4, 4}, {.seed = 7}) * 0.5;
  auto segment = [](const Tensor& w, const Tensor& h) {
    Tensor r = h;
    for (int i = 0; i < 5; ++i) r = fx::tanh(fx::matmul(w, r)) + r;
    return r;
  };
  auto softplus = fx::custom_rule(
      "softplus", [](const Tensor& x) { return fx::log1p(fx::exp(x)); },
      [](const Tensor& x, const Tensor&, const Tensor& dy) { return dy * fx::sigmoid(x); });
  const Tensor rows = fx::reshape(fx::arange(0.0, 12.0, 1.0, fx::f64), {3, 4}) * 0.1;
  return {
      {"checkpointed",
       [=](const Tensor& h) {
         return fx::checkpointed(segment, w, fx::checkpointed(segment, w, h));
       }},
      {"cond",
       [](const Tensor& h) {
         return fx::cond(
             fx::sum(h) > fx::scalar(0.0), [](const Tensor& v) { return v * v; },
             [](const Tensor& v) { return fx::sin(v); }, h);
       }},
      {"scan",
       [=](const Tensor& h) {
         auto step = [&](const Tensor& c, const Tensor& row) {
           Tensor next = fx::tanh(c * row + fx::matmul(w, c));
           return std::pair{next, next};
         };
         return fx::scan(step, h, rows).first;
       }},
      {"custom_rule", [=](const Tensor& h) { return softplus(fx::matmul(w, h)); }},
  };
}

Tensor central_difference(const Fn& f, const Tensor& x, const Tensor& v) {
  const double h = 1e-6;
  return (f(x + h * v) - f(x - h * v)) / (2 * h);
}

class Compose : public ::testing::TestWithParam<size_t> {
 protected:
  Construct c = constructs()[GetParam()];
  // Three examples; the first two sum to a positive and a negative value (both cond branches).
  Tensor xs = fx::testing::randn({3, 4}, {.seed = 1}) +
              fx::reshape(fx::tensor({1.0, -1.0, 0.0}, fx::f64), {3, 1});
  Tensor v = fx::testing::randn({4}, {.seed = 2});
  Fn loss = [this](const Tensor& x) { return fx::sum(fx::sin(c.f(x))); };
  Fn grad = [this](const Tensor& x) { return fx::gradient(loss, x); };
  Tensor x(int64_t b) const { return fx::select(xs, 0, b); }
};

TEST_P(Compose, VmapAndTraceEqualTheLoop) {
  const Tensor ys = fx::vmap(c.f)(xs);
  const fx::Graph g = fx::trace(c.f, x(0));
  const Tensor traced_vmap = fx::trace(fx::vmap(c.f), xs)(xs)[0];
  for (int64_t b = 0; b < 3; ++b) {
    EXPECT_TRUE(fx::allclose(fx::select(ys, 0, b), c.f(x(b)), 1e-12, 1e-12)) << b;
    EXPECT_TRUE(fx::allclose(g(x(b))[0], c.f(x(b)), 1e-12, 1e-12)) << b;
    EXPECT_TRUE(fx::allclose(fx::select(traced_vmap, 0, b), c.f(x(b)), 1e-12, 1e-12)) << b;
  }
}

TEST_P(Compose, GradientsInsideAndAroundVmapAndTrace) {
  const Tensor per_example = fx::vmap(grad)(xs);
  const Tensor of_vmap =
      fx::gradient([&](const Tensor& t) { return fx::sum(fx::sin(fx::vmap(c.f)(t))); }, xs);
  const fx::Graph traced = fx::trace(grad, x(0));
  for (int64_t b = 0; b < 3; ++b) {
    const Tensor want = grad(x(b));
    EXPECT_TRUE(fx::allclose(fx::select(per_example, 0, b), want, 1e-10, 1e-12)) << b;
    EXPECT_TRUE(fx::allclose(fx::select(of_vmap, 0, b), want, 1e-10, 1e-12)) << b;
    EXPECT_TRUE(fx::allclose(traced(x(b))[0], want, 1e-10, 1e-12)) << b;
    EXPECT_NEAR(fx::sum(want * v).item<double>(), central_difference(loss, x(b), v).item<double>(),
                1e-6)
        << b;
  }
}

TEST_P(Compose, ForwardModeAndSecondOrder) {
  auto tangent = [&](const Tensor& t) { return fx::jvp(c.f, t, v).second; };
  const Tensor batched = fx::vmap(tangent)(xs);
  const fx::Graph traced = fx::trace(tangent, x(0));
  for (int64_t b = 0; b < 3; ++b) {
    EXPECT_TRUE(fx::allclose(tangent(x(b)), central_difference(c.f, x(b), v), 1e-6, 1e-7)) << b;
    EXPECT_TRUE(fx::allclose(fx::select(batched, 0, b), tangent(x(b)), 1e-10, 1e-12)) << b;
    EXPECT_TRUE(fx::allclose(traced(x(b))[0], tangent(x(b)), 1e-10, 1e-12)) << b;
    const Tensor hv = central_difference(grad, x(b), v);
    EXPECT_TRUE(fx::allclose(fx::jvp(grad, x(b), v).second, hv, 1e-6, 1e-7)) << b;
    EXPECT_TRUE(fx::allclose(
        fx::gradient([&](const Tensor& t) { return fx::sum(grad(t) * v); }, x(b)), hv, 1e-6, 1e-7))
        << b;
    EXPECT_TRUE(fx::allclose(fx::matmul(fx::hessian(loss, x(b)), v), hv, 1e-6, 1e-7)) << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Constructs, Compose, ::testing::Range(size_t(0), constructs().size()),
                         [](const auto& info) { return constructs()[info.param].name; });

TEST(ComposeCheckpoint, UnderAGradientOfVmapTheTapeHoldsOneNode) {
  // The tape below the vmap records the checkpoint, not the function's operations.
  const Tensor w = fx::testing::randn({4, 4}, {.seed = 7}) * 0.5;
  auto segment = [](const Tensor& w, const Tensor& h) {
    Tensor r = h;
    for (int i = 0; i < 10; ++i) r = fx::tanh(fx::matmul(w, r)) + r;
    return r;
  };
  const Tensor xs = fx::testing::randn({3, 4}, {.seed = 1});
  auto recorded = [&](const Fn& f) {
    fx::ad::reset_tape_stats();
    auto out = fx::pullback([&](const Tensor& t) { return fx::sum(fx::vmap(f)(t)); }, xs);
    return fx::ad::tape_stats().nodes_recorded;
  };
  const auto plain = recorded([&](const Tensor& h) { return segment(w, h); });
  const auto checkpointed =
      recorded([&](const Tensor& h) { return fx::checkpointed(segment, w, h); });
  EXPECT_GE(plain, 30u);
  EXPECT_LE(checkpointed, 3u);
}

TEST(ComposeTrace, AGraphKeepsTheRulesMadeWhileTracingAlive) {
  // The rule and the checkpoint are made inside the traced function and gone when it returns;
  // the graph's equations point into them (AddressSanitizer checks the run below).
  auto f = [](const Tensor& x) {
    auto square = fx::custom_rule(
        "square", [](const Tensor& t) { return t * t; },
        [](const Tensor& t, const Tensor&, const Tensor& dy) { return 2 * t * dy; });
    auto twice = [](const Tensor& t) { return fx::sin(t) * 2; };
    return fx::checkpointed(twice, square(x));
  };
  const Tensor x = fx::testing::randn({5}, {.seed = 3});
  auto grad = [&](const Tensor& t) {
    return fx::gradient([&](const Tensor& u) { return fx::sum(f(u)); }, t);
  };
  const fx::Graph g = fx::trace(f, x), gg = fx::trace(grad, x);
  EXPECT_FALSE(gg.owners.empty());  // (with no tape, both run their forward inline)
  const Tensor x2 = fx::testing::randn({5}, {.seed = 4});
  EXPECT_TRUE(fx::allclose(g(x2)[0], f(x2), 1e-12, 1e-12));
  EXPECT_TRUE(fx::allclose(gg(x2)[0], grad(x2), 1e-12, 1e-12));
}

}  // namespace
