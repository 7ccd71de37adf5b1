// fx::sum / fx::squared_norm / fx::dot_product over ranges: one tape statement each with Real
// elements, the plain loop with any other number type; gradients against finite differences and
// the element-by-element loop, and the errors (lengths, Reals of another recording).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <complex>
#include <fluxion/ad/dual.hpp>
#include <fluxion/ad/preaccumulate.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/ad/scalar_derivatives.hpp>
#include <fluxion/ad/scalar_reduce.hpp>
#include <span>
#include <vector>

#include "fluxion/core/error.hpp"

namespace {

// A function of one vector using every reduction, sub-ranges, mixed double/Real products and
// an operand that appears in both ranges of a dot product.
template <class T>
T mix(const std::vector<T>& v) {
  const std::vector<double> w = {0.5, -1.5, 2.0, 0.25, 3.0};
  using std::exp;
  T e = exp(fx::dot_product(std::span(v.data(), 2), std::span(v.data() + 1, 2)));
  return fx::squared_norm(v) * fx::sum(v) + fx::dot_product(w, v) - fx::dot_product(v, w) * e +
         fx::dot_product(v, v);
}

// The same, element by element.
template <class T>
T mix_loops(const std::vector<T>& v) {
  const std::vector<double> w = {0.5, -1.5, 2.0, 0.25, 3.0};
  using std::exp;
  T sq = 0, s = 0, dw = 0, vv = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    sq += v[i] * v[i];
    s += v[i];
    dw += w[i] * v[i];
    vv += v[i] * v[i];
  }
  T e = exp(v[0] * v[1] + v[1] * v[2]);
  return sq * s + dw - dw * e + vv;
}

const std::vector<double> kPoint = {0.3, -0.2, 0.7, 0.1, -0.4};

// g against central differences of f (a function of one vector) at x.
template <class F>
void expect_central_differences(F f, const std::vector<double>& x, const std::vector<double>& g,
                                double tol) {
  ASSERT_EQ(g.size(), x.size());
  for (size_t j = 0; j < x.size(); ++j) {
    std::vector<double> a = x, b = x;
    a[j] += 1e-6;
    b[j] -= 1e-6;
    EXPECT_NEAR(g[j], (f(a) - f(b)) / 2e-6, tol) << j;
  }
}

}  // namespace

TEST(ScalarReduce, ValuesEqualTheLoopsOnDoubles) {
  EXPECT_NEAR(mix(kPoint), mix_loops(kPoint), 1e-14);
  std::array<double, 3> a = {1, 2, 3};
  EXPECT_EQ(fx::sum(a), 6.0);
  EXPECT_EQ(fx::squared_norm(a), 14.0);
  EXPECT_EQ(fx::dot_product(a, std::array<double, 3>{4, 5, 6}), 32.0);
  EXPECT_EQ(fx::sum(std::vector<double>{}), 0.0);  // empty: T{}
  std::vector<std::complex<double>> z = {{1, 2}, {3, -1}};
  EXPECT_EQ(fx::dot_product(z, z), std::complex<double>(1, 2) * std::complex<double>(1, 2) +
                                       std::complex<double>(3, -1) * std::complex<double>(3, -1));
}

TEST(ScalarReduce, GradientMatchesLoopsAndFiniteDifferences) {
  std::vector<double> g = fx::gradient([](const auto& v) { return mix(v); }, kPoint);
  std::vector<double> gl = fx::gradient([](const auto& v) { return mix_loops(v); }, kPoint);
  ASSERT_EQ(g.size(), kPoint.size());
  for (size_t i = 0; i < kPoint.size(); ++i) {
    EXPECT_NEAR(g[i], gl[i], 1e-12) << i;
    std::vector<double> a = kPoint, b = kPoint;
    const double h = 1e-6;
    a[i] += h;
    b[i] -= h;
    EXPECT_NEAR(g[i], (mix(a) - mix(b)) / (2 * h), 1e-7) << i;
  }
}

TEST(ScalarReduce, OneStatementPerReduction) {
  fx::ad::ScalarRecording rec;
  std::vector<fx::Real> v;
  for (double x : kPoint) v.push_back(rec.variable(x));
  const size_t statements = rec.tape().size(), operations = rec.tape().operations();
  fx::Real d = fx::dot_product(v, v);
  EXPECT_EQ(rec.tape().size(), statements + 1);
  EXPECT_EQ(rec.tape().operations(), operations + 2 * v.size());
  EXPECT_DOUBLE_EQ(d.value(), fx::dot_product(kPoint, kPoint));
  const auto& adj = rec.adjoints(d);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_DOUBLE_EQ(adj[v[i].index()], 2 * kPoint[i]);
}

TEST(ScalarReduce, ConstantsOnlyRecordNothing) {
  fx::ad::ScalarRecording rec;
  std::vector<fx::Real> c = {1.0, 2.0, 3.0};  // constants, not variables
  const size_t statements = rec.tape().size();
  fx::Real s = fx::sum(c), q = fx::squared_norm(c), d = fx::dot_product(c, c);
  EXPECT_EQ(rec.tape().size(), statements);
  EXPECT_EQ(s.index(), 0u);
  EXPECT_EQ(q.index(), 0u);
  EXPECT_EQ(d.index(), 0u);
  EXPECT_EQ(s.value(), 6.0);
  EXPECT_EQ(q.value(), 14.0);
  // With no recording at all, constants reduce to constants.
  EXPECT_EQ(fx::dot_product(std::vector<double>{1, 2}, std::vector<fx::Real>{3.0, 4.0}).value(),
            11.0);
}

TEST(ScalarReduce, InsidePreaccumulatedSumsAndHessians) {
  // Terms mix Reals made before the sum with the term's own.
  auto f = [](const auto& v) {
    using T = std::decay_t<decltype(v[0])>;
    return fx::preaccumulated_sum(4, [&](size_t i) {
      std::vector<T> shifted(v.size());
      for (size_t j = 0; j < v.size(); ++j) shifted[j] = v[j] + double(i);
      return T(fx::dot_product(shifted, v) + fx::squared_norm(shifted) * 0.1);
    });
  };
  expect_central_differences(f, kPoint, fx::gradient(f, kPoint), 1e-6);
  // Second derivatives run the functions on fx::Dual<fx::Real>: the generic loops.
  auto H = fx::hessian([](const auto& v) { return fx::squared_norm(v) * fx::sum(v); }, kPoint);
  double s = 0;
  for (double x : kPoint) s += x;
  for (size_t i = 0; i < kPoint.size(); ++i)
    for (size_t j = 0; j < kPoint.size(); ++j)
      EXPECT_NEAR(H[i][j], 2 * (i == j) * s + 2 * kPoint[i] + 2 * kPoint[j], 1e-12) << i << j;
}

TEST(ScalarReduce, Errors) {
  std::vector<double> a = {1, 2, 3}, b = {1, 2};
  EXPECT_THROW(fx::dot_product(a, b), fx::Error);
  try {
    fx::dot_product(a, b);
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("fx::dot_product"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("3 and 2"), std::string::npos);
  }
  // A Real of a finished recording, in each reduction.
  std::vector<fx::Real> stale;
  {
    fx::ad::ScalarRecording old;
    stale = {old.variable(1.0), old.variable(2.0)};
  }
  fx::ad::ScalarRecording rec;
  std::vector<fx::Real> v = {rec.variable(1.0), rec.variable(2.0)};
  EXPECT_THROW(fx::sum(stale), fx::Error);
  EXPECT_THROW(fx::squared_norm(stale), fx::Error);
  EXPECT_THROW(fx::dot_product(v, stale), fx::Error);
  EXPECT_THROW(fx::dot_product(stale, v), fx::Error);
  EXPECT_THROW(fx::dot_product(std::vector<double>{1, 2}, stale), fx::Error);
  // A term's Real used by a later term.
  fx::Real kept;
  EXPECT_THROW(fx::preaccumulated_sum(2,
                                      [&](size_t i) {
                                        fx::Real t = v[0] * double(i + 1);
                                        if (i == 1)
                                          return fx::Real(fx::dot_product(std::span(&kept, 1),
                                                                          std::span(v.data(), 1)));
                                        kept = t;
                                        return t;
                                      }),
               fx::Error);
}

// A dot of two Real ranges takes elements two at a time (an odd last one alone): every length
// from 0 to 9, ranges mixing constants and variables, and a Real of a finished recording at
// each position, in either range.
TEST(ScalarReduce, DotProductEveryLengthAndPosition) {
  for (size_t n = 0; n <= 9; ++n) {
    fx::ad::ScalarRecording rec;
    std::vector<fx::Real> a(n), b(n);
    double want = 0;
    for (size_t i = 0; i < n; ++i) {
      const double x = 0.5 + 0.25 * double(i), y = 1.5 - 0.5 * double(i);
      a[i] = rec.variable(x);
      b[i] = i % 3 == 1 ? fx::Real(y) : rec.variable(y);  // some constants among the variables
      want += x * y;
    }
    fx::Real d = fx::dot_product(a, b);
    EXPECT_DOUBLE_EQ(d.value(), want) << n;
    if (n == 0) continue;
    const auto& adj = rec.adjoints(d);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_DOUBLE_EQ(adj[a[i].index()], b[i].value()) << n << " " << i;
      if (b[i].index() != 0) {
        EXPECT_DOUBLE_EQ(adj[b[i].index()], a[i].value()) << n << " " << i;
      }
    }
  }
  fx::Real stale;
  {
    fx::ad::ScalarRecording old;
    stale = old.variable(3.0);
  }
  for (size_t n = 1; n <= 5; ++n)
    for (size_t at = 0; at < n; ++at) {
      fx::ad::ScalarRecording rec;
      std::vector<fx::Real> a(n), b(n);
      for (size_t i = 0; i < n; ++i) a[i] = rec.variable(1.0), b[i] = rec.variable(2.0);
      std::vector<fx::Real> a_bad = a, b_bad = b;
      a_bad[at] = stale;
      b_bad[at] = stale;
      EXPECT_THROW(fx::dot_product(a_bad, b), fx::Error) << n << " " << at;
      EXPECT_THROW(fx::dot_product(a, b_bad), fx::Error) << n << " " << at;
    }
}

namespace {

// y = L x by rows, the plain way (L packed by rows).
std::vector<double> lower_times(const std::vector<double>& packed, const std::vector<double>& x) {
  std::vector<double> y(x.size(), 0.0);
  for (size_t b = 0; b < x.size(); ++b)
    for (size_t a = 0; a <= b; ++a) y[b] += packed[b * (b + 1) / 2 + a] * x[a];
  return y;
}

// Σ_b w_b (L x)_b as generic code: one function of L and x for fx::gradient.
template <class T>
T weighted_lower_product(const std::vector<T>& packed, const std::vector<T>& x) {
  std::vector<T> y(x.size());
  fx::lower_triangular_product(packed, x, y);
  T s = 0;
  for (size_t b = 0; b < y.size(); ++b) s += (1.0 + 0.5 * double(b)) * y[b];
  return s;
}

}  // namespace

// Every size from 0 to 7 (rows of odd and even length), against the plain product for values
// and the closed form for the gradient: d/dL(b, a) = w_b x_a, d/dx_a = Σ_b w_b L(b, a).
TEST(ScalarReduce, LowerTriangularProductValuesAndGradient) {
  // Sizes up to 16 run unrolled code of their own; 17 and up the general loops.
  for (size_t n : {0, 1, 2, 3, 4, 5, 6, 7, 10, 15, 16, 17, 20}) {
    std::vector<double> packed(n * (n + 1) / 2), x(n);
    for (size_t i = 0; i < packed.size(); ++i)
      packed[i] = 0.3 + 0.1 * double(i % 7) - 0.05 * double(i);
    for (size_t i = 0; i < n; ++i) x[i] = 1.0 - 0.4 * double(i);
    std::vector<double> y(n);
    fx::lower_triangular_product(packed, x, y);  // doubles: the plain loops
    const std::vector<double> want = lower_times(packed, x);
    for (size_t b = 0; b < n; ++b) EXPECT_NEAR(y[b], want[b], 1e-15) << n << " " << b;

    auto [gl, gx] = fx::gradient(
        [](const auto& l, const auto& v) { return weighted_lower_product(l, v); }, packed, x);
    ASSERT_EQ(gl.size(), packed.size());
    ASSERT_EQ(gx.size(), x.size());
    for (size_t b = 0; b < n; ++b)
      for (size_t a = 0; a <= b; ++a)
        EXPECT_NEAR(gl[b * (b + 1) / 2 + a], (1.0 + 0.5 * double(b)) * x[a], 1e-14) << n;
    for (size_t a = 0; a < n; ++a) {
      double s = 0;
      for (size_t b = a; b < n; ++b) s += (1.0 + 0.5 * double(b)) * packed[b * (b + 1) / 2 + a];
      EXPECT_NEAR(gx[a], s, 1e-14) << n << " " << a;
    }
  }
}

// One statement per row, all in one block that holds each element once (a marker and n, x, then
// L: 1 + 3 + 6 operands); the adjoints of any one row, the first (which owns the block) or a
// later one, reach that row's elements only. Rows that hold only constants (x[0] a constant) are
// constants, as fx::dot_product of the row would be.
TEST(ScalarReduce, LowerTriangularProductStatementsAndConstantRows) {
  fx::ad::ScalarRecording rec;
  std::vector<fx::Real> packed, x;
  for (int i = 0; i < 6; ++i) packed.push_back(rec.variable(0.5 + i));
  for (int i = 0; i < 3; ++i) x.push_back(rec.variable(2.0 - i));
  std::vector<fx::Real> y(3);
  const size_t statements = rec.tape().size(), operations = rec.tape().operations();
  fx::lower_triangular_product(packed, x, y);
  EXPECT_EQ(rec.tape().size(), statements + 3);
  EXPECT_EQ(rec.tape().operations(), operations + 1 + 3 + 6);
  for (size_t b = 0; b < 3; ++b) EXPECT_EQ(y[b].index(), statements + 1 + b);
  for (size_t row = 0; row < 3; ++row) {
    const auto& adj = rec.adjoints(y[row]);
    for (size_t b = 0; b < 3; ++b)
      for (size_t a = 0; a <= b; ++a)
        EXPECT_DOUBLE_EQ(adj[packed[b * (b + 1) / 2 + a].index()], b == row ? x[a].value() : 0.0)
            << row << " " << b << " " << a;
    for (size_t a = 0; a < 3; ++a)
      EXPECT_DOUBLE_EQ(adj[x[a].index()], a <= row ? packed[row * (row + 1) / 2 + a].value() : 0.0)
          << row << " " << a;
  }

  // A constant x[0] and a constant first row: y[0] is a constant, the other rows statements.
  fx::ad::ScalarRecording rec2;
  std::vector<fx::Real> l2 = {3.0, rec2.variable(1.0), rec2.variable(2.0)};
  std::vector<fx::Real> x2 = {4.0, rec2.variable(5.0)};
  std::vector<fx::Real> y2(2);
  fx::lower_triangular_product(l2, x2, y2);
  EXPECT_EQ(y2[0].index(), 0u);
  EXPECT_DOUBLE_EQ(y2[0].value(), 12.0);
  EXPECT_NE(y2[1].index(), 0u);
  EXPECT_DOUBLE_EQ(y2[1].value(), 1.0 * 4.0 + 2.0 * 5.0);
  const auto& adj2 = rec2.adjoints(y2[1]);
  EXPECT_DOUBLE_EQ(adj2[l2[1].index()], 4.0);
  EXPECT_DOUBLE_EQ(adj2[l2[2].index()], 5.0);
  EXPECT_DOUBLE_EQ(adj2[x2[1].index()], 2.0);
}

// Inside the terms of a preaccumulated sum (L made before the sum, x by each term: two tape ids
// in one call), against finite differences.
TEST(ScalarReduce, LowerTriangularProductInPreaccumulatedSum) {
  auto f = [](const auto& l, const auto& v) {
    using T = std::decay_t<decltype(v[0])>;
    return fx::preaccumulated_sum(3, [&](size_t i) {
      std::vector<T> shifted(v.size()), y(v.size());
      for (size_t j = 0; j < v.size(); ++j) shifted[j] = v[j] - 0.5 * double(i);
      fx::lower_triangular_product(l, shifted, y);
      return T(fx::squared_norm(y));
    });
  };
  const std::vector<double> l = {1.2, -0.3, 0.8, 0.5, 0.1, 1.5}, v = {0.4, -1.1, 0.7};
  auto [gl, gv] = fx::gradient(f, l, v);
  expect_central_differences([&](const auto& a) { return f(a, v); }, l, gl, 1e-6);
  expect_central_differences([&](const auto& a) { return f(l, a); }, v, gv, 1e-6);
}

// Elements shared between L and x (and within L), and values used again after the product:
// the block's reverse step adds into the same adjoints from both sides.
TEST(ScalarReduce, LowerTriangularProductSharedElements) {
  auto f = [](const auto& v) {
    using T = std::decay_t<decltype(v[0])>;
    const std::vector<T> l = {v[0], v[1], v[0] * v[2], v[2], v[1], v[0]};
    const std::vector<T> x = {v[2], v[0], v[1]};
    std::vector<T> y(3);
    fx::lower_triangular_product(l, x, y);
    return T(y[0] * y[2] + y[1] * v[0] + fx::squared_norm(y));
  };
  const std::vector<double> v = {0.7, -1.3, 0.4};
  expect_central_differences(f, v, fx::gradient(f, v), 1e-7);
}

// Larger than a fresh tape's operation stack (2^17 operands): the reservation grows it.
TEST(ScalarReduce, LowerTriangularProductGrowsTheTape) {
  const size_t n = 520;  // 1 + 520 + 135460 operands in one block
  std::vector<double> packed(n * (n + 1) / 2), x(n);
  for (size_t i = 0; i < packed.size(); ++i) packed[i] = std::sin(0.001 * double(i));
  for (size_t i = 0; i < n; ++i) x[i] = std::cos(0.01 * double(i));
  auto [gl, gx] = fx::gradient(
      [](const auto& l, const auto& v) { return weighted_lower_product(l, v); }, packed, x);
  for (size_t b : {size_t(0), size_t(1), n / 2, n - 1}) {
    EXPECT_NEAR(gl[b * (b + 1) / 2], (1.0 + 0.5 * double(b)) * x[0], 1e-12) << b;
    EXPECT_NEAR(gl[b * (b + 1) / 2 + b], (1.0 + 0.5 * double(b)) * x[b], 1e-12) << b;
  }
  double s = 0;
  for (size_t b = 0; b < n; ++b) s += (1.0 + 0.5 * double(b)) * packed[b * (b + 1) / 2];
  EXPECT_NEAR(gx[0], s, 1e-9);
}

TEST(ScalarReduce, LowerTriangularProductErrors) {
  std::vector<double> packed = {1, 2, 3}, x = {1, 2}, y(2), short_y(1);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const fx::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string m = message([&] { fx::lower_triangular_product(std::vector<double>{1, 2}, x, y); });
  EXPECT_NE(m.find("fx::lower_triangular_product"), std::string::npos) << m;
  EXPECT_NE(m.find("packs into 3"), std::string::npos) << m;
  m = message([&] { fx::lower_triangular_product(packed, x, short_y); });
  EXPECT_NE(m.find("y has 1"), std::string::npos) << m;
  m = message([&] { fx::lower_triangular_product(packed, x, x); });
  EXPECT_NE(m.find("overlaps"), std::string::npos) << m;
  m = message([&] { fx::lower_triangular_product(packed, x, std::span(packed.data() + 1, 2)); });
  EXPECT_NE(m.find("overlaps"), std::string::npos) << m;

  // A Real of a finished recording anywhere in L or x throws, and y keeps what it held.
  fx::Real stale;
  {
    fx::ad::ScalarRecording old;
    stale = old.variable(3.0);
  }
  for (size_t at = 0; at < 9; ++at) {
    fx::ad::ScalarRecording rec;
    std::vector<fx::Real> l(6), v(3), out = {7.0, 8.0, 9.0};
    for (auto& e : l) e = rec.variable(1.5);
    for (auto& e : v) e = rec.variable(-0.5);
    (at < 6 ? l[at] : v[at - 6]) = stale;
    EXPECT_THROW(fx::lower_triangular_product(l, v, out), fx::Error) << at;
    EXPECT_EQ(out[0].value(), 7.0);
    EXPECT_EQ(out[2].value(), 9.0);
    if (at == 6) continue;
    v[0] = 2.0;  // a constant x[0]: the rows are recorded one by one
    EXPECT_THROW(fx::lower_triangular_product(l, v, out), fx::Error) << at;
    EXPECT_EQ(out[0].value(), 7.0);
    EXPECT_EQ(out[2].value(), 9.0);
  }
}
