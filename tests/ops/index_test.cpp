// Rows for the integer-indexing primitives: index_select / index_add and gather / scatter_add
// (each the other's adjoint), with repeated indices, i32 indices and an empty index.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "op_rows.hpp"

namespace fx::rows {
namespace {
const std::vector<DType> kNumeric = {f32, f64, i32, i64};
const std::vector<DType> kAll = {f32, f64, i32, i64, boolean};
const std::vector<DType> kComplex = {c64, c128};
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
      // Past the CPU kernels' OpenMP threshold (32768 elements): the threaded paths. scatter_add
      // and index_add split a dimension other than the axis (the first case of each splits the
      // inner one, the second the outer one); repeated indices make unsafe splits fail.
      {"index_select_parallel", [](const Args& a) { return fx::index_select(a[0], 0, a[1]); },
       {.cases = {{In{{300, 128}}, idx({400}, 300)}}, .dtypes = kAll}},
      {"index_select_last_axis_parallel",
       [](const Args& a) { return fx::index_select(a[0], -1, a[1]); },
       {.cases = {{In{{256, 150}}, idx({160}, 150, i32)}}}},
      {"index_add_parallel", [](const Args& a) { return fx::index_add(a[0], 0, a[1], a[2]); },
       {.cases = {{In{{100, 400}}, idx({120}, 100), In{{120, 400}}}}, .dtypes = kAll}},
      {"index_add_last_axis_parallel",
       [](const Args& a) { return fx::index_add(a[0], 1, a[1], a[2]); },
       {.cases = {{In{{500, 60}}, idx({70}, 60, i32), In{{500, 70}}}}}},
      {"gather_parallel", [](const Args& a) { return fx::gather(a[0], 1, a[1]); },
       {.cases = {{In{{200, 300}}, idx({180, 200}, 300)}}, .dtypes = kAll}},
      {"scatter_add_parallel", [](const Args& a) { return fx::scatter_add(a[0], 0, a[1], a[2]); },
       {.cases = {{In{{64, 600}}, idx({60, 600}, 64), In{{60, 600}}},
                  {In{{16, 60, 40}}, idx({30, 30, 40}, 16, i32), In{{30, 30, 40}}}},
        .dtypes = kAll}},
      {"scatter_add_last_axis_parallel",
       [](const Args& a) { return fx::scatter_add(a[0], 1, a[1], a[2]); },
       {.cases = {{In{{200, 50}}, idx({200, 180}, 50), In{{200, 180}}}}}},
      // Complex values (c64 and c128 forward, c128 gradient).
      {"index_select_complex", [](const Args& a) { return fx::index_select(a[0], 1, a[1]); },
       {.cases = {{In{{5, 7, 3}}, idx({9}, 7)}, {In{{300, 128}}, idx({400}, 128)}},
        .dtypes = kComplex, .complex = true}},
      {"index_add_complex", [](const Args& a) { return fx::index_add(a[0], 0, a[1], a[2]); },
       {.cases = {{In{{6, 4}}, idx({9}, 6), In{{9, 4}}}}, .dtypes = kComplex, .complex = true}},
      {"gather_complex", [](const Args& a) { return fx::gather(a[0], 0, a[1]); },
       {.cases = {{In{{5, 7}}, idx({4, 7}, 5)}}, .dtypes = kComplex, .complex = true}},
      {"scatter_add_complex", [](const Args& a) { return fx::scatter_add(a[0], 1, a[1], a[2]); },
       {.cases = {{In{{4, 6}}, idx({4, 20}, 6, i32), In{{4, 20}}}},
        .dtypes = kComplex, .complex = true}},
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

// The tuned kernels skip a bad index inside their (threaded) loops and rescan afterwards: the
// error must still name the first bad index in the reference's order, word for word.
std::string error_of(fx::testing::Backends b, const std::function<fx::Tensor()>& f) {
  fx::testing::BackendScope scope(b);
  try {
    (void)f();
  } catch (const fx::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Index, OutOfRangeErrorsMatchTheReferenceWordForWord) {
  auto x = fx::arange(0, 24, 1, fx::f64).reshape({4, 6});
  auto src = fx::ones({4, 6}, fx::f64);
  // Several bad indices (one negative past the start): the first in row-major order is named.
  auto g = fx::tensor({0, 1, 2, 3, 4, 5, 1, 9, 0, -8, 2, 7, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                      fx::i64)
               .reshape({4, 6});
  auto gt = fx::transpose(fx::astype(g, fx::i32)).reshape({6, 4});
  auto i = fx::tensor({1, 5, -7, 2}, fx::i64);
  std::vector<std::function<fx::Tensor()>> calls = {
      [&] { return fx::index_select(x, 0, i); },
      [&] { return fx::index_select(x, 1, fx::tensor({0, 6}, fx::i32)); },
      [&] { return fx::index_add(x, 0, i, src); },
      [&] { return fx::gather(x, 1, g); },
      [&] { return fx::gather(x, 0, fx::transpose(g)); },
      [&] { return fx::gather(fx::transpose(x), 1, gt); },
      [&] { return fx::scatter_add(x, 1, g, src); },
      [&] { return fx::scatter_add(fx::zeros({4, 0}, fx::f64), 1, fx::zeros({4, 1}, fx::i64),
                                   fx::ones({4, 1}, fx::f64)); },
      // A large index (the threaded loops) with one bad entry near the end.
      [&] {
        auto ok = fx::astype(fx::arange(0, 39990, 1, fx::f64), fx::i64);
        auto big = fx::concat({ok, fx::tensor({1, 2, 40001, -40001, 3}, fx::i64)}, 0);
        return fx::gather(fx::ones({40000}, fx::f32), 0, big);
      },
  };
  for (size_t k = 0; k < calls.size(); ++k) {
    SCOPED_TRACE(k);
    std::string tuned = error_of(fx::testing::Backends::all, calls[k]);
    EXPECT_NE(tuned, "no error");
    EXPECT_EQ(tuned, error_of(fx::testing::Backends::reference, calls[k]));
  }
}

}  // namespace
