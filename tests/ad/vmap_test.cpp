// fx::vmap: batched application equals a loop over the batch, per-example gradients, nesting
// with itself and with gradient / jvp / trace, and its errors. The per-primitive check (vmap of
// every row of the primitive table equals a loop) is in tests/ops/primitives_test.cpp.
#include <gtest/gtest.h>

#include <fluxion/ad/custom.hpp>
#include <fluxion/ad/forward.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/ad/trace.hpp>
#include <fluxion/ad/vmap.hpp>
#include <fluxion/data/idx.hpp>
#include <fluxion/linalg.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace fx {
namespace {

void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-12) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  const double err = max(abs(got - want)).item();
  const double scale = std::max(1.0, max(abs(want)).item());
  EXPECT_LE(err, tol * scale) << "got " << got << "\nwant " << want;
}

Tensor loop(int64_t n, const std::function<Tensor(int64_t)>& f) {
  std::vector<Tensor> parts;
  for (int64_t b = 0; b < n; ++b) parts.push_back(f(b));
  return stack(parts, 0);
}

TEST(Vmap, MapsAxisZeroAndSharesUnmappedArguments) {
  auto f = [](const Tensor& x, const Tensor& w) { return sum(tanh(x * w)) + x * 2.0; };
  Tensor xs = randn({5, 3}, f64), w = randn({3}, f64);
  Tensor got = vmap(f, {0, unmapped})(xs, w);
  expect_close(got, loop(5, [&](int64_t b) { return f(select(xs, 0, b), w); }));
}

TEST(Vmap, InAxesAndOutAxesChooseTheMappedAxes) {
  auto f = [](const Tensor& x, const Tensor& y) { return matmul(x, y); };
  Tensor xs = randn({2, 4, 3}, f64), ys = randn({3, 5, 4}, f64);  // map axis 1 and axis 2
  Tensor got = vmap(f, {1, 2}, {2})(xs, ys);                      // (2, 5, 4): batch last
  Tensor want = loop(4, [&](int64_t b) { return f(select(xs, 1, b), select(ys, 2, b)); });
  expect_close(got, permute(want, {1, 2, 0}));
}

struct Pair {
  Tensor a, b;
  FX_FIELDS(a, b)
};

TEST(Vmap, StructArgumentsAndResultsMapLeafByLeaf) {
  auto f = [](const Pair& p) { return Pair{p.a * p.b, sum(p.a)}; };
  Pair ps{randn({4, 2}, f64), randn({4, 2}, f64)};
  Pair got = vmap(f)(ps);
  expect_close(got.a, ps.a * ps.b);
  expect_close(got.b, sum(ps.a, {1}));
}

TEST(Vmap, ResultsTheBatchSharesAreExpanded) {
  Tensor w = randn({3}, f64);
  Tensor got = vmap([&](const Tensor&) { return w * 2.0; })(randn({4, 7}, f64));
  expect_close(got, expand(unsqueeze(w * 2.0, 0), {4, 3}));
}

// Per-example gradients of a small MLP: vmap(gradient) equals the loop of single gradients.
TEST(Vmap, PerExampleGradientsOfAnMlpEqualALoop) {
  manual_seed(3);
  auto model = nn::Chain(nn::Dense(randn({5, 6}, f64), randn({5}, f64), relu),
                         nn::Dense(randn({3, 5}, f64), randn({3}, f64)));
  Tensor xs = randn({7, 6}, f64), ys = astype(rand({7}, f64) * 3.0, i64);
  auto grad_one = [&](const Tensor& x, const Tensor& y) {
    return gradient(
        [&](const auto& m) {
          return logitcrossentropy(m(reshape(x, {1, 6})), reshape(y, {1}));
        },
        model);
  };
  auto got = vmap(grad_one)(xs, ys);
  for (int64_t b = 0; b < 7; ++b) {
    auto want = grad_one(select(xs, 0, b), select(ys, 0, b));
    zip_tensors([&](Tensor& g, Tensor& w) { expect_close(select(g, 0, b), w); }, got, want);
  }
}

// The acceptance figure: the Fashion-MNIST MLP (784-256-128-10) in f32 on real images, each
// gradient leaf within 1e-6 of the loop's (relative to the leaf's largest entry).
TEST(Vmap, PerExampleGradientsOfTheFashionMnistMlpInF32) {
  auto train = data::fashion_mnist();
  const int64_t n = 16;
  Tensor xs = slice(train.images, 0, 0, n), ys = slice(train.labels, 0, 0, n);
  Generator gen(1);
  auto model = nn::Chain(nn::Dense(784, 256, relu, gen), nn::Dense(256, 128, relu, gen),
                         nn::Dense(128, 10, identity, gen));
  auto grad_one = [&](const Tensor& x, const Tensor& y) {
    return gradient(
        [&](const auto& m) {
          return logitcrossentropy(m(reshape(x, {1, 784})), reshape(y, {1}));
        },
        model);
  };
  auto got = vmap(grad_one)(xs, ys);
  for (int64_t b = 0; b < n; ++b) {
    auto want = grad_one(select(xs, 0, b), select(ys, 0, b));
    zip_tensors(
        [&](Tensor& g, Tensor& w) {
          ASSERT_EQ(g.dtype(), f32);
          expect_close(select(g, 0, b), w, 1e-6);
        },
        got, want);
  }
}

TEST(Vmap, NestedVmapEqualsADoubleLoop) {
  auto f = [](const Tensor& x, const Tensor& y) { return sum(x * y) * exp(x); };
  Tensor xs = randn({3, 4}, f64), ys = randn({5, 4}, f64);
  // Outer over x, inner over y: an outer product of applications, (3, 5, 4).
  Tensor got =
      vmap([&](const Tensor& x) { return vmap([&](const Tensor& y) { return f(x, y); })(ys); })(xs);
  Tensor want = loop(3, [&](int64_t i) {
    return loop(5, [&](int64_t j) { return f(select(xs, 0, i), select(ys, 0, j)); });
  });
  expect_close(got, want);
}

TEST(Vmap, GradientOfAVmappedFunctionEqualsGradientOfTheLoop) {
  Tensor xs = randn({6, 3}, f64), w = randn({3}, f64);
  auto f = [](const Tensor& x, const Tensor& w) { return sum(sin(x * w)) * sum(w * w); };
  Tensor got = gradient([&](const Tensor& v) { return sum(vmap(f, {0, unmapped})(xs, v)); }, w);
  Tensor want = gradient(
      [&](const Tensor& v) {
        Tensor s = zeros({}, f64);
        for (int64_t b = 0; b < 6; ++b) s = s + f(select(xs, 0, b), v);
        return s;
      },
      w);
  expect_close(got, want);
  // The batched value itself differentiated: gradient with respect to xs.
  Tensor gx = gradient([&](const Tensor& x) { return sum(vmap(f, {0, unmapped})(x, w)); }, xs);
  Tensor gx_want = loop(6, [&](int64_t b) {
    return gradient([&](const Tensor& x) { return f(x, w); }, select(xs, 0, b));
  });
  expect_close(gx, gx_want);
}

// A tape between two vmaps: per-example gradients (outer vmap) of a loss that maps over the
// rows of a matrix itself (inner vmap), against a double loop.
TEST(Vmap, GradientBetweenTwoVmapsEqualsALoop) {
  Tensor ws = randn({4, 3}, f64), rows = randn({5, 3}, f64);
  auto loss = [&](const Tensor& w) {
    return sum(vmap([&](const Tensor& r) { return tanh(sum(r * w)) * sum(w * w); })(rows));
  };
  Tensor got = vmap([&](const Tensor& w) { return gradient(loss, w); })(ws);
  Tensor want = loop(4, [&](int64_t b) {
    return gradient(
        [&](const Tensor& w) {
          Tensor s = zeros({}, f64);
          for (int64_t j = 0; j < 5; ++j) s = s + tanh(sum(select(rows, 0, j) * w)) * sum(w * w);
          return s;
        },
        select(ws, 0, b));
  });
  expect_close(got, want);
}

TEST(Vmap, SecondOrderInsideVmap) {
  auto f = [](const Tensor& x) { return sum(x * x * x); };
  Tensor xs = randn({4, 3}, f64);
  Tensor got = vmap([&](const Tensor& x) { return hessian(f, x); })(xs);  // (4, 3, 3)
  expect_close(got, loop(4, [&](int64_t b) { return hessian(f, select(xs, 0, b)); }));
}

TEST(Vmap, JvpInsideVmapGivesAJacobianWithOnePrimalPass) {
  auto f = [](const Tensor& x) { return tanh(matmul(ones({2, 3}, f64), x)) * select(x, 0, 0); };
  Tensor x = randn({3}, f64);
  Tensor basis = linalg::eye(3, f64);
  Tensor cols = vmap([&](const Tensor& v) { return jvp(f, x, v).second; })(basis);  // (3, 2)
  expect_close(transpose(cols, 0, 1), jacobian_forward(f, x));
}

TEST(Vmap, PullbackUnderVmapGivesTheJacobian) {
  auto f = [](const Tensor& x) { return sin(x) * sum(x); };
  Tensor x = randn({4}, f64);
  auto [y, back] = pullback(f, x);
  Tensor rows = vmap([&](const Tensor& e) { return back(e); })(linalg::eye(4, f64));
  expect_close(rows, jacobian(f, x));
}

// A run-time rule (fx::custom_rule) has no batching rule: vmap applies it example by example.
TEST(Vmap, PrimitivesWithoutARuleRunExampleByExample) {
  auto softplus = custom_rule(
      "softplus_rule", [](const Tensor& x) { return log1p(exp(x)); },
      [](const Tensor& x, const Tensor&, const Tensor& dy) { return dy * sigmoid(x); });
  Tensor xs = randn({3, 4}, f64), ws = randn({4}, f64);
  auto f = [&](const Tensor& x, const Tensor& w) { return sum(softplus(x * w)); };
  expect_close(vmap(f, {0, unmapped})(xs, ws),
               loop(3, [&](int64_t k) { return f(select(xs, 0, k), ws); }), 1e-12);
  auto g = [&](const Tensor& x) { return gradient([&](const Tensor& w) { return f(x, w); }, ws); };
  expect_close(vmap(g)(xs), loop(3, [&](int64_t k) { return g(select(xs, 0, k)); }), 1e-12);
}

// Linear algebra takes leading batch axes, so vmap runs each factorisation once on the stacked
// matrices: the values and the gradients equal a loop over the batch.
TEST(Vmap, LinearAlgebraBatchesAsALeadingAxis) {
  Tensor as = randn({3, 4, 4}, f64), bs = randn({3, 4, 2}, f64), shared = randn({4, 4}, f64);
  auto spd = [](const Tensor& a) {
    return matmul(a, transpose(a, 0, 1)) + linalg::eye(4, f64) * 4.0;
  };
  auto all = [&](const Tensor& a, const Tensor& b) {
    Tensor l = linalg::cholesky(spd(a));
    auto [q, r] = linalg::qr(a);
    auto [w, v] = linalg::eigh(spd(a));
    auto [u, s, vh] = linalg::svd(a);
    return sum(linalg::solve(spd(a), b)) + sum(linalg::triangular_solve(l, b, false)) +
           linalg::logdet(spd(a)) + sum(matmul(q, r)) + sum(abs(r)) + sum(w) + sum(abs(v)) +
           sum(s) + sum(abs(u) * abs(vh));
  };
  expect_close(vmap(all)(as, bs),
               loop(3, [&](int64_t k) { return all(select(as, 0, k), select(bs, 0, k)); }), 1e-9);
  // A matrix the batch shares, right-hand sides per example.
  expect_close(vmap(all, {unmapped, 0})(shared, bs),
               loop(3, [&](int64_t k) { return all(shared, select(bs, 0, k)); }), 1e-9);
  // Per-example gradients through the factorisations.
  auto grad_a = [&](const Tensor& a, const Tensor& b) {
    return gradient([&](const Tensor& a) { return all(a, b); }, a);
  };
  expect_close(vmap(grad_a)(as, bs),
               loop(3, [&](int64_t k) { return grad_a(select(as, 0, k), select(bs, 0, k)); }),
               1e-8);
}

TEST(Vmap, VmapInsideTraceIsTraced) {
  Tensor xs = randn({5, 3}, f64), w = randn({3}, f64);
  auto f = [](const Tensor& x, const Tensor& w) { return exp(x) * w; };
  Graph g = trace(
      [&](const Tensor& x, const Tensor& v) {
        return vmap(f, {0, unmapped})(x, v);
      },
      xs, w);
  expect_close(g(xs, w)[0], exp(xs) * w);
}

TEST(Vmap, InPlaceWriteIntoABatchedValueRebindsIt) {
  Tensor xs = randn({4, 3}, f64);
  Tensor got = vmap([](const Tensor& x) {
    Tensor y = x * 2.0;
    y += x;
    return y;
  })(xs);
  expect_close(got, xs * 3.0);
}

TEST(Vmap, Errors) {
  Tensor xs = randn({4, 3}, f64);
  // Value-dependent control flow.
  EXPECT_THROW(vmap([](const Tensor& x) { return sum(x).item() > 0 ? x : -x; })(xs), Error);
  try {
    vmap([](const Tensor& x) { return sum(x).item() > 0 ? x : -x; })(xs);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vmap"), std::string::npos) << e.what();
  }
  // Mapped axes of different sizes.
  EXPECT_THROW(vmap([](const Tensor& a, const Tensor& b) { return a + b; })(xs, randn({5, 3}, f64)),
               Error);
  // Nothing mapped.
  EXPECT_THROW(vmap([](const Tensor& a) { return a; }, {unmapped})(xs), Error);
  // A batched value kept past the end of its vmap.
  Tensor kept;
  vmap([&](const Tensor& x) {
    kept = x;
    return x;
  })(xs);
  EXPECT_THROW(kept + 1.0, Error);
  // Writing a batched value into a tensor the batch shares.
  Tensor shared = zeros({3}, f64);
  EXPECT_THROW(vmap([&](const Tensor& x) {
                 shared += x;
                 return x;
               })(xs),
               Error);
}

}  // namespace
}  // namespace fx
