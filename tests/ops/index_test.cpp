// Rows for the integer-indexing primitives: index_select / index_add and gather / scatter_add
// (each the other's adjoint), with repeated indices, i32 indices and an empty index.
#include <gtest/gtest.h>

#include "op_rows.hpp"

namespace fx::rows {
namespace {
const std::vector<DType> kNumeric = {f32, f64, i32, i64};
In idx(Shape s, int64_t bound, DType t = i64) { return In{s, Kind::index, bound, t}; }
}  // namespace

std::vector<Row> index_rows() {
  return {
      {"index_select", [](const Args& a) { return fx::index_select(a[0], 0, a[1]); },
       {.cases = {{In{{45, 65}}, idx({70}, 45)}, {In{{4, 3}}, idx({0}, 4)}, {In{{5}}, idx({8}, 5)}},
        .dtypes = kNumeric}},
      {"index_select_axis1_i32", [](const Args& a) { return fx::index_select(a[0], 1, a[1]); },
       {.cases = {{In{{5, 7, 11}}, idx({9}, 7, i32)}}}},
      {"index_add", [](const Args& a) { return fx::index_add(a[0], 0, a[1], a[2]); },
       {.cases = {{In{{6, 4}}, idx({9}, 6), In{{9, 4}}}, {In{{3}}, idx({5}, 3), In{{5}}}},
        .dtypes = kNumeric}},
      {"index_add_last_axis_i32", [](const Args& a) { return fx::index_add(a[0], -1, a[1], a[2]); },
       {.cases = {{In{{3, 5}}, idx({7}, 5, i32), In{{3, 7}}}}}},
      {"gather", [](const Args& a) { return fx::gather(a[0], 1, a[1]); },
       {.cases = {{In{{5, 7}}, idx({5, 3}, 7)}, {In{{45, 65}}, idx({40, 90}, 65)}},
        .dtypes = kNumeric}},
      {"gather_axis0", [](const Args& a) { return fx::gather(a[0], 0, a[1]); },
       {.cases = {{In{{5, 7}}, idx({4, 7}, 5)}, {In{{3, 4, 5}}, idx({6, 2, 5}, 3, i32)}}}},
      {"scatter_add", [](const Args& a) { return fx::scatter_add(a[0], 1, a[1], a[2]); },
       {.cases = {{In{{5, 7}}, idx({5, 3}, 7), In{{5, 3}}},
                  {In{{4, 6}}, idx({4, 20}, 6), In{{4, 20}}}},
        .dtypes = kNumeric}},
      {"scatter_add_axis0_i32", [](const Args& a) { return fx::scatter_add(a[0], 0, a[1], a[2]); },
       {.cases = {{In{{4, 3}}, idx({6, 3}, 4, i32), In{{6, 3}}}}}},
  };
}

}  // namespace fx::rows

namespace {

TEST(Index, ValuesOfEachIndexingOp) {
  auto x = fx::arange(0, 6, 1, fx::f64).reshape({2, 3});  // [[0 1 2] [3 4 5]]
  auto i = fx::tensor({2, 0, 2}, fx::i64);
  EXPECT_EQ(fx::to_vector<double>(fx::index_select(x, 1, i)),
            (std::vector<double>{2, 0, 2, 5, 3, 5}));
  auto g = fx::tensor({1, 1, 0, 2}, fx::i64).reshape({2, 2});
  EXPECT_EQ(fx::to_vector<double>(fx::gather(x, 1, g)), (std::vector<double>{1, 1, 3, 5}));
  auto s = fx::scatter_add(fx::zeros({2, 3}, fx::f64), 1, g, fx::ones({2, 2}, fx::f64));
  EXPECT_EQ(fx::to_vector<double>(s), (std::vector<double>{0, 2, 0, 1, 0, 1}));
  auto a = fx::index_add(fx::zeros({2, 3}, fx::f64), 1, i, fx::ones({2, 3}, fx::f64));
  EXPECT_EQ(fx::to_vector<double>(a), (std::vector<double>{1, 0, 2, 1, 0, 2}));
  // Negative indices count from the end.
  EXPECT_EQ(fx::to_vector<double>(fx::index_select(x, 0, fx::tensor({-1}, fx::i64))),
            (std::vector<double>{3, 4, 5}));
}

TEST(Index, RepeatedIndicesAccumulateGradients) {
  auto x = fx::tensor({1, 2, 3}, fx::f64);
  auto i = fx::tensor({0, 2, 0, 0}, fx::i64);
  auto gx =
      fx::gradient([&](const fx::Tensor& x) { return fx::sum(fx::index_select(x, 0, i)); }, x);
  EXPECT_EQ(fx::to_vector<double>(gx), (std::vector<double>{3, 0, 1}));
}

}  // namespace
