// Rows for matmul (2-d, vectors, batched with broadcasting, empty inner dimension), dot and
// linear, and for the fx::linalg (LAPACK) primitives; linear against the ops it fuses.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include <fluxion/linalg.hpp>

#include "op_rows.hpp"

namespace fx::rows {

namespace {
// a + (n + 1) I for a (..., n, n) with entries in [-1, 1]: strictly diagonally dominant (its
// symmetric part too, with a positive diagonal), so solves, determinants and cholesky are well
// conditioned on every layout the table makes (an expanded 2-d input repeats one row).
Tensor dominant(const Tensor& a) {
  const int64_t n = a.shape()[a.ndim() - 1];
  return a + double(n + 1) * linalg::eye(n, a.dtype(), a.device());
}
// (..., r, c) -> (..., r c).
Tensor flat2(const Tensor& x) {
  Shape s(std::span<const int64_t>(x.shape().data(), x.ndim() - 2));
  s.push_back(x.shape()[x.ndim() - 2] * x.shape()[x.ndim() - 1]);
  return reshape(x, s);
}
const char* const kLapack =
    "LAPACK is the only implementation of the factorisations: no reference kernel";
const Range kUnit = {-1, 1};

// The fx::linalg primitives, through their public functions. Where a result is defined only up
// to signs (eigenvectors, singular vectors), the row returns what does not depend on them
// (squared entries), so that gradients exist and layouts compare.
std::vector<Row> lapack_rows() {
  return {
      {"linalg_solve",
       [](const Args& a) { return linalg::solve(dominant(a[0]), a[1]); },
       {.cases = pairs({{{3, 4, 4}, {3, 4, 2}},
                        {{2, 3, 3}, {2, 3}},  // a batch of vectors
                        {{5, 5}, {5, 3}},
                        {{2, 1, 3, 3}, {4, 3, 1}},  // batch axes broadcast
                        {{0, 3, 3}, {0, 3, 2}}}),
        .range = kUnit,
        .no_reference = kLapack}},
      {"linalg_inv",
       un([](const Tensor& a) { return linalg::inv(dominant(a)); }),
       {.cases = shapes({{3, 4, 4}, {5, 5}, {2, 1, 1}}), .range = kUnit, .no_reference = kLapack}},
      {"linalg_triangular_solve",
       [](const Args& a) { return linalg::triangular_solve(dominant(a[0]), a[1]); },
       {.cases = pairs({{{3, 4, 4}, {3, 4, 2}}, {{5, 5}, {5}}, {{2, 3, 3}, {3, 2}}}),
        .range = kUnit,
        .no_reference = kLapack}},
      {"linalg_triangular_solve_upper",
       [](const Args& a) { return linalg::triangular_solve(dominant(a[0]), a[1], true); },
       {.cases = pairs({{{3, 4, 4}, {3, 4, 2}}, {{5, 5}, {5, 1}}}),
        .range = kUnit,
        .no_reference = kLapack}},
      {"linalg_logabsdet",
       un([](const Tensor& a) { return std::get<1>(linalg::slogdet(dominant(a))); }),
       {.cases = shapes({{3, 4, 4}, {5, 5}, {2, 2, 3, 3}, {4, 1, 1}, {2, 0, 0}}),
        .range = kUnit,
        .no_reference = kLapack}},
      {"linalg_det_sign",
       un([](const Tensor& a) { return std::get<0>(linalg::slogdet(a)); }),
       {.cases = shapes({{5, 4, 4}, {5, 5}, {4, 1, 1}, {2, 0, 0}}),
        .order = 0,
        .why = "the sign of det is piecewise constant: no derivative",
        .no_reference = kLapack}},
      {"linalg_complex_logdet",
       un([](const Tensor& a) { return linalg::logdet(dominant(a)); }),
       {.cases = shapes({{3, 4, 4}, {5, 5}, {2, 0, 0}}),
        .range = kUnit,
        .dtypes = {c64, c128},
        .complex = true,
        .no_reference = kLapack}},
      {"linalg_cholesky",
       un([](const Tensor& a) { return linalg::cholesky(dominant(a)); }),
       {.cases = shapes({{3, 4, 4}, {5, 5}, {2, 1, 1}, {0, 3, 3}}),
        .range = kUnit,
        .no_reference = kLapack}},
      // Q over R: (m + n, n) for m >= n, where the reduced QR is differentiable.
      {"linalg_qr",
       un([](const Tensor& a) {
         auto [q, r] = linalg::qr(a);
         return concat({q, r}, -2);
       }),
       {.cases = shapes({{3, 5, 3}, {4, 4}, {2, 3, 1}, {0, 3, 2}}), .no_reference = kLapack}},
      {"linalg_qr_wide",
       un([](const Tensor& a) {
         auto [q, r] = linalg::qr(a);
         return concat({q, r}, -1);
       }),
       {.cases = shapes({{3, 2, 4}, {2, 5}}),
        .order = 0,
        .why = "the reduced QR of a wide matrix has no derivative here (rows >= columns)",
        .no_reference = kLapack}},
      // Eigenvalues over the squared eigenvectors: (n + 1, n).
      {"linalg_eigh",
       un([](const Tensor& a) {
         auto [w, v] = linalg::eigh(a);
         return concat({unsqueeze(w, -2), v * v}, -2);
       }),
       {.cases = shapes({{3, 4, 4}, {5, 5}, {2, 1, 1}, {0, 3, 3}}), .no_reference = kLapack}},
      // U squared, s, V^H squared, flat: (m k + k + k n).
      {"linalg_svd",
       un([](const Tensor& a) {
         auto [u, sv, vh] = linalg::svd(a);
         return concat({flat2(u * u), sv, flat2(vh * vh)}, -1);
       }),
       {.cases = shapes({{3, 4, 3}, {2, 3, 5}, {4, 4}, {0, 2, 3}}), .no_reference = kLapack}},
  };
}
}  // namespace

std::vector<Row> linalg_rows() {
  std::vector<Row> rows = lapack_rows();
  std::vector<Row> products = {
      {"matmul",
       bin(fx::matmul),
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
      {"matmul_narrow",
       bin(fx::matmul),
       {.cases = pairs({{{3, 300, 10}, {3, 10, 10}},
                        {{70, 16}, {16, 12}},
                        {{2, 41, 7}, {7, 1}},
                        {{2, 3, 9, 4}, {4, 5}}})}},
      {"matmul_narrow_transposed_right",
       [](const Args& a) { return fx::matmul(a[0], fx::transpose(a[1], -2, -1)); },
       {.cases = pairs({{{4, 130, 10}, {4, 10, 10}}, {{33, 3}, {11, 3}}})}},
      {"dot", bin(fx::dot), {.cases = pairs({{{17}, {17}}, {{1}, {1}}, {{0}, {0}}})}},
      // linear(x, w, b, act) = act(x @ w^T + b): a 3-d x folds into one product; empty batches
      // and an empty inner dimension (the output is then act(b)) run too.
      {"linear",
       [](const Args& a) { return fx::linear(a[0], a[1], a[2]); },
       {.cases = {{In{{45, 65}}, In{{33, 65}}, In{{33}}},
                  {In{{7}}, In{{3, 7}}, In{{3}}},
                  {In{{2, 3, 5}}, In{{4, 5}}, In{{4}}},
                  {In{{0, 4}}, In{{3, 4}}, In{{3}}},
                  {In{{5, 0}}, In{{3, 0}}, In{{3}}}}}},
      {"linear_relu",
       [](const Args& a) { return fx::linear(a[0], a[1], a[2], Epilogue::relu); },
       {.cases = {{In{{9, 12}}, In{{6, 12}}, In{{6}}}, {In{{2, 3, 5}}, In{{4, 5}}, In{{4}}}}}},
      {"linear_tanh",
       [](const Args& a) { return fx::linear(a[0], a[1], a[2], Epilogue::tanh); },
       {.cases = {{In{{9, 12}}, In{{6, 12}}, In{{6}}}}}},
      {"linear_sigmoid",
       [](const Args& a) { return fx::linear(a[0], a[1], a[2], Epilogue::sigmoid); },
       {.cases = {{In{{9, 12}}, In{{6, 12}}, In{{6}}}}}},
      {"linear_without_bias",
       [](const Args& a) { return fx::linear(a[0], a[1], Tensor(), Epilogue::relu); },
       {.cases = pairs({{{9, 12}, {6, 12}}, {{40, 3}, {2, 3}}})}},
  };
  for (Row& r : products) rows.push_back(std::move(r));
  return rows;
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
  struct Case {
    int64_t m, n, k;
  };
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

// The fused layer against the ops it fuses, through the CPU kernels, on products large enough
// to split across threads (and a narrow and a tiny one): the forward bit for bit for identity
// and relu (tanh and sigmoid within their polynomials' ULP), every gradient against the composed
// ops' gradient.
using fx::Epilogue;

TEST(Linalg, LinearMatchesTheComposedOps) {
  fx::Generator gen(5);
  struct Case {
    int64_t m, n, k;
  };
  for (Case c : {Case{128, 256, 96}, Case{96, 64, 200}, Case{128, 10, 64}, Case{3, 4, 5}})
    for (auto act : {Epilogue::identity, Epilogue::relu, Epilogue::tanh, Epilogue::sigmoid}) {
      SCOPED_TRACE(::testing::Message()
                   << c.m << "x" << c.k << " -> " << c.n << " epilogue " << int(act));
      fx::Tensor x = fx::randn({c.m, c.k}, gen), w = fx::randn({c.n, c.k}, gen) * 0.1,
                 b = fx::randn({c.n}, gen);
      auto composed = [act](const fx::Tensor& x, const fx::Tensor& w, const fx::Tensor& b) {
        fx::Tensor z = fx::matmul(x, fx::transpose(w)) + b;
        return act == Epilogue::relu      ? fx::relu(z)
               : act == Epilogue::tanh    ? fx::tanh(z)
               : act == Epilogue::sigmoid ? fx::sigmoid(z)
                                          : z;
      };
      auto fused = [act](const fx::Tensor& x, const fx::Tensor& w, const fx::Tensor& b) {
        return fx::linear(x, w, b, act);
      };
      fx::Tensor y = fused(x, w, b), want = composed(x, w, b);
      const bool exact = act == Epilogue::identity || act == Epilogue::relu;
      if (exact) EXPECT_EQ(fx::to_vector<float>(y), fx::to_vector<float>(want));
      else EXPECT_LT(fx::max(fx::abs(y - want)).item(), 1e-6);
      auto loss = [](auto f) {
        return [f](const fx::Tensor& x, const fx::Tensor& w, const fx::Tensor& b) {
          fx::Tensor y = f(x, w, b);
          return fx::sum(y * y);  // a cotangent that differs per element
        };
      };
      auto [gx, gw, gb] = fx::gradient(loss(fused), x, w, b);
      auto [hx, hw, hb] = fx::gradient(loss(composed), x, w, b);
      for (auto [g, h] : {std::pair{gx, hx}, {gw, hw}, {gb, hb}}) {
        ASSERT_EQ(g.shape(), h.shape());
        const double scale = 1 + fx::max(fx::abs(h)).item();
        EXPECT_LT(fx::max(fx::abs(g - h)).item(), 1e-5 * scale);
      }
      EXPECT_GT(fx::max(fx::abs(gw)).item(), 0.0);  // a gradient that did flow
    }
}

}  // namespace
