// Rows for the reductions (run by primitives_test.cpp) and value checks for what the backend
// comparison cannot see: tie handling and the stable logsumexp.
#include <gtest/gtest.h>

#include <cmath>

#include <fluxion/nn/losses.hpp>

#include "op_rows.hpp"

namespace fx::rows {
namespace {
const std::vector<DType> kNumeric = {f32, f64, i32, i64};
}

std::vector<Row> reduce_rows() {
  auto us = unary_shapes();
  auto nonempty = shapes({{45, 65}, {}, {5, 7, 11}, {1, 3, 1}});
  auto matrices = shapes({{45, 65}, {5, 7, 11}, {1, 3}, {0, 4}});
  const char* ties = "a grid makes ties, where max/min are not differentiable";
  return {
      {"sum", un([](const Tensor& x) { return fx::sum(x); }), {.cases = us, .dtypes = kNumeric}},
      // prefix and suffix axes take the tuned kernel; the others fall back to the reference
      {"sum_axis0",
       un([](const Tensor& x) { return fx::sum(x, 0); }),
       {.cases = matrices, .dtypes = kNumeric}},
      {"sum_last_keepdim",
       un([](const Tensor& x) { return fx::sum(x, -1, true); }),
       {.cases = matrices, .dtypes = kNumeric}},
      {"sum_large",
       un([](const Tensor& x) { return fx::sum(x, -1) + fx::sum(fx::sum(x, 0)); }),
       {.cases = shapes({{300, 150}})}},
      {"sum_middle_axis",
       un([](const Tensor& x) { return fx::sum(x, 1); }),
       {.cases = shapes({{5, 7, 11}, {3, 1, 4}})}},
      {"sum_outer_axes",
       un([](const Tensor& x) {
         return fx::sum(x, {0, -1});
       }),
       {.cases = shapes({{5, 7, 11}, {2, 3, 4, 5}})}},
      {"sum_bool",
       un([](const Tensor& m) { return fx::sum(m, 1); }),
       {.cases = {{In{{45, 65}, Kind::mask}}}, .order = 0, .why = "bool input, i64 output"}},
      // any / all of numbers: a grid puts 0, 1 and 2 in the input, so short rows are sometimes
      // all non-zero; bool inputs, NaN (true) and empty tensors (any false, all true).
      {"any",
       un([](const Tensor& x) { return fx::any(x, -1); }),
       {.cases = shapes({{45, 3}, {5, 7, 2}, {0, 4}, {4, 0}}),
        .range = {0, 1.9},
        .order = 0,
        .why = "bool output",
        .dtypes = kNumeric,
        .grid = 1}},
      {"all",
       un([](const Tensor& x) {
         return fx::all(x, {0, 2}, true);
       }),
       {.cases = shapes({{2, 7, 2}, {3, 4, 1}, {0, 4, 2}}),
        .range = {0, 1.9},
        .order = 0,
        .why = "bool output",
        .dtypes = kNumeric,
        .grid = 1}},
      {"any_all_whole",
       un([](const Tensor& x) {
         return fx::stack({fx::any(x), fx::all(x)});
       }),
       {.cases = shapes({{4}, {2, 3}, {}, {0, 4}, {40000}}),
        .range = {0, 1.9},
        .order = 0,
        .why = "bool output",
        .dtypes = kNumeric,
        .grid = 1}},
      {"any_all_axes",
       un([](const Tensor& x) {
         return fx::concat({fx::any(x, {0}), fx::all(x, {0}), fx::any(x, {1}), fx::all(x, {1})}, 0);
       }),
       {.cases = shapes({{3, 3}, {300, 300}}),
        .range = {0, 1.9},
        .order = 0,
        .why = "bool output",
        .grid = 1}},
      {"any_all_bool",
       un([](const Tensor& m) {
         return fx::stack({fx::any(m, 1), fx::all(m, 1), fx::any(m, 0), fx::all(m, 0)});
       }),
       {.cases = {{In{{3, 3}, Kind::mask}}}, .order = 0, .why = "bool input and output"}},
      {"any_all_of_nan",
       un([](const Tensor& x) {
         Tensor y = with_nonfinite(x);
         return fx::stack({fx::any(fx::isnan(y), 1), fx::all(fx::isfinite(y), 1),
                           fx::any(y == 0.0, 1), fx::all(y, 1)});
       }),
       {.cases = shapes({{45, 4}, {200, 300}}), .order = 0, .why = "bool output"}},
      {"sum_to",
       un([](const Tensor& x) {
         return fx::sum_to(x, {1, x.shape()[2]});
       }),
       {.cases = shapes({{5, 7, 11}, {2, 1, 3}})}},
      {"max",
       un([](const Tensor& x) { return fx::max(x); }),
       {.cases = nonempty, .dtypes = kNumeric}},
      {"max_last_keepdim",
       un([](const Tensor& x) { return fx::max(x, -1, true); }),
       {.cases = shapes({{45, 65}, {5, 7, 11}, {1, 3, 1}}), .dtypes = kNumeric}},
      {"max_ties",
       un([](const Tensor& x) { return fx::max(x, 0); }),
       {.cases = shapes({{6, 9}}), .order = 0, .why = ties, .dtypes = kNumeric, .grid = 1}},
      {"min",
       un([](const Tensor& x) { return fx::min(x); }),
       {.cases = nonempty, .dtypes = kNumeric}},
      {"min_axis0",
       un([](const Tensor& x) { return fx::min(x, 0); }),
       {.cases = shapes({{45, 65}, {5, 7, 11}, {1, 3}}), .dtypes = kNumeric}},
      {"max_middle_axes",
       un([](const Tensor& x) {
         return fx::max(x, {1, 2});
       }),
       {.cases = shapes({{5, 7, 11, 3}, {4, 1, 6, 2}}), .dtypes = kNumeric}},
      // Rows of fewer than 8 elements take the tuned sum's short-row loops.
      {"sum_short_rows",
       un([](const Tensor& x) { return fx::sum(x, {1}); }),
       {.cases = shapes({{3, 50, 2}, {2, 9, 7}, {41, 3}, {2, 3, 5}}), .dtypes = kNumeric}},
      {"sum_short_last_axis",
       un([](const Tensor& x) { return fx::sum(x, {-1}); }),
       {.cases = shapes({{300, 3}, {5, 7}, {4, 1}, {2, 2000, 2}})}},
      // Rows of 8 to 16 elements: fixed-width loops (a sum over the GMM's D = 10, and mu's
      // gradient unbroadcast over the points).
      {"sum_fixed_width_rows",
       un([](const Tensor& x) { return fx::sum(x, {-1}); }),
       {.cases = shapes({{300, 10}, {7, 8}, {3, 5, 16}, {2, 9}}), .dtypes = kNumeric}},
      {"sum_fixed_width_columns",
       un([](const Tensor& x) { return fx::sum(x, {1}); }),
       {.cases = shapes({{3, 50, 10}, {2, 9, 16}, {4, 7, 8}, {2, 3, 13}}), .dtypes = kNumeric}},
      {"max_large",
       un([](const Tensor& x) { return fx::sum(fx::max(x, -1)) + fx::sum(fx::max(x, 0)); }),
       {.cases = shapes({{300, 150}})}},
      {"argmax",
       un([](const Tensor& x) { return fx::argmax(x, -1); }),
       {.cases = shapes({{45, 65}, {5, 7, 11}, {1}, {3, 1}}),
        .order = 0,
        .why = "index output",
        .dtypes = kNumeric}},
      {"argmax_ties",
       un([](const Tensor& x) { return fx::argmax(x, 0, true); }),
       {.cases = shapes({{6, 9}}),
        .order = 0,
        .why = "index output",
        .dtypes = kNumeric,
        .grid = 1}},
      {"argmin",
       un([](const Tensor& x) { return fx::argmin(x, 0, true); }),
       {.cases = shapes({{45, 65}, {5, 7, 11}, {1}}),
        .order = 0,
        .why = "index output",
        .dtypes = kNumeric}},
      // composites
      {"mean", un([](const Tensor& x) { return fx::mean(x); }), {.cases = nonempty}},
      {"mean_axes_keepdim",
       un([](const Tensor& x) {
         return fx::mean(x, {0, -1}, true);
       }),
       {.cases = shapes({{45, 65}, {5, 7, 11}})}},
      {"logsumexp",
       un([](const Tensor& x) { return fx::logsumexp(x, -1); }),
       {.cases = shapes({{45, 65}, {5, 7, 11}, {1, 3, 1}}), .range = {-3, 3}}},
      {"logsumexp_all", un([](const Tensor& x) { return fx::logsumexp(x); }), {.cases = nonempty}},
      // Over a leading axis (the tuned kernel's row-wise path) and over middle axes.
      {"logsumexp_axis0",
       un([](const Tensor& x) { return fx::logsumexp(x, 0); }),
       {.cases = shapes({{7, 300}, {5, 3, 4}, {1, 6}}), .range = {-40, 40}}},
      {"logsumexp_middle_axes",
       un([](const Tensor& x) {
         return fx::logsumexp(x, {1, 2});
       }),
       {.cases = shapes({{3, 4, 5, 2}})}},
      {"logsumexp_extreme",
       un([](const Tensor& x) { return fx::logsumexp(x, 0, true); }),
       {.cases = shapes({{7, 3}}), .range = {500, 600}}},
      // logitcrossentropy with integer labels is one primitive over (N, C) rows: a batch of a
      // few rows, one row, one class, a sequence's 3-d logits, wide logits, and past the CPU
      // kernel's thread threshold (39000 logits).
      {"logitcrossentropy",
       [](const Args& a) { return fx::logitcrossentropy(a[0], a[1]); },
       {.cases = {{In{{37, 10}}, In{{37}, Kind::index, 10}},
                  {In{{1, 3}}, In{{1}, Kind::index, 3}},
                  {In{{6, 1}}, In{{6}, Kind::index, 1}},
                  {In{{2, 3, 4}}, In{{2, 3}, Kind::index, 4}},
                  {In{{300, 130}}, In{{300}, Kind::index, 130}}},
        .range = {-4, 4}}},
      {"logitcrossentropy_i32_wide",
       [](const Args& a) { return fx::logitcrossentropy(a[0], a[1]); },
       {.cases = {{In{{9, 5}}, In{{9}, Kind::index, 5, i32}}}, .range = {-60, 60}}},
      // sum_squares goes through the tuned sum's loops: every path (all axes, short and 8..16
      // wide last axes, short rows under a middle axis, the generic middle and leading axes).
      {"sum_squares", un([](const Tensor& x) { return fx::sum_squares(x); }), {.cases = us}},
      {"sum_squares_last_axis",
       un([](const Tensor& x) { return fx::sum_squares(x, -1); }),
       {.cases = shapes({{300, 10}, {300, 3}, {3, 5, 16}, {45, 65}, {0, 4}})}},
      {"sum_squares_middle_axis",
       un([](const Tensor& x) { return fx::sum_squares(x, 1, true); }),
       {.cases = shapes({{3, 50, 10}, {3, 50, 2}, {5, 7, 30}, {3, 1, 4}})}},
      {"sum_squares_axes",
       un([](const Tensor& x) {
         return fx::sum_squares(x, {0, -1});
       }),
       {.cases = shapes({{5, 7, 11}, {2, 3, 4, 5}})}},
  };
}

}  // namespace fx::rows

namespace {

TEST(Reduce, MaxSharesTheGradientEquallyBetweenTies) {
  auto x = fx::tensor({1, 3, 3, 2, 3, 0}, fx::f64).reshape({2, 3});
  auto g = fx::gradient([](const fx::Tensor& x) { return fx::sum(fx::max(x, 1)); }, x);
  EXPECT_EQ(fx::to_vector<double>(g), (std::vector<double>{0, 0.5, 0.5, 0, 1, 0}));
  auto gmin = fx::gradient([](const fx::Tensor& x) { return fx::min(x); }, x);
  EXPECT_EQ(fx::to_vector<double>(gmin), (std::vector<double>{0, 0, 0, 0, 0, 1}));
}

TEST(Reduce, ArgmaxTakesTheFirstOfEqualValues) {
  auto x = fx::tensor({1, 3, 3, 3, 0, 3}, fx::f32).reshape({2, 3});
  EXPECT_EQ(fx::to_vector<int64_t>(fx::argmax(x, 1)), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(fx::to_vector<int64_t>(fx::argmin(x, 1)), (std::vector<int64_t>{0, 1}));
  auto k = fx::argmax(x, 0, true);
  EXPECT_EQ(k.dtype(), fx::i64);
  EXPECT_EQ(k.shape(), (fx::Shape{1, 3}));
}

TEST(Reduce, NanPropagatesAndArgmaxPointsAtIt) {
  auto x = fx::tensor({1, NAN, 3, NAN, 0, -1}, fx::f32).reshape({2, 3});
  auto m = fx::to_vector<double>(fx::max(x, 1));
  EXPECT_TRUE(std::isnan(m[0]) && std::isnan(m[1]));
  EXPECT_TRUE(std::isnan(fx::min(x).item()));
  EXPECT_EQ(fx::to_vector<int64_t>(fx::argmax(x, 1)), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(fx::to_vector<int64_t>(fx::argmin(x, 1)), (std::vector<int64_t>{1, 0}));
}

TEST(Reduce, LogsumexpIsStableForLargeInputs) {
  auto x = fx::tensor({1000, 1000, -1000}, fx::f64);
  EXPECT_NEAR(fx::logsumexp(x).item(), 1000 + std::log(2.0), 1e-9);
  auto g = fx::gradient([](const fx::Tensor& x) { return fx::logsumexp(x); }, x);
  auto v = fx::to_vector<double>(g);
  EXPECT_NEAR(v[0], 0.5, 1e-12);
  EXPECT_NEAR(v[2], 0.0, 1e-12);
}

TEST(Reduce, LogsumexpOfInfinitiesAndNan) {
  for (bool reference : {false, true}) {
    SCOPED_TRACE(reference ? "reference backend" : "tuned backend");
    fx::testing::BackendScope scope(reference ? fx::testing::Backends::reference
                                              : fx::testing::Backends::all);
    const double inf = INFINITY;
    auto x = fx::tensor({-inf, -inf, inf, 1, NAN, 1, 2, -inf}, fx::f64).reshape({4, 2});
    auto last = fx::to_vector<double>(fx::logsumexp(x, 1));
    EXPECT_EQ(last[0], -inf);
    EXPECT_EQ(last[1], inf);
    EXPECT_TRUE(std::isnan(last[2]));
    EXPECT_EQ(last[3], 2.0);
    auto first = fx::to_vector<double>(fx::logsumexp(fx::transpose(x).contiguous(), 0));
    EXPECT_EQ(first[0], -inf);
    EXPECT_EQ(first[1], inf);
    EXPECT_TRUE(std::isnan(first[2]));
    EXPECT_EQ(first[3], 2.0);
  }
  EXPECT_THROW((void)fx::logsumexp(fx::zeros({0, 3})), fx::Error);
  EXPECT_THROW((void)fx::logsumexp(fx::ones({2}, fx::i64)), fx::Error);
}

// The last-axis kernel takes each row's maximum with two running maxima and a tail: a NaN or
// the largest value at any position, in rows of odd and even length, must be found.
TEST(Reduce, LogsumexpFindsNanAndTheMaximumAtEveryPosition) {
  for (int64_t n : {1, 2, 5, 10}) {
    for (int64_t at = 0; at < n; ++at) {
      SCOPED_TRACE(::testing::Message() << "row of " << n << ", special value at " << at);
      std::vector<float> big(size_t(n), -50.0f), nan(size_t(n), 0.5f);
      big[size_t(at)] = 80.0f;  // exp(80) overflows f32 unless the shift is this maximum
      nan[size_t(at)] = NAN;
      auto rows = fx::stack({fx::from_vector(big), fx::from_vector(nan)});
      auto out = fx::to_vector<float>(fx::logsumexp(rows, 1));
      const double expect = 80.0 + std::log1p((n - 1) * std::exp(-130.0));
      EXPECT_NEAR(out[0], expect, 1e-4);
      EXPECT_TRUE(std::isnan(out[1]));
    }
  }
}

TEST(Reduce, SumSquaresIsTheSumOfSquares) {
  for (fx::DType t : {fx::f32, fx::f64}) {
    fx::Generator gen(3);
    fx::Tensor x = fx::randn({4, 6, 10}, gen, t);
    const double tol = t == fx::f32 ? 1e-5 : 1e-14;
    for (int64_t axis : {0, 1, 2})
      EXPECT_TRUE(fx::allclose(fx::sum_squares(x, axis), fx::sum(fx::square(x), axis), tol, tol));
    EXPECT_TRUE(fx::allclose(fx::sum_squares(x), fx::sum(fx::square(x)), tol, tol));
    EXPECT_EQ(fx::sum_squares(x, {1}, true).shape(), (fx::Shape{4, 1, 10}));
    EXPECT_EQ(fx::sum_squares(x).dtype(), t);
  }
  EXPECT_EQ(fx::sum_squares(fx::zeros({0, 3}, fx::f64)).item(), 0.0);
  EXPECT_EQ(fx::sum_squares(fx::tensor({-3, 4}, fx::f64)).item(), 25.0);
  // Complex tensors are refused (is it z^2 or |z|^2?), pointing at fx::abs for the latter.
  // (The table of bad inputs in errors_test.cpp reads its inputs back as reals.)
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] {
        (void)fx::sum_squares(fx::zeros({2, 3}, fx::c128));
      },
      {"fx::sum_squares", "c128", "(2, 3)", "fx::abs"}));
}

TEST(Reduce, ShapesOfReductions) {
  auto x = fx::zeros({2, 3, 4});
  EXPECT_EQ(fx::sum(x).shape(), fx::Shape{});
  EXPECT_EQ(fx::sum(x, {0, 2}).shape(), (fx::Shape{3}));
  EXPECT_EQ(fx::sum(x, -1, true).shape(), (fx::Shape{2, 3, 1}));
  EXPECT_EQ(fx::mean(x, 1).shape(), (fx::Shape{2, 4}));
  EXPECT_EQ(fx::sum(fx::zeros({0, 3})).item(), 0.0);
  EXPECT_EQ(fx::sum(fx::ones({4, 2}, fx::boolean)).item(), 8.0);
  EXPECT_EQ(fx::sum(fx::ones({4, 2}, fx::boolean)).dtype(), fx::i64);
}

}  // namespace
