// Rows for matmul (2-d, vectors, batched with broadcasting, empty inner dimension) and dot.
#include <gtest/gtest.h>

#include <cmath>

#include "op_rows.hpp"

namespace fx::rows {

std::vector<Row> linalg_rows() {
  return {
      {"matmul", bin(fx::matmul),
       {.cases = pairs({{{45, 65}, {65, 33}},
                        {{1, 7}, {7, 1}},
                        {{65}, {65, 33}},
                        {{45, 65}, {65}},
                        {{9}, {9}},
                        {{2, 3, 4, 5}, {5, 6}},
                        {{3, 1, 4, 5}, {2, 5, 6}},
                        {{4, 5}, {2, 5, 6}},
                        {{6}, {2, 6, 3}},
                        {{2, 4, 6}, {6}},
                        {{5, 0}, {0, 3}},
                        {{0, 4}, {4, 3}}}),
        .dtypes = {f32, f64, i32, i64}}},
      {"matmul_transposed_operands",
       [](const Args& a) { return fx::matmul(fx::transpose(a[0]), fx::transpose(a[1])); },
       {.cases = pairs({{{65, 45}, {33, 65}}, {{3, 5, 4}, {6, 5}}})}},
      // x @ W^T with a small W (batched, as in the GMM benchmark): the CPU kernel transposes W
      // into a scratch buffer first.
      {"matmul_small_transposed_right",
       [](const Args& a) { return fx::matmul(a[0], fx::transpose(a[1], -2, -1)); },
       {.cases = pairs({{{3, 40, 5}, {3, 4, 5}}, {{30, 2}, {3, 2}}, {{9, 1}, {1, 1}}})}},
      // Narrow products (at most 12 columns, inner dimension at most 16): the CPU kernel keeps
      // blocks of rows in registers, packing B per batch (a broadcast B, a transposed B).
      {"matmul_narrow", bin(fx::matmul),
       {.cases = pairs({{{3, 300, 10}, {3, 10, 10}},
                        {{70, 16}, {16, 12}},
                        {{2, 41, 7}, {7, 1}},
                        {{2, 3, 9, 4}, {4, 5}}})}},
      {"matmul_narrow_transposed_right",
       [](const Args& a) { return fx::matmul(a[0], fx::transpose(a[1], -2, -1)); },
       {.cases = pairs({{{4, 130, 10}, {4, 10, 10}}, {{33, 3}, {11, 3}}})}},
      {"dot", bin(fx::dot), {.cases = pairs({{{17}, {17}}, {{1}, {1}}, {{0}, {0}}})}},
  };
}

}  // namespace fx::rows

namespace {

TEST(Linalg, MatmulValuesAndShapes) {
  auto a = fx::tensor({1, 2, 3, 4, 5, 6}, fx::f64).reshape({2, 3});
  auto b = fx::tensor({1, 0, -1, 2, 0.5, 1}, fx::f64).reshape({3, 2});
  EXPECT_EQ(fx::to_vector<double>(fx::matmul(a, b)), (std::vector<double>{0.5, 7, 2, 16}));
  auto v = fx::tensor({1, 1, 1}, fx::f64);
  EXPECT_EQ(fx::matmul(a, v).shape(), (fx::Shape{2}));
  EXPECT_EQ(fx::to_vector<double>(fx::matmul(a, v)), (std::vector<double>{6, 15}));
  EXPECT_EQ(fx::matmul(v, b).shape(), (fx::Shape{2}));
  EXPECT_EQ(fx::matmul(v, v).shape(), fx::Shape{});
  EXPECT_EQ(fx::matmul(fx::zeros({3, 1, 4, 5}), fx::zeros({2, 5, 6})).shape(),
            (fx::Shape{3, 2, 4, 6}));
  EXPECT_EQ(fx::dot(v, v).item(), 3.0);
}

// f32 products go to oneDNN up to about 400^3 multiply-adds and to OpenBLAS above: both sides of
// that line, with each operand plain or transposed, against the f64 product (OpenBLAS dgemm).
TEST(Linalg, F32ProductsOnBothGemmLibrariesMatchF64) {
  fx::Generator gen(11);
  struct Case { int64_t m, n, k; };
  for (Case c : {Case{256, 128, 784}, Case{512, 300, 512}}) {  // 25.7M and 78.6M
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(::testing::Message() << c.m << "x" << c.k << " @ " << c.k << "x" << c.n
                                          << " ta=" << ta << " tb=" << tb);
        fx::Tensor a = ta ? fx::transpose(fx::randn({c.k, c.m}, gen)) : fx::randn({c.m, c.k}, gen);
        fx::Tensor b = tb ? fx::transpose(fx::randn({c.n, c.k}, gen)) : fx::randn({c.k, c.n}, gen);
        fx::Tensor y = fx::matmul(a, b);
        fx::Tensor want = fx::matmul(a.astype(fx::f64), b.astype(fx::f64));
        ASSERT_EQ(y.shape(), (fx::Shape{c.m, c.n}));
        // Entries are sums of k products of unit normals (size about sqrt(k)); f32 rounding of
        // such a sum stays far below 1e-3 * sqrt(k).
        const double tol = 1e-3 * std::sqrt(double(c.k));
        EXPECT_LT(fx::max(fx::abs(y.astype(fx::f64) - want)).item(), tol);
        EXPECT_GT(fx::max(fx::abs(want)).item(), 1.0);  // not a product of zeros
      }
  }
}

}  // namespace
