// The shortcuts that keep small ops cheap must not change results: fused first-order pullbacks
// (tanh, sigmoid) agree with the composed rules that run under an outer tape, in-place cotangent
// accumulation never writes into a tensor someone else holds, and borrowed bind arguments leave
// reference counts balanced.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

#include "ad_test_helpers.hpp"

namespace {

using fx::Tensor;
using fx::ad_test::vec;

// Runs body(dtype) for f32 and f64 on the tuned CPU kernels and on the reference ones, with the
// dtype and the backend in every failure message.
template <class Body>
void on_cpu_backends_and_dtypes(Body body) {
  for (bool reference : {false, true}) {
    fx::testing::BackendScope scope(reference ? fx::testing::Backends::reference
                                              : fx::testing::Backends::all);
    for (fx::DType t : {fx::f32, fx::f64}) {
      SCOPED_TRACE(::testing::Message() << fx::dtype_name(t) << (reference ? ", reference" : ""));
      body(t);
    }
  }
}

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
  on_cpu_backends_and_dtypes([](fx::DType t) {
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
    // A classifier's rows (a batch of rows per exp call), on one thread and, from 2^15
    // elements, split across the team.
    for (int64_t rows : {300, 4000}) {
      Tensor z = fx::randn({rows, 10}, gen, t) * 5.0;
      auto [y, back] = fx::pullback([](const Tensor& v) { return fx::logsumexp(v, 1); }, z);
      Tensor d = fx::randn(y.shape(), gen, t);
      Tensor ye = fx::expand(fx::unsqueeze(y, 1), z.shape());
      Tensor de = fx::expand(fx::unsqueeze(d, 1), z.shape());
      expect_same(back(d), de * fx::exp(z - ye), t);
    }
  });
}

// A batched product's two adjoints come from one fused kernel when nothing records: equal to
// the composed rule's two products, on both CPU backends, with a transposed and a broadcast
// right operand (the GMM's x @ Q^T and a shared weight).
TEST(OverheadPaths, FusedMatmulPullbackMatchesComposedRule) {
  on_cpu_backends_and_dtypes([](fx::DType t) {
    const double tol = t == fx::f32 ? 1e-5 : 1e-12;
    fx::Generator gen(5);
    // (4, 400, 10): enough work to split the batches across threads where there are any.
    Tensor a = fx::randn({4, 400, 10}, gen, t), q = fx::randn({4, 10, 10}, gen, t);
    Tensor w = fx::randn({10, 7}, gen, t);
    auto [y, back] = fx::pullback(
        [](const Tensor& x, const Tensor& v) { return fx::matmul(x, fx::transpose(v, 1, 2)); }, a,
        q);
    Tensor dy = fx::randn(y.shape(), gen, t);
    auto [da, dq] = back(dy);
    EXPECT_TRUE(fx::allclose(da, fx::matmul(dy, q), tol, tol));
    EXPECT_TRUE(
        fx::allclose(dq, fx::transpose(fx::matmul(fx::transpose(a, 1, 2), dy), 1, 2), tol, tol));
    auto [y2, back2] =
        fx::pullback([](const Tensor& x, const Tensor& v) { return fx::matmul(x, v); }, a, w);
    Tensor dy2 = fx::randn(y2.shape(), gen, t);
    auto [da2, dw] = back2(dy2);
    EXPECT_TRUE(fx::allclose(da2, fx::matmul(dy2, fx::transpose(w, 0, 1)), tol, tol));
    EXPECT_TRUE(fx::allclose(dw, fx::sum(fx::matmul(fx::transpose(a, 1, 2), dy2), {0}), tol, tol));
  });
}

// A product's two cotangents from one kernel (dense operands), and a tiny 2-d matmul's two
// adjoints from one kernel, on both CPU backends: equal to the composed rules. A transposed
// (non-dense) operand takes the composed rule and must agree too.
TEST(OverheadPaths, FusedMulAndTinyMatmulPullbacksMatchComposedRules) {
  on_cpu_backends_and_dtypes([](fx::DType t) {
    const double tol = t == fx::f32 ? 1e-5 : 1e-13;
    fx::Generator gen(3);
    Tensor a = fx::randn({3, 5}, gen, t), b = fx::randn({3, 5}, gen, t);
    Tensor bt = fx::transpose(fx::randn({5, 3}, gen, t), 0, 1);
    Tensor dy = fx::randn({3, 5}, gen, t);
    auto mul = [](const Tensor& x, const Tensor& y) { return x * y; };
    for (const Tensor& rhs : {b, bt}) {
      auto [y, back] = fx::pullback(mul, a, rhs);
      auto [da, db] = back(dy);
      EXPECT_TRUE(fx::allclose(da, dy * rhs, tol, tol));
      EXPECT_TRUE(fx::allclose(db, dy * a, tol, tol));
      auto [da2, db2] = back(dy);  // the tape's saved inputs were not written
      EXPECT_TRUE(fx::allclose(da2, da, 0, 0) && fx::allclose(db2, db, 0, 0));
    }
    // 3x4 @ 4x6 (m n k = 72): the fused kernel's plain loops, plain and transposed right
    // operand (the latter is x @ W^T, a layer's product).
    Tensor x = fx::randn({3, 4}, gen, t), w = fx::randn({4, 6}, gen, t);
    Tensor wt = fx::transpose(fx::randn({6, 4}, gen, t), 0, 1);
    Tensor g = fx::randn({3, 6}, gen, t);
    for (const Tensor& rhs : {w, wt}) {
      auto [y, back] =
          fx::pullback([](const Tensor& u, const Tensor& v) { return fx::matmul(u, v); }, x, rhs);
      auto [dx, dw] = back(g);
      EXPECT_TRUE(fx::allclose(dx, fx::matmul(g, fx::transpose(rhs, 0, 1)), tol, tol));
      EXPECT_TRUE(fx::allclose(dw, fx::matmul(fx::transpose(x, 0, 1), g), tol, tol));
    }
  });
}

// When the product's cotangent is made inside the backward pass (here by sum_squares' pullback)
// nothing else holds it, and the fused pullback writes dA over it: same adjoints as the composed
// rule, on both backends, for a narrow product (the GMM's D = 10) and a wider one (the
// scratch path); a cotangent the caller holds is never written (the test above reads dy after).
TEST(OverheadPaths, FusedMatmulPullbackInPlaceOverItsOwnCotangent) {
  on_cpu_backends_and_dtypes([](fx::DType t) {
    for (int64_t d : {10, 20}) {
      SCOPED_TRACE(::testing::Message() << "d " << d);
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
  });
}

// A sweep that runs once (fx::gradient, std::move(back)(dy)) drops what each pullback read and
// lets sum_squares write dy 2x over its saved input: the gradients equal a repeatable sweep's,
// a value the caller still holds is never overwritten, and sweeping the recording again is an
// fx::Error that says why.
TEST(OverheadPaths, SweepThatRunsOnceReusesSavedInputsOnlyTheTapeHolds) {
  on_cpu_backends_and_dtypes([](fx::DType t) {
    const double tol = t == fx::f32 ? 1e-5 : 1e-13;
    fx::Generator gen(17);
    Tensor x = fx::randn({5, 40, 3}, gen, t), w = fx::randn({5, 40}, gen, t);
    Tensor kept;  // the caller keeps one intermediate: that one must survive the sweep
    auto f = [&](const Tensor& v) {
      Tensor inner = fx::tanh(v) * 2.0;  // only the tape holds it once f returns
      kept = fx::exp(v * 0.5);
      return fx::sum(fx::sum_squares(inner, {2}) * w) + fx::sum(fx::sum_squares(kept));
    };
    auto [y, back] = fx::pullback(f, x);
    Tensor kept_copy = kept.clone();
    Tensor repeatable = back(fx::ones_like(y));
    Tensor once = std::move(back)(fx::ones_like(y));
    EXPECT_TRUE(fx::allclose(once, repeatable, tol, tol));
    EXPECT_TRUE(fx::allclose(kept, kept_copy, 0, 0));
    Tensor th = fx::tanh(x);
    Tensor want = fx::unsqueeze(w, 2) * (th * 8.0) * (1.0 - th * th) + kept * kept;
    EXPECT_TRUE(fx::allclose(once, want, tol, tol));
    EXPECT_TRUE(fx::allclose(fx::gradient(f, x), want, tol, tol));
  });
  auto rec = fx::ad::Recording::begin();
  Tensor v = rec.track(fx::ad_test::f64({1, 2}));
  Tensor y = fx::sum_squares(v * 3.0);
  rec.end();
  EXPECT_EQ(vec(rec.backward_once(y, fx::ones_like(y))[0]), (std::vector<double>{18, 36}));
  try {
    (void)rec.backward(y, fx::ones_like(y));
    ADD_FAILURE() << "a second sweep after backward_once did not throw";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("already swept by backward_once"), std::string::npos)
        << e.what();
  }
}

// Later slices of one tensor add their cotangents into the running sum in place (the LSTM's
// four gates): gradients equal the closed form for disjoint, overlapping and strided slices,
// and a second backward pass over the same tape gives the same answer.
TEST(OverheadPaths, SliceCotangentsAccumulateIntoTheRunningSum) {
  Tensor x = fx::ad_test::f64({0.5, -1, 2, 3, -0.25, 1.5, 4, -2});
  auto f = [](const Tensor& v) {
    Tensor a = fx::slice(v, 0, 0, 4), b = fx::slice(v, 0, 4, 8);  // disjoint halves
    Tensor c = fx::slice(v, 0, 2, 6);                             // overlaps both
    Tensor d = fx::slice(v, 0, 1, 8, 3);                          // strided: 1, 4, 7
    return fx::sum(a * a) + fx::sum(b * 3.0) + fx::sum(fx::exp(c)) + fx::sum(d * d * d);
  };
  auto [y, back] = fx::pullback(f, x);
  Tensor one = fx::ones_like(y);
  Tensor g = back(one);
  std::vector<double> xv = vec(x), want(8, 0.0);
  for (int i = 0; i < 4; ++i) want[i] += 2 * xv[i];
  for (int i = 4; i < 8; ++i) want[i] += 3;
  for (int i = 2; i < 6; ++i) want[i] += std::exp(xv[i]);
  for (int i : {1, 4, 7}) want[i] += 3 * xv[i] * xv[i];
  fx::ad_test::expect_near(g, want, 1e-12);
  EXPECT_EQ(vec(back(one)), vec(g));
  auto r = fx::testing::gradcheck(f, x);
  EXPECT_TRUE(r) << r;
}

// A cotangent made inside the backward pass is overwritten by the next fused rule's result
// (square, tanh, sigmoid in a chain): the gradient equals the closed form on both backends; a
// cotangent the caller passes is never written, and a second pass gives the same answer.
TEST(OverheadPaths, FusedPullbacksWriteOverTheirOwnCotangent) {
  on_cpu_backends_and_dtypes([](fx::DType t) {
    const double tol = t == fx::f32 ? 1e-5 : 1e-13;
    fx::Generator gen(13);
    Tensor x = fx::randn({4, 300}, gen, t);
    auto chain = [](const Tensor& v) { return fx::sigmoid(fx::tanh(fx::square(v))); };
    Tensor th = fx::tanh(fx::square(x)), s = fx::sigmoid(th);
    Tensor local = s * (1.0 - s) * (1.0 - th * th) * (x * 2.0);  // d chain / dx, elementwise
    Tensor g = fx::gradient([&](const Tensor& v) { return fx::sum(chain(v) * 3.0); }, x);
    EXPECT_TRUE(fx::allclose(g, local * 3.0, tol, tol));
    auto [y, back] = fx::pullback(chain, x);
    Tensor dy = fx::randn(y.shape(), gen, t), dy_copy = dy.clone();
    Tensor g1 = back(dy), g2 = back(dy);
    EXPECT_TRUE(fx::allclose(dy, dy_copy, 0, 0));
    EXPECT_TRUE(fx::allclose(g1, dy * local, tol, tol));
    EXPECT_TRUE(fx::allclose(g2, g1, 0, 0));
  });
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
