// Rows for the integer-indexing primitives: index_select / index_add and gather / scatter_add
// (each the other's adjoint), with repeated indices, i32 indices, negative indices and an
// empty index; the index convention (Python-style negatives) across every op that takes one.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <fluxion/data/dataloader.hpp>

#include "op_rows.hpp"

namespace fx::rows {
namespace {
const std::vector<DType> kNumeric = {f32, f64, i32, i64};
const std::vector<DType> kAll = {f32, f64, i32, i64, boolean};
const std::vector<DType> kComplex = {c64, c128};
In idx(Shape s, int64_t bound, DType t = i64) { return In{s, Kind::index, bound, t}; }
// Indices in [-bound, bound): Python-style negatives mixed with ordinary ones.
In sidx(Shape s, int64_t bound, DType t = i64) { return In{s, Kind::signed_index, bound, t}; }
}  // namespace

std::vector<Row> index_rows() {
  return {
      {"index_select",
       [](const Args& a) { return fx::index_select(a[0], 0, a[1]); },
       {.cases = {{In{{45, 65}}, idx({70}, 45)}, {In{{4, 3}}, idx({0}, 4)}, {In{{5}}, idx({8}, 5)}},
        .dtypes = kNumeric}},
      {"index_select_axis1_i32",
       [](const Args& a) { return fx::index_select(a[0], 1, a[1]); },
       {.cases = {{In{{5, 7, 11}}, idx({9}, 7, i32)}}}},
      {"index_add",
       [](const Args& a) { return fx::index_add(a[0], 0, a[1], a[2]); },
       {.cases = {{In{{6, 4}}, idx({9}, 6), In{{9, 4}}}, {In{{3}}, idx({5}, 3), In{{5}}}},
        .dtypes = kNumeric}},
      {"index_add_last_axis_i32",
       [](const Args& a) { return fx::index_add(a[0], -1, a[1], a[2]); },
       {.cases = {{In{{3, 5}}, idx({7}, 5, i32), In{{3, 7}}}}}},
      {"gather",
       [](const Args& a) { return fx::gather(a[0], 1, a[1]); },
       {.cases = {{In{{5, 7}}, idx({5, 3}, 7)}, {In{{45, 65}}, idx({40, 90}, 65)}},
        .dtypes = kNumeric}},
      {"gather_axis0",
       [](const Args& a) { return fx::gather(a[0], 0, a[1]); },
       {.cases = {{In{{5, 7}}, idx({4, 7}, 5)}, {In{{3, 4, 5}}, idx({6, 2, 5}, 3, i32)}}}},
      {"scatter_add",
       [](const Args& a) { return fx::scatter_add(a[0], 1, a[1], a[2]); },
       {.cases = {{In{{5, 7}}, idx({5, 3}, 7), In{{5, 3}}},
                  {In{{4, 6}}, idx({4, 20}, 6), In{{4, 20}}}},
        .dtypes = kNumeric}},
      {"scatter_add_axis0_i32",
       [](const Args& a) { return fx::scatter_add(a[0], 0, a[1], a[2]); },
       {.cases = {{In{{4, 3}}, idx({6, 3}, 4, i32), In{{6, 3}}}}}},
      // Past the CPU kernels' OpenMP threshold (32768 elements): the threaded paths. scatter_add
      // and index_add split a dimension other than the axis (the first case of each splits the
      // inner one, the second the outer one); repeated indices make unsafe splits fail.
      {"index_select_parallel",
       [](const Args& a) { return fx::index_select(a[0], 0, a[1]); },
       {.cases = {{In{{300, 128}}, idx({400}, 300)}}, .dtypes = kAll}},
      {"index_select_last_axis_parallel",
       [](const Args& a) { return fx::index_select(a[0], -1, a[1]); },
       {.cases = {{In{{256, 150}}, idx({160}, 150, i32)}}}},
      {"index_add_parallel",
       [](const Args& a) { return fx::index_add(a[0], 0, a[1], a[2]); },
       {.cases = {{In{{100, 400}}, idx({120}, 100), In{{120, 400}}}}, .dtypes = kAll}},
      {"index_add_last_axis_parallel",
       [](const Args& a) { return fx::index_add(a[0], 1, a[1], a[2]); },
       {.cases = {{In{{500, 60}}, idx({70}, 60, i32), In{{500, 70}}}}}},
      {"gather_parallel",
       [](const Args& a) { return fx::gather(a[0], 1, a[1]); },
       {.cases = {{In{{200, 300}}, idx({180, 200}, 300)}}, .dtypes = kAll}},
      {"scatter_add_parallel",
       [](const Args& a) { return fx::scatter_add(a[0], 0, a[1], a[2]); },
       {.cases = {{In{{64, 600}}, idx({60, 600}, 64), In{{60, 600}}},
                  {In{{16, 60, 40}}, idx({30, 30, 40}, 16, i32), In{{30, 30, 40}}}},
        .dtypes = kAll}},
      {"scatter_add_last_axis_parallel",
       [](const Args& a) { return fx::scatter_add(a[0], 1, a[1], a[2]); },
       {.cases = {{In{{200, 50}}, idx({200, 180}, 50), In{{200, 180}}}}}},
      // Negative indices count from the end, in every kernel and in the pullbacks (which index
      // with the same tensor), threaded paths included.
      {"index_select_negative",
       [](const Args& a) { return fx::index_select(a[0], 0, a[1]); },
       {.cases = {{In{{6, 5}}, sidx({9}, 6)}, {In{{300, 128}}, sidx({400}, 300, i32)}},
        .dtypes = kNumeric}},
      {"index_add_negative",
       [](const Args& a) { return fx::index_add(a[0], 1, a[1], a[2]); },
       {.cases = {{In{{3, 5}}, sidx({7}, 5), In{{3, 7}}},
                  {In{{100, 400}}, sidx({120}, 400, i32), In{{100, 120}}}},
        .dtypes = kNumeric}},
      {"gather_negative",
       [](const Args& a) { return fx::gather(a[0], 1, a[1]); },
       {.cases = {{In{{5, 7}}, sidx({5, 3}, 7)}, {In{{200, 300}}, sidx({180, 200}, 300, i32)}},
        .dtypes = kNumeric}},
      {"scatter_add_negative",
       [](const Args& a) { return fx::scatter_add(a[0], 0, a[1], a[2]); },
       {.cases = {{In{{4, 3}}, sidx({6, 3}, 4), In{{6, 3}}},
                  {In{{64, 600}}, sidx({60, 600}, 64, i32), In{{60, 600}}}},
        .dtypes = kNumeric}},
      // Complex values (c64 and c128 forward, c128 gradient).
      {"index_select_complex",
       [](const Args& a) { return fx::index_select(a[0], 1, a[1]); },
       {.cases = {{In{{5, 7, 3}}, idx({9}, 7)}, {In{{300, 128}}, idx({400}, 128)}},
        .dtypes = kComplex,
        .complex = true}},
      {"index_add_complex",
       [](const Args& a) { return fx::index_add(a[0], 0, a[1], a[2]); },
       {.cases = {{In{{6, 4}}, idx({9}, 6), In{{9, 4}}}}, .dtypes = kComplex, .complex = true}},
      {"gather_complex",
       [](const Args& a) { return fx::gather(a[0], 0, a[1]); },
       {.cases = {{In{{5, 7}}, idx({4, 7}, 5)}}, .dtypes = kComplex, .complex = true}},
      {"scatter_add_complex",
       [](const Args& a) { return fx::scatter_add(a[0], 1, a[1], a[2]); },
       {.cases = {{In{{4, 6}}, idx({4, 20}, 6, i32), In{{4, 20}}}},
        .dtypes = kComplex,
        .complex = true}},
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
  auto g =
      fx::tensor({0, 1, 2, 3, 4, 5, 1, 9, 0, -8, 2, 7, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, fx::i64)
          .reshape({4, 6});
  auto gt = fx::transpose(fx::astype(g, fx::i32)).reshape({6, 4});
  auto i = fx::tensor({1, 5, -7, 2}, fx::i64);
  std::vector<std::function<fx::Tensor()>> calls = {
      [&] { return fx::index_select(x, 0, i); },
      [&] {
        return fx::index_select(x, 1, fx::tensor({0, 6}, fx::i32));
      },
      [&] { return fx::index_add(x, 0, i, src); },
      [&] { return fx::gather(x, 1, g); },
      [&] { return fx::gather(x, 0, fx::transpose(g)); },
      [&] { return fx::gather(fx::transpose(x), 1, gt); },
      [&] { return fx::scatter_add(x, 1, g, src); },
      [&] {
        return fx::scatter_add(fx::zeros({4, 0}, fx::f64), 1, fx::zeros({4, 1}, fx::i64),
                               fx::ones({4, 1}, fx::f64));
      },
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

using fx::testing::Backends;

fx::Tensor iota(const fx::Shape& s) {
  return fx::arange(0, double(s.numel()), 1, fx::f64).reshape(s);
}
fx::Tensor idx(std::initializer_list<double> v, fx::DType t = fx::i64) { return fx::tensor(v, t); }

// One convention for positions everywhere: Python-style negative indices (-1 is the last
// element) in gather, index_select, index_add, scatter_add, select, Tensor::at and take_rows, on
// both backends and through the gradients; outside [-n, n) an fx::Error names the op, the index
// and the axis size, on both sides.

// An indexing op applied with negative indices and with the same positions written >= 0.
struct Case {
  std::string name;
  std::function<fx::Tensor(const fx::Tensor& x, const fx::Tensor& index)> f;
  fx::Tensor x, negative, positive;
};

std::vector<Case> cases() {
  using fx::Tensor;
  const Tensor x = iota({4, 3});  // axis 0 has 4 rows, axis 1 has 3 columns
  return {
      {"index_select", [](const Tensor& x, const Tensor& i) { return fx::index_select(x, 0, i); },
       x, idx({-1, 0, -4, -2}), idx({3, 0, 0, 2})},
      {"index_select_i32",
       [](const Tensor& x, const Tensor& i) { return fx::index_select(x, 1, i); }, x,
       idx({-3, -1}, fx::i32), idx({0, 2}, fx::i32)},
      {"gather", [](const Tensor& x, const Tensor& i) { return fx::gather(x, 1, i); }, x,
       idx({-1, 0, -2, -3, 2, -1, 0, 0}).reshape({4, 2}),
       idx({2, 0, 1, 0, 2, 2, 0, 0}).reshape({4, 2})},
      {"index_add",
       [](const Tensor& x, const Tensor& i) { return fx::index_add(x, 0, i, x * 10.0 + 1.0); }, x,
       idx({-1, -1, 0, -3}), idx({3, 3, 0, 1})},
      {"scatter_add",
       [](const Tensor& x, const Tensor& i) { return fx::scatter_add(x, 1, i, x * x); }, x,
       idx({-1, -2, 0, -3, -3, -3, 2, 1, -1, 0, 0, -2}).reshape({4, 3}),
       idx({2, 1, 0, 0, 0, 0, 2, 1, 2, 0, 0, 1}).reshape({4, 3})},
  };
}

TEST(NegativeIndex, IndexingOpsCountFromTheEndOnBothBackends) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    for (Backends b : {Backends::all, Backends::reference}) {
      fx::testing::BackendScope scope(b);
      EXPECT_TRUE(fx::allclose(c.f(c.x, c.negative), c.f(c.x, c.positive), 0, 0));
    }
  }
}

TEST(NegativeIndex, GradientsThroughNegativeIndicesOnBothBackends) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    for (Backends b : {Backends::all, Backends::reference}) {
      fx::testing::BackendScope scope(b);
      auto loss = [&](const fx::Tensor& i) {
        return [&c, i](const fx::Tensor& x) { return fx::sum(fx::square(c.f(x, i))); };
      };
      fx::Tensor gn = fx::gradient(loss(c.negative), c.x);
      fx::Tensor gp = fx::gradient(loss(c.positive), c.x);
      EXPECT_TRUE(fx::allclose(gn, gp, 0, 0)) << gn << gp;
      auto r = fx::testing::gradcheck(loss(c.negative), c.x);
      EXPECT_TRUE(r) << r;
    }
  }
}

TEST(NegativeIndex, OutOfRangeOnEitherSideNamesOpIndexAndSize) {
  const fx::Tensor x = iota({4, 3});
  struct Bad {
    std::function<fx::Tensor()> f;
    std::vector<std::string> parts;
  };
  const fx::Tensor one = fx::ones({1, 3}, fx::f64);
  std::vector<Bad> bad = {
      {[&] { return fx::index_select(x, 0, idx({4})); }, {"fx::index_select", "index 4", "size 4"}},
      {[&] { return fx::index_select(x, 0, idx({-5})); },
       {"fx::index_select", "index -5", "size 4"}},
      {[&] {
         return fx::gather(x, 1, idx({0, 3, 0, 0}).reshape({4, 1}));
       },
       {"fx::gather", "index 3", "size 3", "(4, 3)"}},
      {[&] {
         return fx::gather(x, 1, idx({0, -4, 0, 0}).reshape({4, 1}));
       },
       {"fx::gather", "index -4", "size 3", "(4, 3)"}},
      {[&] {
         return fx::index_add(x, 1, idx({-4}, fx::i32), fx::ones({4, 1}, fx::f64));
       },
       {"fx::index_add", "index -4", "size 3"}},
      {[&] {
         return fx::scatter_add(x, 0, idx({4, 0, 0}).reshape({1, 3}), one);
       },
       {"fx::scatter_add", "index 4", "size 4"}},
      {[&] {
         return fx::scatter_add(x, 0, idx({-5, 0, 0}).reshape({1, 3}), one);
       },
       {"fx::scatter_add", "index -5", "size 4"}},
      {[&] { return fx::select(x, 1, 3); },
       {"fx::select", "index 3", "axis 1 of size 3", "(4, 3)"}},
      {[&] { return fx::select(x, 1, -4); }, {"fx::select", "index -4", "axis 1 of size 3"}},
      {[&] {
         fx::Tensor y = x.clone();
         return y.at({-5, 0}).value();
       },
       {"fx::Tensor::at", "index -5", "axis 0 of size 4"}},
      {[&] {
         fx::Tensor y = x.clone();
         y.at({0, 3}) = 1.0;
         return y;
       },
       {"fx::Tensor::at", "index 3", "axis 1 of size 3"}},
      {[&] {
         const int64_t rows[] = {0, -5};
         return fx::data::take_rows(x, rows);
       },
       {"fx::data::take_rows", "index -5", "axis 0 of size 4"}},
      {[&] {
         const int64_t rows[] = {4};
         return fx::data::take_rows(x, rows);
       },
       {"fx::data::take_rows", "index 4", "size 4"}},
  };
  for (size_t k = 0; k < bad.size(); ++k) {
    SCOPED_TRACE(k);
    const std::string tuned = error_of(Backends::all, bad[k].f);
    for (const std::string& p : bad[k].parts)
      EXPECT_NE(tuned.find(p), std::string::npos) << "'" << p << "' in " << tuned;
    EXPECT_EQ(tuned, error_of(Backends::reference, bad[k].f));
  }
}

TEST(NegativeIndex, SelectAtAndTakeRowsCountFromTheEnd) {
  fx::Tensor x = iota({4, 3});
  EXPECT_TRUE(fx::allclose(fx::select(x, 0, -1), fx::select(x, 0, 3), 0, 0));
  EXPECT_TRUE(fx::allclose(fx::select(x, -1, -3), fx::select(x, 1, 0), 0, 0));
  EXPECT_EQ(x.at({-1, -1}).value().item(), 11.0);
  EXPECT_EQ(x.at({-4, 1}).value().item(), 1.0);
  fx::Tensor y = x.clone();
  y.at({-2, -3}) = 100.0;
  EXPECT_EQ(y.at({2, 0}).value().item(), 100.0);
  const int64_t rows[] = {-1, 0, -4, 2};
  const int64_t same[] = {3, 0, 0, 2};
  EXPECT_TRUE(fx::allclose(fx::data::take_rows(x, rows), fx::data::take_rows(x, same), 0, 0));
  // A write through a negative position is differentiated like any other.
  fx::Tensor g = fx::gradient(
      [](const fx::Tensor& v) {
        fx::Tensor buf = fx::zeros({3}, fx::f64);
        buf.at({-1}) = fx::select(v, 0, -2) * 3.0;
        return fx::sum(buf);
      },
      fx::tensor({1.0, 2.0, 3.0}, fx::f64));
  EXPECT_EQ(fx::to_vector<double>(g), (std::vector<double>{0, 3, 0}));
}

}  // namespace
