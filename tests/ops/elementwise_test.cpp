// Rows for the elementwise primitives and their composites (run by primitives_test.cpp), and
// a few value checks the backend comparison cannot make (both backends share fx::math).
#include <gtest/gtest.h>

#include <cmath>

#include "op_rows.hpp"

namespace fx::rows {
namespace {
const std::vector<DType> kNumeric = {f32, f64, i32, i64};
}

std::vector<Row> elementwise_rows() {
  auto us = unary_shapes();
  auto bs = binary_shapes();
  auto large = shapes({{300, 150}, {40000}});
  const Opts compare = {.cases = bs,
                        .range = {-1, 1},
                        .order = 0,
                        .why = "bool output",
                        .dtypes = kNumeric,
                        .grid = 0.5};
  std::vector<Row> rows = {
      // ---- unary primitives (the math functions' rows come from their table, below)
      {"neg", un(fx::neg), {.cases = us, .dtypes = kNumeric}},
      {"tanh_extreme", un(fx::tanh), {.cases = shapes({{64}}), .range = {300, 303}}},
      {"tanh_extreme_negative", un(fx::tanh), {.cases = shapes({{64}}), .range = {-303, -300}}},
      // Past the tuned kernels' threading threshold: many rows, and one long row split by threads.
      {"tanh_large", un(fx::tanh), {.cases = large}},
      {"sigmoid_extreme", un(fx::sigmoid), {.cases = shapes({{64}}), .range = {-800, 800}}},
      // The SIMD polynomials' range edges: overflow to inf, NaN for log of negatives, huge sin
      // arguments, log1p of negatives (the tuned kernels fall back to <cmath> per vector).
      {"exp_overflow",
       un(fx::exp),
       {.cases = shapes({{45, 65}}), .range = {80, 720}, .order = 0, .why = "inf outputs"}},
      {"log_edges",
       un(fx::log),
       {.cases = shapes({{45, 65}}), .range = {-1, 1}, .order = 0, .why = "NaN outputs"}},
      {"log1p_negative", un(fx::log1p), {.cases = shapes({{45, 65}}), .range = {-0.99, 0}}},
      {"sin_huge",
       un(fx::sin),
       {.cases = shapes({{45, 65}}), .range = {3e4, 5e4}, .order = 0, .why = "ill-conditioned"}},
      {"cos_large", un(fx::cos), {.cases = large, .range = {-40, 40}}},
      {"exp_large", un(fx::exp), {.cases = large, .range = {-5, 5}}},
      // relu, abs: kinks at 0, which the seeded random inputs do not come near.
      {"relu", un(fx::relu), {.cases = us, .dtypes = kNumeric}},
      {"abs", un(fx::abs), {.cases = us, .dtypes = kNumeric}},
      // sign has no pullback: gradcheck asserts its derivative is zero (to second order).
      {"sign", un(fx::sign), {.cases = us, .dtypes = kNumeric}},
      {"sign_ties",
       un(fx::sign),
       {.cases = shapes({{9, 13}}),
        .order = 0,
        .why = "a grid puts inputs on 0, where sign jumps",
        .dtypes = kNumeric,
        .grid = 1}},

      // ---- with a number
      {"add_scalar",
       un([](const Tensor& x) { return x + 0.75; }),
       {.cases = us, .dtypes = kNumeric}},
      {"mul_scalar",
       un([](const Tensor& x) { return x * -1.5; }),
       {.cases = us, .dtypes = kNumeric}},
      {"pow_scalar",
       un([](const Tensor& x) { return fx::pow(x, 2.5); }),
       {.cases = us, .range = {0.2, 3}}},
      {"pow_scalar_integer_exponent",
       un([](const Tensor& x) { return fx::pow(x, 3.0); }),
       {.cases = us}},
      {"pow_scalar_zero_exponent",
       un([](const Tensor& x) { return fx::pow(x, 0.0); }),
       {.cases = us}},

      // ---- binary, with broadcasting cases
      {"add", bin(fx::add), {.cases = bs, .dtypes = kNumeric}},
      {"sub", bin(fx::sub), {.cases = bs, .dtypes = kNumeric}},
      {"mul", bin(fx::mul), {.cases = bs, .dtypes = kNumeric}},
      {"add_large",
       bin(fx::add),
       {.cases = pairs({{{300, 150}, {150}}, {{40000}, {40000}}, {{300, 1}, {1, 150}}}),
        .dtypes = kNumeric}},
      // Broadcasting over a short last axis: the tuned loops move a longer axis innermost.
      {"sub_short_rows",
       bin(fx::sub),
       {.cases = pairs({{{6, 40, 2}, {6, 1, 2}}, {{40, 3}, {5, 1, 3}}, {{9, 1}, {7, 9, 4}}}),
        .dtypes = kNumeric}},
      // Rows of 5 to 15 broadcast elements: the tuned loops run a column of rows per call.
      {"mul_short_rows",
       bin(fx::mul),
       {.cases =
            pairs({{{6, 40, 10}, {6, 40, 1}}, {{6, 40, 1}, {6, 40, 10}}, {{40, 7}, {5, 1, 7}}}),
        .dtypes = kNumeric}},
      // A row repeated down a column of short rows (the GMM's x - mu, (N, D) - (K, 1, D)): the
      // tuned loops lay the row out in whole periods and run flat.
      {"add_repeated_short_row",
       bin(fx::add),
       {.cases = pairs({{{40, 10}, {6, 1, 10}}, {{6, 1, 7}, {50, 7}}, {{3, 300, 11}, {3, 1, 11}}}),
        .dtypes = kNumeric}},
      {"div", bin(fx::div), {.cases = bs, .ranges = {{-2, 2}, {0.5, 2}}}},
      {"div_negative_divisor",
       bin(fx::div),
       {.cases = pairs({{{6, 5}, {6, 5}}}), .ranges = {{-2, 2}, {-2, -0.5}}}},
      {"pow",
       bin([](const Tensor& a, const Tensor& b) { return fx::pow(a, b); }),
       {.cases = bs, .ranges = {{0.3, 2}, {-2, 2}}}},
      {"maximum", bin(fx::maximum), {.cases = bs, .dtypes = kNumeric}},
      {"minimum", bin(fx::minimum), {.cases = bs, .dtypes = kNumeric}},
      {"maximum_ties",
       bin(fx::maximum),
       {.cases = pairs({{{8, 9}, {8, 9}}}),
        .order = 0,
        .why = "ties are not differentiable",
        .dtypes = kNumeric,
        .grid = 1}},

      // ---- comparisons: bool outputs, not differentiable; a grid makes ties common
      {"eq", bin(fx::eq), compare},
      {"ne", bin(fx::ne), compare},
      {"lt", bin(fx::lt), compare},
      {"le", bin(fx::le), compare},
      {"gt", bin(fx::gt), compare},
      {"ge", bin(fx::ge), compare},

      // ---- selection and conversion
      {"where",
       [](const Args& a) { return fx::where(a[0], a[1], a[2]); },
       {.cases = {{In{{45, 65}, Kind::mask}, In{{45, 65}}, In{{45, 65}}},
                  {In{{}, Kind::mask}, In{{}}, In{{}}},
                  {In{{4, 1}, Kind::mask}, In{{3}}, In{{4, 3}}},
                  {In{{5, 7, 11}, Kind::mask}, In{{7, 1}}, In{{}}},
                  {In{{3}, Kind::mask}, In{{2, 1}}, In{{1, 3}}}},
        .dtypes = kNumeric}},
      {"where_large",
       [](const Args& a) { return fx::where(a[0], a[1], a[2]); },
       {.cases = {{In{{300, 150}, Kind::mask}, In{{300, 150}}, In{{150}}},
                  {In{{40000}, Kind::mask}, In{{40000}}, In{{40000}}}}}},
      {"where_number",
       [](const Args& a) { return fx::where(a[0], a[1], -0.5) + fx::where(a[0], 2.0, a[1]); },
       {.cases = {{In{{6, 7}, Kind::mask}, In{{6, 7}}}}}},
      // f64 -> f32 -> f64 keeps ~7 digits: a wider step and a looser tolerance than the default.
      {"astype",
       un([](const Tensor& x) { return fx::astype(x, x.dtype() == f32 ? f64 : f32); }),
       {.cases = us, .grad = {.eps = 1e-2, .rtol = 1e-4, .atol = 1e-5}}},
      {"astype_to_integer",
       un([](const Tensor& x) { return fx::astype(x, i32) + fx::astype(x, i64); }),
       {.cases = us, .range = {-9, 9}, .order = 0, .why = "integer output", .dtypes = kNumeric}},
      {"astype_to_bool",
       un([](const Tensor& x) { return fx::astype(x, boolean); }),
       {.cases = us,
        .range = {-1, 1},
        .order = 0,
        .why = "bool output",
        .dtypes = kNumeric,
        .grid = 1}},
      {"astype_from_bool",
       un([](const Tensor& x) { return fx::astype(x, f64); }),
       {.cases = {{In{{45, 65}, Kind::mask}}, {In{{}, Kind::mask}}},
        .order = 0,
        .why = "bool input"}},
      {"astype_large",
       un([](const Tensor& x) { return fx::astype(fx::astype(x, i32), f32); }),
       {.cases = large, .range = {-9, 9}, .order = 0, .why = "goes through an integer"}},
      {"copy", un([](const Tensor& x) { return x.clone(); }), {.cases = us, .dtypes = kNumeric}},

      // NaN (wherever an input exceeds 1.2) propagates through either operand of maximum/minimum
      // and through relu.
      {"nan_propagation",
       [](const Args& a) {
         Tensor x = fx::where(a[0] > 1.2, fx::scalar(NAN, a[0].dtype()), a[0]);
         return fx::stack({fx::maximum(x, a[1]), fx::maximum(a[1], x), fx::minimum(x, a[1]),
                           fx::minimum(a[1], x), fx::relu(x)});
       },
       {.cases = pairs({{{9, 13}, {9, 13}}, {{300, 150}, {150}}}),
        .order = 0,
        .why = "NaN inputs"}},

      // ---- finiteness (bool outputs): NaN, +-Inf and finite values side by side
      {"isnan",
       un([](const Tensor& x) { return fx::isnan(with_nonfinite(x)); }),
       {.cases = us, .order = 0, .why = "bool output", .dtypes = kNumeric}},
      {"isinf",
       un([](const Tensor& x) { return fx::isinf(with_nonfinite(x)); }),
       {.cases = us, .order = 0, .why = "bool output", .dtypes = kNumeric}},
      {"isfinite",
       un([](const Tensor& x) { return fx::isfinite(with_nonfinite(x)); }),
       {.cases = us, .order = 0, .why = "bool output", .dtypes = kNumeric}},
      {"finiteness_large",
       un([](const Tensor& x) {
         Tensor y = with_nonfinite(x);
         return fx::stack({fx::isnan(y), fx::isinf(y), fx::isfinite(y)});
       }),
       {.cases = shapes({{40000}}), .order = 0, .why = "bool output"}},
      {"finiteness_of_bool",
       un([](const Tensor& m) {
         return fx::stack({fx::isnan(m), fx::isinf(m), fx::isfinite(m)});
       }),
       {.cases = {{In{{6, 7}, Kind::mask}}}, .order = 0, .why = "bool input and output"}},

      // ---- composites (no rule of their own)
      {"square", un(fx::square), {.cases = us, .dtypes = kNumeric}},
      {"rsqrt", un(fx::rsqrt), {.cases = us, .range = {0.2, 3}}},
      {"reciprocal", un(fx::reciprocal), {.cases = us, .range = {0.3, 3}}},
      {"softplus", un(fx::softplus), {.cases = us, .range = {-5, 5}}},
      {"softplus_extreme", un(fx::softplus), {.cases = shapes({{40}}), .range = {-60, 60}}},
      {"clamp", un([](const Tensor& x) { return fx::clamp(x, -0.5, 0.7); }), {.cases = us}},
      {"number_on_the_left",
       un([](const Tensor& x) { return 3.0 - x + 2.0 / x + (x - 1.0) / 4.0; }),
       {.cases = us, .range = {0.5, 2}}},
  };
  // One row per math function of the table (fluxion/ops/elementwise_defs.hpp), on its range.
  // One row per math function of the table (fluxion/ops/elementwise_defs.hpp), on its range,
  // gradient-checked as often as it differentiates on tensors (the polygamma chain ends; an op
  // of order 0 must raise fx::Error when differentiated, which primitives_test.cpp checks).
#define FX_UNARY_ROW(op)                                            \
  rows.push_back({#op,                                              \
                  un(fx::op),                                       \
                  {.cases = us,                                     \
                   .range = {elem::op##_op::lo, elem::op##_op::hi}, \
                   .order = elem::tensor_order<elem::op##_op>,      \
                   .why = "the polygamma chain ends (elementwise_defs.hpp)"}});
#define FX_BINARY_ROW(op) \
  rows.push_back(         \
      {#op, bin(fx::op), {.cases = bs, .range = {elem::op##_op::lo, elem::op##_op::hi}}});
  FX_ELEMENTWISE_UNARY(FX_UNARY_ROW)
  FX_ELEMENTWISE_BINARY(FX_BINARY_ROW)
#undef FX_UNARY_ROW
#undef FX_BINARY_ROW
  return rows;
}

}  // namespace fx::rows

namespace {

// Both backends share fx::math, so these pin the actual values on a few points.
TEST(Elementwise, ValuesAtKnownPoints) {
  auto x = fx::tensor({-2.0, -0.5, 0.0, 0.5, 3.0}, fx::f64);
  auto expect = [&](const fx::Tensor& y, std::initializer_list<double> want) {
    auto v = fx::to_vector<double>(y);
    ASSERT_EQ(v.size(), want.size());
    size_t i = 0;
    for (double w : want) EXPECT_NEAR(v[i++], w, 1e-12) << "element " << i - 1;
  };
  expect(fx::relu(x), {0, 0, 0, 0.5, 3});
  expect(fx::abs(x), {2, 0.5, 0, 0.5, 3});
  expect(fx::sign(x), {-1, -1, 0, 1, 1});
  expect(fx::sigmoid(x), {1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(0.5)), 0.5,
                          1 / (1 + std::exp(-0.5)), 1 / (1 + std::exp(-3.0))});
  expect(fx::softplus(x), {std::log1p(std::exp(-2.0)), std::log1p(std::exp(-0.5)), std::log(2.0),
                           std::log1p(std::exp(0.5)), std::log1p(std::exp(3.0))});
  expect(fx::clamp(x, -1, 1), {-1, -0.5, 0, 0.5, 1});
  expect(fx::maximum(x, fx::scalar(0.2, fx::f64)), {0.2, 0.2, 0.2, 0.5, 3});
  expect(fx::pow(fx::abs(x) + 1.0, 2.0), {9, 2.25, 1, 2.25, 16});
}

TEST(Elementwise, DivisionOfIntegersIsTrueDivision) {
  auto a = fx::tensor({7, -7, 1}, fx::i64), b = fx::tensor({2, 2, 3}, fx::i32);
  auto q = fx::div(a, b);
  EXPECT_EQ(q.dtype(), fx::f32);
  auto v = fx::to_vector<double>(q);
  EXPECT_DOUBLE_EQ(v[0], 3.5);
  EXPECT_DOUBLE_EQ(v[1], -3.5);
  EXPECT_NEAR(v[2], 1.0 / 3.0, 1e-7);
}

TEST(Elementwise, MixedDtypesPromote) {
  auto a = fx::tensor({1, 2}, fx::i32), b = fx::tensor({0.5, 0.25}, fx::f64);
  auto c = a + b;
  EXPECT_EQ(c.dtype(), fx::f64);
  EXPECT_EQ(fx::to_vector<double>(c), (std::vector<double>{1.5, 2.25}));
  EXPECT_EQ((fx::tensor({1, 2}, fx::i32) * fx::tensor({3, 4}, fx::i64)).dtype(), fx::i64);
  EXPECT_EQ((fx::tensor({1, 2}, fx::f32) + 1.0).dtype(), fx::f32);  // a number takes x's dtype
}

TEST(Elementwise, BroadcastingIsAViewNotACopy) {
  auto a = fx::testing::randn({4, 1}), b = fx::testing::randn({3});
  auto e = fx::expand(a, {4, 3});
  EXPECT_TRUE(e.same_storage(a));
  EXPECT_EQ(e.stride(1), 0);
  auto c = a + b;
  ASSERT_EQ(c.shape(), (fx::Shape{4, 3}));
  auto va = fx::to_vector<double>(a), vb = fx::to_vector<double>(b), vc = fx::to_vector<double>(c);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_DOUBLE_EQ(vc[size_t(i * 3 + j)], va[size_t(i)] + vb[size_t(j)]);
}

}  // namespace
