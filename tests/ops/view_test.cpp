// Rows for the layout primitives (reshape, permute, slice and its adjoint pad_slice, expand,
// concat) and the composites built on them, plus checks that views share storage.
#include <gtest/gtest.h>

#include "op_rows.hpp"

namespace fx::rows {
namespace {
const std::vector<DType> kNumeric = {f32, f64, i32, i64};

Shape reversed(const Shape& s) {
  Shape r;
  for (int d = s.size() - 1; d >= 0; --d) r.push_back(s[d]);
  return r;
}

// pad_slice has no public function (it is slice's pullback): apply the primitive itself.
// dy is written at start, start + step, ... along `axis` of a zero tensor `extra` longer.
OpFn pad(int axis, int64_t start, int64_t step, int64_t extra) {
  return [=](const Args& a) {
    const Tensor& dy = a[0];
    Shape s = dy.shape();
    s[axis] = start + (s[axis] - 1) * step + 1 + extra;
    const SliceAttrs p{
        .axis = axis, .start = start, .length = dy.shape()[axis], .step = step, .shape = s};
    return bind(pad_slice_p, {dy}, p);
  };
}
}  // namespace

std::vector<Row> view_rows() {
  auto us = unary_shapes();
  return {
      {"reshape",
       un([](const Tensor& x) { return fx::reshape(x, reversed(x.shape())); }),
       {.cases = shapes({{45, 65}, {5, 7, 11}, {1, 3, 2}, {0, 4}}), .dtypes = kNumeric}},
      {"reshape_infer",
       un([](const Tensor& x) { return x.reshape({-1}); }),
       {.cases = us, .dtypes = kNumeric}},
      {"permute",
       un([](const Tensor& x) {
         return fx::permute(x, {2, 0, 1});
       }),
       {.cases = shapes({{5, 7, 11}, {1, 3, 1}, {4, 0, 2}}), .dtypes = kNumeric}},
      {"slice",
       un([](const Tensor& x) { return fx::slice(x, -1, 1, -1, 2); }),
       {.cases = shapes({{45, 65}, {5, 7, 11}, {1, 3, 1}, {0, 4}}), .dtypes = kNumeric}},
      {"slice_axis0",
       un([](const Tensor& x) { return fx::slice(x, 0, 2, 40); }),
       {.cases = shapes({{45, 65}, {5, 7, 11}})}},
      {"pad_slice", pad(1, 2, 3, 2), {.cases = shapes({{45, 21}, {5, 3, 11}}), .dtypes = kNumeric}},
      {"pad_slice_axis0", pad(0, 0, 1, 3), {.cases = shapes({{4}, {2, 3, 1}})}},
      // slice_set(base, value): what element and slice assignment record.
      {"slice_set",
       [](const Args& a) { return fx::slice_set(a[0], 1, 1, 6, 2, a[1]); },
       {.cases = pairs({{{4, 7}, {4, 3}}, {{2, 7, 3}, {2, 3, 3}}, {{3, 7}, {3, 1}}}),
        .dtypes = kNumeric}},
      {"slice_set_axis0",
       [](const Args& a) { return fx::slice_set(a[0], 0, -2, 100, 1, a[1]); },
       {.cases = pairs({{{5, 2}, {2, 2}}, {{3}, {}}})}},
      {"expand",
       un([](const Tensor& x) {
         Shape s{2};
         for (int64_t d : x.shape()) s.push_back(d == 1 ? 3 : d);
         return fx::expand(x, s);
       }),
       {.cases = shapes({{1, 3}, {}, {5, 1, 11}, {4}}), .dtypes = kNumeric}},
      {"concat",
       [](const Args& a) {
         return fx::concat({a[0], a[1]}, 0);
       },
       {.cases = pairs({{{3, 5}, {4, 5}}, {{2, 3, 4}, {1, 3, 4}}, {{0, 5}, {3, 5}}, {{1}, {6}}}),
        .dtypes = kNumeric}},
      {"concat_three_last_axis",
       [](const Args& a) {
         return fx::concat({a[0], a[1], a[2]}, -1);
       },
       {.cases = {{In{{4, 2}}, In{{4, 5}}, In{{4, 1}}},
                  {In{{2, 3, 1}}, In{{2, 3, 3}}, In{{2, 3, 2}}}}}},
      // Past the CPU kernels' OpenMP threshold (32768 elements): concat splits output tiles
      // across threads (stack along a late axis) or each input's elements (along axis 0).
      {"concat_parallel_stack",
       [](const Args& a) {
         return fx::stack({a[0], a[1], a[2]}, 1);
       },
       {.cases = {{In{{120, 100}}, In{{120, 100}}, In{{120, 100}}}},
        .dtypes = {f32, f64, boolean}}},
      {"concat_parallel_axis0",
       [](const Args& a) {
         return fx::concat({a[0], a[1]}, 0);
       },
       {.cases = pairs({{{200, 100}, {150, 100}}})}},
      {"pad_slice_parallel", pad(1, 1, 2, 3), {.cases = shapes({{200, 170}})}},
      {"slice_set_parallel",
       [](const Args& a) { return fx::slice_set(a[0], 1, 1, 300, 2, a[1]); },
       {.cases = pairs({{{200, 400}, {200, 150}}, {{200, 400}, {1, 150}}})}},
      // Complex values (c64 and c128 forward, c128 gradient).
      {"concat_complex",
       [](const Args& a) {
         return fx::concat({a[0], a[1]}, 1);
       },
       {.cases = pairs({{{3, 5}, {3, 2}}, {{2, 1, 4}, {2, 3, 4}}}),
        .dtypes = {c64, c128},
        .complex = true}},
      {"pad_slice_complex",
       pad(1, 2, 3, 2),
       {.cases = shapes({{5, 3, 11}}), .dtypes = {c64, c128}, .complex = true}},
      {"slice_set_complex",
       [](const Args& a) { return fx::slice_set(a[0], 1, 1, 6, 2, a[1]); },
       {.cases = pairs({{{4, 7}, {4, 3}}, {{3, 7}, {3, 1}}}),
        .dtypes = {c64, c128},
        .complex = true}},
      // composites
      {"transpose",
       un([](const Tensor& x) { return fx::transpose(x); }),
       {.cases = shapes({{45, 65}, {5, 7, 11}, {1, 3}})}},
      {"contiguous",
       un([](const Tensor& x) { return fx::contiguous(fx::transpose(x, 0, -1)); }),
       {.cases = shapes({{45, 65}, {5, 7, 11}})}},
      {"flatten",
       un([](const Tensor& x) { return fx::flatten(x); }),
       {.cases = shapes({{5, 7, 11}, {3, 1}, {2, 3, 4, 5}})}},
      {"squeeze",
       un([](const Tensor& x) { return fx::squeeze(x, 1); }),
       {.cases = shapes({{3, 1, 4}, {5, 1}})}},
      {"unsqueeze",
       un([](const Tensor& x) { return fx::unsqueeze(x, -1) * fx::unsqueeze(x, 0); }),
       {.cases = shapes({{4}, {}})}},
      {"select",
       un([](const Tensor& x) { return fx::select(x, 1, -2); }),
       {.cases = shapes({{45, 65}, {5, 7, 11}, {1, 3}})}},
      {"stack",
       [](const Args& a) {
         return fx::stack({a[0], a[1], a[0]}, -1);
       },
       {.cases = pairs({{{4, 5}, {4, 5}}, {{3}, {3}}, {{}, {}}})}},
  };
}

}  // namespace fx::rows

namespace {

TEST(View, ViewsShareStorageAndCopiesDoNot) {
  auto x = fx::testing::randn({4, 6});
  EXPECT_TRUE(fx::transpose(x).same_storage(x));
  EXPECT_TRUE(fx::slice(x, 1, 1, 5, 2).same_storage(x));
  EXPECT_TRUE(x.reshape({6, 4}).same_storage(x));
  EXPECT_TRUE(fx::expand(fx::slice(x, 0, 0, 1), {3, 4, 6}).same_storage(x));
  EXPECT_FALSE(x.clone().same_storage(x));
  EXPECT_FALSE(fx::transpose(x).reshape({24}).same_storage(x));  // needs a contiguous copy
}

TEST(View, SliceAndSelectPickTheRightElements) {
  auto x = fx::arange(0, 12, 1, fx::f64).reshape({3, 4});
  EXPECT_EQ(fx::to_vector<double>(fx::slice(x, 1, 1, 4, 2)),
            (std::vector<double>{1, 3, 5, 7, 9, 11}));
  EXPECT_EQ(fx::to_vector<double>(fx::slice(x, 0, -2, 3)),
            (std::vector<double>{4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(fx::to_vector<double>(fx::select(x, 1, -1)), (std::vector<double>{3, 7, 11}));
  EXPECT_EQ(fx::slice(x, 1, 3, 1).shape(), (fx::Shape{3, 0}));  // stop before start: empty
  auto g = fx::gradient([](const fx::Tensor& x) { return fx::sum(fx::slice(x, 1, 1, 4, 2)); }, x);
  EXPECT_EQ(fx::to_vector<double>(g), (std::vector<double>{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
}

TEST(View, ConcatPromotesAndStackAddsAnAxis) {
  auto a = fx::tensor({1, 2}, fx::i32), b = fx::tensor({0.5}, fx::f64);
  auto c = fx::concat({a, b});
  EXPECT_EQ(c.dtype(), fx::f64);
  EXPECT_EQ(fx::to_vector<double>(c), (std::vector<double>{1, 2, 0.5}));
  auto s = fx::stack({fx::zeros({2, 3}), fx::ones({2, 3})}, -1);
  EXPECT_EQ(s.shape(), (fx::Shape{2, 3, 2}));
  EXPECT_EQ(fx::to_vector<double>(fx::select(s, -1, 1)), std::vector<double>(6, 1.0));
}

}  // namespace

namespace {

// More inputs than the tape's 64-slot fast path (and than a 32-bit saves mask has bits).
TEST(View, ConcatOfManyTensorsDifferentiates) {
  std::vector<fx::Tensor> parts;
  for (int i = 0; i < 70; ++i) parts.push_back(fx::full({1, 2}, i, fx::f64));
  auto f = [](const std::vector<fx::Tensor>& ps) {
    fx::Tensor c = fx::concat(ps, 0);  // (70, 2)
    return fx::sum(c * c);
  };
  auto g = fx::gradient(f, parts);
  ASSERT_EQ(g.size(), 70u);
  for (int i = 0; i < 70; ++i)
    EXPECT_EQ(fx::to_vector<double>(g[size_t(i)]), (std::vector<double>{2.0 * i, 2.0 * i})) << i;
}

}  // namespace
