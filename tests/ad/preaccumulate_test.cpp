// fx::preaccumulated_sum: gradients equal the plain loop's, the tape keeps one statement per sum,
// and misuse (a term's Real used after its term, a variable made in a term) is an error.
#include <gtest/gtest.h>

#include <cmath>
#include <fluxion/ad/preaccumulate.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>

#include <random>
#include <stdexcept>
#include <vector>
#include "ad_test_helpers.hpp"

namespace {

struct Point {
  double x, y;
};

// A least-squares-with-softplus loss over points: each term reads every parameter, keeps
// temporaries in an outer scratch vector (as ADBench's GMM does), and loops and branches.
template <class T>
T loss_term(const std::vector<T>& p, const Point& pt, std::vector<T>& scratch) {
  using std::exp, std::log;
  for (size_t j = 0; j < p.size(); ++j) scratch[j] = p[j] * std::pow(pt.x, double(j));
  T s = 0;
  for (const T& v : scratch) s += v;
  T r = s - pt.y;
  return r > 0 ? r * r + log(1 + exp(-r)) : 0.5 * r * r;
}

template <class T>
T loss(const std::vector<T>& p, const std::vector<Point>& pts, bool preaccumulate) {
  std::vector<T> scratch(p.size());
  auto term = [&](size_t i) { return loss_term(p, pts[i], scratch); };
  T head = p[0] * p[1];  // something recorded before the sum, read again after it
  T data = 0;
  if (preaccumulate) {
    data = fx::preaccumulated_sum(pts.size(), term);
  } else {
    for (size_t i = 0; i < pts.size(); ++i) data += term(i);
  }
  return data * head + sin(data) + head;
}

std::vector<Point> points(int n) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<Point> pts(n);
  for (auto& q : pts) q = {u(rng), u(rng)};
  return pts;
}

}  // namespace

TEST(PreaccumulatedSum, GradientEqualsPlainLoopAndFiniteDifferences) {
  const auto pts = points(200);
  std::vector<double> p = {0.3, -0.7, 0.2, 0.9};
  auto with = fx::gradient([&](const auto& q) { return loss(q, pts, true); }, p);
  auto without = fx::gradient([&](const auto& q) { return loss(q, pts, false); }, p);
  ASSERT_EQ(with.size(), p.size());
  for (size_t j = 0; j < p.size(); ++j) {
    EXPECT_NEAR(with[j], without[j], 1e-11 * std::max(1.0, std::abs(without[j]))) << j;
    std::vector<double> a = p, b = p;
    const double h = 1e-6;
    a[j] += h;
    b[j] -= h;
    double fd = (loss(a, pts, true) - loss(b, pts, true)) / (2 * h);
    EXPECT_NEAR(with[j], fd, 1e-6 * std::max(1.0, std::abs(fd))) << j;
  }
  // On doubles it is the plain sum.
  EXPECT_NEAR(loss(p, pts, true), loss(p, pts, false), 1e-12);
}

TEST(PreaccumulatedSum, TapeKeepsOneStatementForTheWholeSum) {
  const auto pts = points(500);
  fx::ad::ScalarRecording rec;
  std::vector<fx::Real> p;
  for (double v : {0.3, -0.7, 0.2}) p.push_back(rec.variable(v));
  std::vector<fx::Real> scratch(p.size());
  const size_t before = rec.tape().size();
  fx::Real s =
      fx::preaccumulated_sum(pts.size(), [&](size_t i) { return loss_term(p, pts[i], scratch); });
  EXPECT_EQ(rec.tape().size(), before + 1);
  EXPECT_EQ(rec.tape().operations(), p.size());  // one operand per parameter the terms read
  // Its adjoints are the summed term gradients.
  const auto& adj = rec.adjoints(s);
  for (size_t j = 0; j < p.size(); ++j) {
    double want = 0;
    for (const auto& pt : pts) {
      fx::ad::ScalarRecording inner;
      std::vector<fx::Real> q;
      for (const auto& v : p) q.push_back(inner.variable(v.value()));
      std::vector<fx::Real> sc(q.size());
      want += inner.adjoints(fx::Real(loss_term(q, pt, sc)))[q[j].index()];
    }
    EXPECT_NEAR(adj[p[j].index()], want, 1e-10 * std::max(1.0, std::abs(want))) << j;
  }
}

TEST(PreaccumulatedSum, TermsMayReturnConstantsOrEarlierValues) {
  auto f = [](const auto& q) {
    using T = std::decay_t<decltype(q[0])>;
    return fx::preaccumulated_sum(6, [&](size_t i) -> T { return i % 3 == 0 ? T(2.0) : q[i % 2]; });
  };
  auto g = fx::gradient(f, std::vector<double>{1.5, -2.0});
  // i = 1, 2, 4, 5 read q[1], q[0], q[0], q[1].
  EXPECT_DOUBLE_EQ(g[0], 2.0);
  EXPECT_DOUBLE_EQ(g[1], 2.0);
  EXPECT_DOUBLE_EQ(f(std::vector<double>{1.5, -2.0}), 4.0 + 2 * 1.5 + 2 * -2.0);
}

TEST(PreaccumulatedSum, NestedSumsAndRepeatedSumsAreCorrect) {
  auto f = [](const auto& q) {
    auto outer = fx::preaccumulated_sum(4, [&](size_t i) {
      return fx::preaccumulated_sum(
          3, [&](size_t j) { return q[0] * q[1] * double(i + j) + sin(q[0] * j); });
    });
    auto again = fx::preaccumulated_sum(5, [&](size_t i) { return outer * q[1] * double(i); });
    return outer + again;
  };
  std::vector<double> q = {0.4, 1.3};
  auto g = fx::gradient(f, q);
  for (size_t j = 0; j < q.size(); ++j) {
    std::vector<double> a = q, b = q;
    a[j] += 1e-6;
    b[j] -= 1e-6;
    double fd = (fx::value(f(a)) - fx::value(f(b))) / 2e-6;
    EXPECT_NEAR(g[j], fd, 1e-6 * std::max(1.0, std::abs(fd))) << j;
  }
}

TEST(PreaccumulatedSum, RealsThatEscapeTheirTermAreRejected) {
  fx::ad::ScalarRecording rec;
  fx::Real x = rec.variable(2.0);
  fx::Real kept;
  fx::Real s = fx::preaccumulated_sum(3, [&](size_t i) {
    fx::Real t = x * double(i + 1);
    kept = t;
    return t;
  });
  EXPECT_DOUBLE_EQ(s.value(), 12.0);
  EXPECT_THROW(
      {
        fx::Real bad = kept * x;
        (void)bad;
      },
      fx::Error);
  // The recording is still usable, and the sum's gradient is right.
  EXPECT_DOUBLE_EQ(rec.adjoints(s)[x.index()], 6.0);
}

TEST(PreaccumulatedSum, VariablesInsideATermAreRejected) {
  fx::ad::ScalarRecording rec;
  fx::Real x = rec.variable(2.0);
  EXPECT_THROW(fx::preaccumulated_sum(2, [&](size_t) { return x * rec.variable(1.0); }), fx::Error);
}

TEST(PreaccumulatedSum, AnExceptionInATermLeavesTheRecordingClean) {
  fx::ad::ScalarRecording rec;
  fx::Real x = rec.variable(3.0);
  fx::Real y = x * x;
  EXPECT_THROW(fx::preaccumulated_sum(5,
                                      [&](size_t i) -> fx::Real {
                                        if (i == 3) throw std::runtime_error("term failed");
                                        return y * x;
                                      }),
               std::runtime_error);
  fx::Real s = fx::preaccumulated_sum(2, [&](size_t) { return y * x; });  // 2 x^3
  EXPECT_DOUBLE_EQ(rec.adjoints(s)[x.index()], 54.0);
}

TEST(PreaccumulatedSum, WithoutARecordingItIsAPlainSum) {
  fx::Real c = 2.0;  // a constant: no gradient is running
  fx::Real s = fx::preaccumulated_sum(4, [&](size_t i) { return c * double(i); });
  EXPECT_DOUBLE_EQ(s.value(), 12.0);
  EXPECT_EQ(s.index(), 0u);
}

TEST(PreaccumulatedSum, TemporariesFollowTheSameRulesAsNamedReals) {
  fx::ad::ScalarRecording rec;
  fx::Real x = rec.variable(2.0), y = rec.variable(5.0);
  auto before = x * y;   // made before the sum: terms may use it
  auto escaped = x * x;  // replaced inside a term by one of the term's values
  fx::Real s = fx::preaccumulated_sum(2, [&](size_t i) {
    fx::Real t = x * double(i + 1);
    escaped = t * 1.0;
    return before * t;  // a fresh temporary returned from the term
  });
  EXPECT_DOUBLE_EQ(s.value(), 10.0 * 2 + 10.0 * 4);
  EXPECT_THROW(
      {
        fx::Real bad = escaped * 2.0;
        (void)bad;
      },
      fx::Error);
  const auto& adj = rec.adjoints(s);  // s = x y (x + 2x) = 3 x^2 y
  EXPECT_DOUBLE_EQ(adj[x.index()], 6 * 2.0 * 5.0);
  EXPECT_DOUBLE_EQ(adj[y.index()], 3 * 2.0 * 2.0);
}

TEST(PreaccumulatedSum, OnTensorsItIsThePlainSum) {
  fx::Tensor x = fx::tensor({0.5, -1.5, 2.0}, fx::f64);
  auto f = [](const fx::Tensor& t) {
    return fx::preaccumulated_sum(3, [&](size_t i) { return fx::sum(t * t * double(i + 1)); });
  };
  fx::Tensor g = fx::gradient(f, x);  // d/dt Σ_i (i+1) Σ t² = 12 t
  fx::ad_test::expect_near(g, {6.0, -18.0, 24.0});
}
