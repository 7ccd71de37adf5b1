// Differentiating through mutation: in-place updates, element and slice assignment, and the
// errors that replace wrong gradients when a needed value was overwritten.
#include <gtest/gtest.h>

#include <cmath>
#include <fluxion/ad/forward.hpp>
#include <fluxion/ops/inplace.hpp>
#include <fluxion/testing.hpp>

using fx::Tensor;

TEST(Mutation, InPlaceUpdatesOutsideDifferentiationWriteStorage) {
  Tensor x = fx::tensor({1, 2, 3}, fx::f64);
  Tensor view = fx::slice(x, 0, 1, 3);
  x += 1.0;
  x *= fx::tensor({2, 2, 2}, fx::f64);
  EXPECT_EQ(fx::to_vector<double>(x), (std::vector<double>{4, 6, 8}));
  EXPECT_EQ(fx::to_vector<double>(view), (std::vector<double>{6, 8}));  // views see the write
  view.fill_(0);
  EXPECT_EQ(fx::to_vector<double>(x), (std::vector<double>{4, 0, 0}));
  x.at({1}) = 5.0;
  x.slice_assign(0, 2, 3, fx::tensor({7}, fx::f64));
  EXPECT_EQ(fx::to_vector<double>(x), (std::vector<double>{4, 5, 7}));
  EXPECT_DOUBLE_EQ(Tensor(x.at({-1})).item(), 7.0);
  Tensor m = fx::zeros({2, 3}, fx::f64);
  m.at({1, 2}) = 9.0;
  m.at({0}) = fx::tensor({1, 2, 3}, fx::f64);
  EXPECT_EQ(fx::to_vector<double>(m), (std::vector<double>{1, 2, 3, 0, 0, 9}));
}

TEST(Mutation, PreallocateThenFillInALoopHasTheRightGradient) {
  // Zygote issue #1308: buf = zeros(n); for i: buf[i] = f(x[i]); then use buf.
  auto f = [](const Tensor& x) {
    int64_t n = x.numel();
    Tensor buf = fx::zeros({n}, x.dtype());
    for (int64_t i = 0; i < n; ++i) buf.at({i}) = fx::sin(fx::select(x, 0, i)) * double(i + 1);
    return fx::sum(buf * buf);
  };
  Tensor x = fx::tensor({0.3, -1.1, 0.7, 2.0}, fx::f64);
  auto g = fx::to_vector<double>(fx::gradient(f, x));
  auto xs = fx::to_vector<double>(x);
  for (size_t i = 0; i < xs.size(); ++i) {
    double k = double(i + 1), s = std::sin(xs[i]) * k;
    EXPECT_NEAR(g[i], 2 * s * std::cos(xs[i]) * k, 1e-12);
  }
  EXPECT_TRUE(fx::testing::gradcheck(f, x));
}

TEST(Mutation, AccumulatingUpdatesInALoop) {
  auto f = [](const Tensor& w, const Tensor& x) {
    Tensor acc = fx::zeros({3}, fx::f64), h = fx::zeros({3}, fx::f64);
    for (int t = 0; t < 4; ++t) {
      acc += fx::tanh(fx::matmul(w, h) + x);  // acc's old value is not needed by any pullback
      acc *= 0.9;
      h = acc * 1.0;
    }
    return fx::sum(acc * acc);
  };
  Tensor w = fx::testing::randn({3, 3}, {.seed = 4}) * 0.5,
         x = fx::testing::randn({3}, {.seed = 5});
  auto r = fx::testing::gradcheck(f, w, x);
  EXPECT_TRUE(r) << r;
}

TEST(Mutation, UpdatingAValueAnEarlierOpSavedNamesThatOp) {
  // matmul keeps h for its pullback; h += ... then overwrites it (as in PyTorch, an error).
  auto f = [](const Tensor& w) {
    Tensor h = fx::ones({3}, fx::f64);
    h += fx::tanh(fx::matmul(w, h));
    return fx::sum(h);
  };
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)fx::gradient(f, fx::testing::randn({3, 3}, {.seed = 1}));
      },
      {"'matmul'", "overwritten", "clone"}));
}

TEST(Mutation, SelfReferentialUpdatesSnapshotTheOldValue) {
  auto f = [](const Tensor& x) {
    Tensor y = x * 1.0;  // a fresh tensor, not the caller's storage
    y *= y;              // x^2
    y *= x;              // x^3
    y.copy_(y + fx::sin(x));
    return fx::sum(y);
  };
  Tensor x = fx::tensor({0.5, -2.0}, fx::f64);
  auto g = fx::to_vector<double>(fx::gradient(f, x));
  EXPECT_NEAR(g[0], 3 * 0.25 + std::cos(0.5), 1e-12);
  EXPECT_NEAR(g[1], 3 * 4.0 + std::cos(-2.0), 1e-12);
  EXPECT_TRUE(fx::testing::gradcheck(f, x));
}

TEST(Mutation, SliceAssignGradientsReachBothOperands) {
  auto f = [](const Tensor& a, const Tensor& b) {
    Tensor m = a * 1.0;
    m.slice_assign(1, 1, 3, b * b);  // columns 1..2 replaced; a's gradient there is zero
    return fx::sum(m * fx::arange(0, 8, 1, fx::f64).reshape({2, 4}));
  };
  Tensor a = fx::testing::randn({2, 4}, {.seed = 1}), b = fx::testing::randn({2, 2}, {.seed = 2});
  auto [ga, gb] = fx::gradient(f, a, b);
  auto va = fx::to_vector<double>(ga);
  EXPECT_EQ(va, (std::vector<double>{0, 0, 0, 3, 4, 0, 0, 7}));
  auto vb = fx::to_vector<double>(gb), bv = fx::to_vector<double>(b);
  EXPECT_NEAR(vb[0], 2 * bv[0] * 1, 1e-14);
  EXPECT_NEAR(vb[3], 2 * bv[3] * 6, 1e-14);
  EXPECT_TRUE(fx::testing::gradcheck(f, a, b));
}

TEST(Mutation, OverwritingAValueTheBackwardPassNeedsIsAnError) {
  auto f = [](const Tensor& x) {
    Tensor y = fx::exp(x);  // exp keeps y for its pullback
    y += 1.0;               // ... which this overwrites
    return fx::sum(y);
  };
  Tensor x = fx::tensor({0.1, 0.2}, fx::f64);
  EXPECT_TRUE(
      fx::testing::throws_mentioning([&] { (void)fx::gradient(f, x); }, {"exp", "overwritten"}));
}

TEST(Mutation, WritingThroughAnotherViewOfATrackedValueIsAnError) {
  auto f = [](const Tensor& x) {
    Tensor y = x * 2.0;
    Tensor view = fx::slice(y, 0, 0, 1);
    view.fill_(5.0);        // changes y's data behind y's handle
    return fx::sum(y * y);  // y's recorded value is stale: refuse
  };
  Tensor x = fx::tensor({0.1, 0.2}, fx::f64);
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { (void)fx::gradient(f, x); },
                                             {"overwritten", "another view"}));
}

TEST(Mutation, ExpandedViewsCannotBeWritten) {
  Tensor e = fx::expand(fx::tensor({1.0}), {3});
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { e += 1.0; }, {"operator+=", "expanded"}));
  Tensor x = fx::zeros({2, 2});
  EXPECT_TRUE(
      fx::testing::throws_mentioning([&] { x.at({2}) = 1.0; }, {"at", "index 2", "(2, 2)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { x += fx::zeros({3}); }, {"(3,)", "(2, 2)"}));
}

TEST(Mutation, ForwardModeThroughMutation) {
  auto f = [](const Tensor& x) {
    Tensor y = fx::zeros({2}, x.dtype());
    y.at({0}) = fx::sum(x * x);
    y.at({1}) = fx::sum(fx::sin(x));
    y *= 3.0;
    return y;
  };
  Tensor x = fx::tensor({0.2, 0.4}, fx::f64), v = fx::tensor({1, 0}, fx::f64);
  auto [y, dy] = fx::jvp(f, x, v);
  EXPECT_NEAR(fx::to_vector<double>(dy)[0], 3 * 0.4, 1e-14);
  EXPECT_NEAR(fx::to_vector<double>(dy)[1], 3 * std::cos(0.2), 1e-14);
}
