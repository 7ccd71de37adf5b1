// The shortcuts that keep small ops cheap must not change results: fused first-order pullbacks
// (tanh, sigmoid) agree with the composed rules that run under an outer tape, in-place cotangent
// accumulation never writes into a tensor someone else holds, and borrowed bind arguments leave
// reference counts balanced.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

#include "ad_test_helpers.hpp"

namespace {

using fx::Tensor;
using fx::ad_test::vec;

// The composed pullbacks, evaluated as the primitive table writes them.
Tensor tanh_rule(const Tensor& dy, const Tensor& y) { return dy * (1.0 - y * y); }
Tensor sigmoid_rule(const Tensor& dy, const Tensor& y) { return dy * (y * (1.0 - y)); }

// Same operations in the same order, so equal up to floating-point contraction (a few ulps).
void expect_same(const Tensor& got, const Tensor& want, fx::DType t) {
  const double tol = t == fx::f32 ? 1e-6 : 1e-15;
  EXPECT_TRUE(fx::allclose(got, want, tol, tol)) << got << "\n" << want;
}

TEST(OverheadPaths, FusedPullbacksMatchComposedRules) {
  for (fx::DType t : {fx::f32, fx::f64}) {
    fx::Generator gen(7);
    Tensor x = fx::randn({3, 5}, gen, t), dy = fx::randn({3, 5}, gen, t);
    auto [y1, back1] = fx::pullback([](const Tensor& v) { return fx::tanh(v); }, x);
    expect_same(back1(dy), tanh_rule(dy, y1), t);
    auto [y2, back2] = fx::pullback([](const Tensor& v) { return fx::sigmoid(v); }, x);
    expect_same(back2(dy), sigmoid_rule(dy, y2), t);
    // A strided cotangent (a transposed view) goes through the same kernel.
    Tensor dyt = fx::transpose(fx::randn({5, 3}, gen, t), 0, 1);
    expect_same(back1(dyt), tanh_rule(dyt, y1), t);
  }
}

// square's fused pullback (dy 2x) and logsumexp's (dy exp(x - y), with dy and y broadcast
// back over the reduced axes), on both CPU backends, against the composed rules.
TEST(OverheadPaths, FusedSquareAndLogsumexpPullbacksMatchComposedRules) {
  for (bool reference : {false, true}) {
    fx::testing::BackendScope scope(reference ? fx::testing::Backends::reference
                                              : fx::testing::Backends::all);
    for (fx::DType t : {fx::f32, fx::f64}) {
      SCOPED_TRACE(::testing::Message() << fx::dtype_name(t) << (reference ? ", reference" : ""));
      fx::Generator gen(11);
      Tensor x = fx::randn({6, 300}, gen, t) * 20.0, dy = fx::randn({6, 300}, gen, t);
      auto [s, back_s] = fx::pullback([](const Tensor& v) { return fx::square(v); }, x);
      expect_same(back_s(dy), dy * (x * 2.0), t);
      // sum_squares pulls back through the same kernel, its cotangent broadcast back.
      for (int64_t axis : {0, 1}) {
        auto [q, back_q] = fx::pullback([&](const Tensor& v) { return fx::sum_squares(v, axis); }, x);
        Tensor d = fx::randn(q.shape(), gen, t);
        expect_same(back_q(d), fx::expand(fx::unsqueeze(d, axis), x.shape()) * (x * 2.0), t);
      }
      for (int64_t axis : {0, 1}) {
        auto [y, back] = fx::pullback([&](const Tensor& v) { return fx::logsumexp(v, axis); }, x);
        Tensor d = fx::randn(y.shape(), gen, t);
        Tensor ye = fx::expand(fx::unsqueeze(y, axis), x.shape());
        Tensor de = fx::expand(fx::unsqueeze(d, axis), x.shape());
        expect_same(back(d), de * fx::exp(x - ye), t);
      }
    }
  }
}

// A batched product's two adjoints come from one fused kernel when nothing records: equal to
// the composed rule's two products, on both CPU backends, with a transposed and a broadcast
// right operand (the GMM's x @ Q^T and a shared weight).
TEST(OverheadPaths, FusedMatmulPullbackMatchesComposedRule) {
  for (bool reference : {false, true}) {
    fx::testing::BackendScope scope(reference ? fx::testing::Backends::reference
                                              : fx::testing::Backends::all);
    for (fx::DType t : {fx::f32, fx::f64}) {
      SCOPED_TRACE(::testing::Message() << fx::dtype_name(t) << (reference ? ", reference" : ""));
      const double tol = t == fx::f32 ? 1e-5 : 1e-12;
      fx::Generator gen(5);
      // (4, 400, 10): enough work to split the batches across threads where there are any.
      Tensor a = fx::randn({4, 400, 10}, gen, t), q = fx::randn({4, 10, 10}, gen, t);
      Tensor w = fx::randn({10, 7}, gen, t);
      auto [y, back] = fx::pullback(
          [](const Tensor& x, const Tensor& v) { return fx::matmul(x, fx::transpose(v, 1, 2)); },
          a, q);
      Tensor dy = fx::randn(y.shape(), gen, t);
      auto [da, dq] = back(dy);
      EXPECT_TRUE(fx::allclose(da, fx::matmul(dy, q), tol, tol));
      EXPECT_TRUE(fx::allclose(dq, fx::transpose(fx::matmul(fx::transpose(a, 1, 2), dy), 1, 2),
                               tol, tol));
      auto [y2, back2] =
          fx::pullback([](const Tensor& x, const Tensor& v) { return fx::matmul(x, v); }, a, w);
      Tensor dy2 = fx::randn(y2.shape(), gen, t);
      auto [da2, dw] = back2(dy2);
      EXPECT_TRUE(fx::allclose(da2, fx::matmul(dy2, fx::transpose(w, 0, 1)), tol, tol));
      EXPECT_TRUE(
          fx::allclose(dw, fx::sum(fx::matmul(fx::transpose(a, 1, 2), dy2), {0}), tol, tol));
    }
  }
}

// When the product's cotangent is made inside the backward pass (here by sum_squares' pullback)
// nothing else holds it, and the fused pullback writes dA over it: same adjoints as the composed
// rule, on both backends, for a narrow product (the GMM's D = 10) and a wider one (the
// scratch path); a cotangent the caller holds is never written (the test above reads dy after).
TEST(OverheadPaths, FusedMatmulPullbackInPlaceOverItsOwnCotangent) {
  for (bool reference : {false, true}) {
    fx::testing::BackendScope scope(reference ? fx::testing::Backends::reference
                                              : fx::testing::Backends::all);
    for (fx::DType t : {fx::f32, fx::f64}) {
      for (int64_t d : {10, 20}) {
        SCOPED_TRACE(::testing::Message() << fx::dtype_name(t) << " d " << d
                                          << (reference ? ", reference" : ""));
        const double tol = t == fx::f32 ? 1e-4 : 1e-12;
        fx::Generator gen(9);
        Tensor a = fx::randn({3, 300, d}, gen, t), q = fx::randn({3, d, d}, gen, t);
        Tensor w = fx::randn({3, 300}, gen, t);
        auto f = [&](const Tensor& x, const Tensor& v) {
          return fx::sum(fx::sum_squares(fx::matmul(x, fx::transpose(v, 1, 2)), {2}) * w);
        };
        auto [da, dq] = fx::gradient(f, a, q);
        // The composed rule: dy = 2 w (x v^T), dA = dy v, dV = dy^T x.
        Tensor dy = fx::unsqueeze(w, 2) * (fx::matmul(a, fx::transpose(q, 1, 2)) * 2.0);
        EXPECT_TRUE(fx::allclose(da, fx::matmul(dy, q), tol, tol));
        EXPECT_TRUE(fx::allclose(dq, fx::matmul(fx::transpose(dy, 1, 2), a), tol, tol));
      }
    }
  }
}

TEST(OverheadPaths, SecondOrderThroughFusedRulesStillDifferentiates) {
  // d/dx of (d/dx sum tanh x) = -2 tanh(x) (1 - tanh(x)^2): needs the composed, recorded rule.
  Tensor x = fx::ad_test::f64({-0.7, 0.1, 1.3});
  Tensor h = fx::gradient(
      [](const Tensor& v) {
        return fx::sum(fx::gradient([](const Tensor& w) { return fx::sum(fx::tanh(w)); }, v));
      },
      x);
  std::vector<double> want;
  for (double v : vec(x)) want.push_back(-2 * std::tanh(v) * (1 - std::tanh(v) * std::tanh(v)));
  fx::ad_test::expect_near(h, want, 1e-12);
}

TEST(OverheadPaths, AccumulationLeavesCallerCotangentUntouched) {
  Tensor x = fx::ad_test::f64({1, 2, 3});
  Tensor dy = fx::ad_test::f64({0.5, -1, 2});
  auto [y, back] = fx::pullback([](const Tensor& v) { return v + v + v * 2.0; }, x);
  Tensor g = back(dy);
  EXPECT_EQ(vec(dy), (std::vector<double>{0.5, -1, 2}));
  EXPECT_EQ(vec(g), (std::vector<double>{2, -4, 8}));
  // Calling back again gives the same answer: nothing the tape keeps was written in place.
  EXPECT_EQ(vec(back(dy)), vec(g));
}

TEST(OverheadPaths, BorrowedArgumentsKeepReferenceCountsBalanced) {
  Tensor a = fx::ad_test::f64({1, 2}), b = fx::ad_test::f64({3, 4});
  const int32_t ra = a.impl()->refs.load(), rb = b.impl()->refs.load();
  {
    Tensor c = a * b + fx::tanh(a);
    auto [y, back] = fx::pullback([&](const Tensor& v) { return fx::sum(v * b); }, a);
    (void)back(fx::ones_like(y));
  }
  EXPECT_EQ(a.impl()->refs.load(), ra);
  EXPECT_EQ(b.impl()->refs.load(), rb);
}

}  // namespace
