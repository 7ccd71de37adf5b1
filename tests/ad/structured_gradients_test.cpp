// Gradients of structures hold derivatives, never values: numbers inside differentiated
// structures (tensor and scalar code) get their derivative, integers and strings a zero or an
// empty value; scalar code accepts tuples, pairs, maps, vectors of structs, class templates
// S<T> with FX_FIELDS (closures too); gradients nest in scalar code; scalar reverse jacobian.
#include <gtest/gtest.h>

#include <cmath>
#include <fluxion/fluxion.hpp>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ad_test_helpers.hpp"

namespace {

// A class template with FX_FIELDS: rebound to fx::Real (scalar code) or fx::Tensor (tensor code).
template <class T>
struct Scaled {
  fx::Tensor w;
  T s;
  int calls = 7;
  FX_FIELDS(w, s, calls)
};

// A closure: parameters in FX_FIELDS, a call operator generic in its argument.
template <class T>
struct Quadratic {
  T a, b, c;
  std::string name = "q";
  FX_FIELDS(a, b, c, name)
  template <class X>
  auto operator()(const X& x) const {
    return a * x * x + b * x + c;
  }
};

}  // namespace

TEST(StructuredGradients, NumbersInAVectorGetTheirDerivativeNotTheirValue) {
  fx::Tensor w = fx::ones({2}, fx::f64);
  auto [gw, gv] = fx::gradient([](const fx::Tensor& t, const auto& v) { return fx::sum(t * v[0]); },
                               w, std::vector<double>{5, 7});
  fx::ad_test::expect_near(gw, {5.0, 5.0});
  EXPECT_EQ(gv, (std::vector<double>{2, 0}));  // d/dv0 sum(w) = 2; v1 is unused: 0, not 7
}

TEST(StructuredGradients, ANumberFieldOfAClassTemplateIsTracedInTensorCode) {
  Scaled<double> m{fx::ones({2}, fx::f64), 3.0};
  Scaled<double> g = fx::gradient([](const auto& p) { return fx::sum(p.w * p.s); }, m);
  EXPECT_DOUBLE_EQ(g.s, 2.0);  // sum(w) = 2, not the value 3
  EXPECT_EQ(g.calls, 0);       // an integer field: zero, not 7
  fx::ad_test::expect_near(g.w, {3.0, 3.0});
}

TEST(StructuredGradients, ANumberArgumentOfATensorFunctionGetsItsDerivative) {
  fx::Tensor w = fx::tensor({1.0, 2.0}, fx::f64);
  auto [gw, gs] =
      fx::gradient([](const fx::Tensor& t, const auto& s) { return fx::sum(t * t * s); }, w, 3.0);
  EXPECT_DOUBLE_EQ(gs, 5.0);
  fx::ad_test::expect_near(gw, {6.0, 12.0});
}

TEST(StructuredGradients, ScalarCodeOnTuplesPairsAndMaps) {
  auto f = [](const auto& t) {
    const auto& [a, p, n] = t;
    return a * p.second * double(n) + a * a;
  };
  auto g = fx::gradient(f, std::tuple<double, std::pair<int, double>, int>{2.0, {1, 3.0}, 4});
  EXPECT_DOUBLE_EQ(std::get<0>(g), 3.0 * 4 + 4.0);
  EXPECT_EQ(std::get<1>(g).first, 0);
  EXPECT_DOUBLE_EQ(std::get<1>(g).second, 8.0);
  EXPECT_EQ(std::get<2>(g), 0);

  std::map<std::string, double> m{{"a", 2.0}, {"b", 3.0}, {"unused", 9.0}};
  auto gm = fx::gradient([](const auto& x) { return x.at("a") * exp(x.at("b")); }, m);
  EXPECT_DOUBLE_EQ(gm["a"], std::exp(3.0));
  EXPECT_DOUBLE_EQ(gm["b"], 2.0 * std::exp(3.0));
  EXPECT_DOUBLE_EQ(gm["unused"], 0.0);
}

TEST(StructuredGradients, ScalarCodeOnClassTemplatesClosuresAndVectorsOfThem) {
  Quadratic<double> q{1.5, -2.0, 0.5};
  Quadratic<double> g = fx::gradient([](const auto& p) { return p(3.0); }, q);
  EXPECT_DOUBLE_EQ(g.a, 9.0);
  EXPECT_DOUBLE_EQ(g.b, 3.0);
  EXPECT_DOUBLE_EQ(g.c, 1.0);
  EXPECT_EQ(g.name, "");  // a string is not differentiated: empty, not a copy

  std::vector<Quadratic<double>> qs{q, {0.5, 1.0, 0.0}};
  auto gv = fx::gradient([](const auto& v) { return v[0](1.0) * v[1](2.0); }, qs);
  ASSERT_EQ(gv.size(), 2u);
  const double v0 = 1.5 - 2.0 + 0.5, v1 = 0.5 * 4 + 2.0;
  EXPECT_DOUBLE_EQ(gv[0].a, v1);
  EXPECT_DOUBLE_EQ(gv[0].b, v1);
  EXPECT_DOUBLE_EQ(gv[1].a, 4 * v0);
  EXPECT_DOUBLE_EQ(gv[1].b, 2 * v0);
  EXPECT_DOUBLE_EQ(gv[1].c, v0);
}

TEST(StructuredGradients, NestedStructsAndIntegerArguments) {
  struct Outer {
    Quadratic<double> inner;
  };
  EXPECT_EQ(fx::gradient([](auto x) { return x * 2.0; }, 3), 0);  // an int stays an int: 0
  auto [gx, gn] = fx::gradient([](auto x, auto n) { return x * double(n); }, 1.5, 4);
  EXPECT_DOUBLE_EQ(gx, 4.0);
  EXPECT_EQ(gn, 0);
  std::vector<std::vector<double>> nested{{1, 2}, {3}};
  auto gn2 = fx::gradient([](const auto& v) { return v[0][1] * v[1][0]; }, nested);
  EXPECT_EQ(gn2, (std::vector<std::vector<double>>{{0, 3}, {2}}));
}

TEST(StructuredGradients, ScalarGradientInsideAScalarGradient) {
  // d/dx [x · d/dy (x + y)] = d/dx x = 1: no perturbation confusion.
  EXPECT_DOUBLE_EQ(
      fx::gradient([](auto x) { return x * fx::gradient([&](auto y) { return x + y; }, x); }, 3.0),
      1.0);
  // d/dx [d/dy x y² at y = x] = d/dx 2x² = 4x.
  EXPECT_DOUBLE_EQ(
      fx::gradient([](auto x) { return fx::gradient([&](auto y) { return x * y * y; }, x); }, 3.0),
      12.0);
  // A vector inside: the gradient of ‖v‖² is 2v; the gradient of its sum is 2 everywhere.
  auto g = fx::gradient(
      [](const auto& v) {
        auto inner = fx::gradient([](const auto& u) { return u[0] * u[0] + u[1] * u[1]; }, v);
        return inner[0] + inner[1] * v[0];
      },
      std::vector<double>{1.5, -2.0});
  EXPECT_DOUBLE_EQ(g[0], 2.0 + 2 * -2.0);  // d/dv0 [2 v0 + 2 v1 v0] = 2 + 2 v1
  EXPECT_DOUBLE_EQ(g[1], 2 * 1.5);         // d/dv1 [2 v1 v0] = 2 v0
}

TEST(StructuredGradients, ScalarReverseJacobianMatchesForwardMode) {
  auto f = [](const auto& x) {
    using T = std::decay_t<decltype(x[0])>;
    return std::vector<T>{x[0] * x[1], sin(x[2]) + x[0], x[1] * x[1] * x[2]};
  };
  std::vector<double> x{0.5, -1.5, 2.0};
  auto J = fx::jacobian(f, x);
  auto Jf = fx::jacobian_forward(f, x);
  ASSERT_EQ(J.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 3; ++j) EXPECT_NEAR(J[i][j], Jf[i][j], 1e-14) << i << "," << j;
  EXPECT_DOUBLE_EQ(J[0][0], -1.5);
  EXPECT_DOUBLE_EQ(J[2][1], 2 * -1.5 * 2.0);
}
