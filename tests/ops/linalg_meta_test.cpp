// Abstract evaluation of fx::linalg: the LAPACK primitives' forwards are shape rules and a
// dispatch, so fx::nn::outputsize and fx::trace run functions built on solve, svd, eigh and the
// rest on the meta device, without data and without a LAPACK call, and the traced graphs then
// compute what eager evaluation does.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <tuple>

#include <fluxion/ad/trace.hpp>
#include <fluxion/ad/vmap.hpp>
#include <fluxion/fluxion.hpp>
#include <fluxion/nn/outputsize.hpp>
#include <fluxion/testing.hpp>

namespace {

using fx::Tensor;

const fx::Primitive* const kLapackPrims[] = {&fx::linalg_solve_p,
                                             &fx::linalg_triangular_solve_p,
                                             &fx::linalg_logabsdet_p,
                                             &fx::linalg_det_sign_p,
                                             &fx::linalg_complex_logdet_p,
                                             &fx::linalg_cholesky_p,
                                             &fx::linalg_qr_p,
                                             &fx::linalg_eigh_p,
                                             &fx::linalg_svd_p};

// LAPACK kernel calls counted by a scope, over every linalg primitive.
int64_t lapack_calls(const fx::testing::BackendScope& scope) {
  int64_t n = 0;
  for (const fx::Primitive* p : kLapackPrims)
    for (int rank = 0; rank < fx::kMaxBackends; ++rank) n += scope.kernel_calls(*p, rank);
  return n;
}

// A layer that solves, decomposes and takes determinants: (B, n, n) -> (B, 3n + 1).
struct SpectralLayer {
  Tensor w;  // (n, n)
  FX_FIELDS(w)
  Tensor operator()(const Tensor& x) const {
    const int64_t n = w.shape()[0];
    Tensor a = fx::matmul(x, w) + double(2 * n) * fx::linalg::eye(n, x.dtype());
    Tensor y = fx::linalg::solve(a, x);                                        // (B, n, n)
    auto [u, s, vh] = fx::linalg::svd(y);                                      // s (B, n)
    auto [ev, v] = fx::linalg::eigh(fx::matmul(y, fx::transpose(y, -2, -1)));  // ev (B, n)
    auto [q, r] = fx::linalg::qr(a);
    Tensor l = fx::linalg::cholesky(fx::matmul(a, fx::transpose(a, -2, -1)));
    Tensor diag = fx::linalg::diagonal(r) + fx::linalg::diagonal(l);         // (B, n)
    Tensor logdet = fx::unsqueeze(std::get<1>(fx::linalg::slogdet(a)), -1);  // (B, 1)
    return fx::concat({s, ev, diag, logdet}, -1);
  }
};

TEST(LinalgMeta, OutputsizeOfALayerUsingSolveSvdAndEighAllocatesNoData) {
  fx::Generator gen(3);
  const SpectralLayer layer{fx::randn({4, 4}, gen)};
  {
    fx::testing::BackendScope scope;
    const fx::AllocatorStats before = fx::allocator_stats();
    EXPECT_EQ(fx::nn::outputsize(layer, {32, 4, 4}), (fx::Shape{32, 13}));
    EXPECT_EQ(fx::nn::outputsize(layer, {2, 7, 4, 4}, fx::f64), (fx::Shape{2, 7, 13}));
    const fx::AllocatorStats after = fx::allocator_stats();
    EXPECT_EQ(after.live_bytes, before.live_bytes);
    EXPECT_EQ(lapack_calls(scope), 0) << "a LAPACK kernel ran on meta tensors";
  }
  // The same layer on data gives that shape (and does call LAPACK).
  fx::testing::BackendScope scope;
  EXPECT_EQ(layer(fx::randn({5, 4, 4}, gen)).shape(), (fx::Shape{5, 13}));
  EXPECT_GT(lapack_calls(scope), 0);
}

TEST(LinalgMeta, ShapesAndDtypesOfEveryPrimitiveOnMetaTensors) {
  auto meta = [](fx::Shape s, fx::DType t = fx::f64) { return fx::empty(s, t, fx::Device::meta); };
  Tensor a = meta({2, 5, 3}), sq = meta({2, 3, 3});
  auto [u, s, vh] = fx::linalg::svd(a);
  EXPECT_EQ(u.shape(), (fx::Shape{2, 5, 3}));
  EXPECT_EQ(s.shape(), (fx::Shape{2, 3}));
  EXPECT_EQ(vh.shape(), (fx::Shape{2, 3, 3}));
  auto [w, v] = fx::linalg::eigh(meta({4, 6, 6}, fx::c64));
  EXPECT_EQ(w.dtype(), fx::f32);  // real eigenvalues of complex matrices
  EXPECT_EQ(v.dtype(), fx::c64);
  EXPECT_EQ(v.shape(), (fx::Shape{4, 6, 6}));
  EXPECT_EQ(fx::linalg::solve(sq, meta({3})).shape(), (fx::Shape{2, 3}));  // broadcast vector
  EXPECT_EQ(fx::linalg::inv(sq).device(), fx::Device::meta);
  auto [q, r] = fx::linalg::qr(meta({3, 2, 4}));
  EXPECT_EQ(q.shape(), (fx::Shape{3, 2, 2}));
  EXPECT_EQ(r.shape(), (fx::Shape{3, 2, 4}));
  auto [sign, logabs] = fx::linalg::slogdet(meta({2, 3, 3}, fx::c128));
  EXPECT_EQ(sign.dtype(), fx::c128);
  EXPECT_EQ(logabs.dtype(), fx::f64);
  EXPECT_EQ(logabs.shape(), (fx::Shape{2}));
  EXPECT_EQ(fx::linalg::pinv(a).shape(), (fx::Shape{2, 3, 5}));
  EXPECT_EQ(fx::linalg::lstsq(a, meta({2, 5, 4})).shape(), (fx::Shape{2, 3, 4}));
  // Gradients through the decompositions are shapes too.
  Tensor g = fx::gradient([](const Tensor& x) { return fx::sum(fx::linalg::svdvals(x)); }, a);
  EXPECT_EQ(g.shape(), a.shape());
  EXPECT_EQ(g.device(), fx::Device::meta);
  // Bad shapes are the same fx::Error on meta tensors as on data.
  auto message = [](auto f) {
    try {
      f();
    } catch (const fx::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] {
              (void)fx::linalg::solve(meta({3, 3}), meta({4, 1}));
            }),
            message([&] {
              (void)fx::linalg::solve(fx::zeros({3, 3}), fx::zeros({4, 1}));
            }));
  EXPECT_NE(message([&] {
              (void)fx::linalg::cholesky(meta({3, 4}));
            }).find("fx::linalg::cholesky"),
            std::string::npos);
}

// A primitive bound directly (as a transformation would) checks its operands in its shape rule.
TEST(LinalgMeta, ShapeRulesRefuseOperandsTheKernelsCannotTake) {
  Tensor a = fx::empty({2, 3, 3}, fx::f64, fx::Device::meta);
  Tensor b = fx::empty({2, 4, 1}, fx::f64, fx::Device::meta);
  try {
    (void)fx::bind(fx::linalg_solve_p, {a, b});
    ADD_FAILURE() << "no error";
  } catch (const fx::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("fx::linalg::solve"), std::string::npos) << m;
    EXPECT_NE(m.find("(2, 4, 1)"), std::string::npos) << m;
  }
  EXPECT_THROW((void)fx::bind(fx::linalg_cholesky_p, {b}), fx::Error);  // not square
}

TEST(LinalgMeta, TraceRunsNoKernelAndTheGraphEqualsEager) {
  fx::Generator gen(8);
  const SpectralLayer layer{fx::randn({4, 4}, gen, fx::f64)};
  Tensor x = fx::randn({3, 4, 4}, gen, fx::f64);
  auto f = [&](const Tensor& x) { return layer(x); };
  fx::Graph g;
  {
    fx::testing::BackendScope scope;
    g = fx::trace(f, x);
    EXPECT_EQ(lapack_calls(scope), 0) << "tracing ran a LAPACK kernel";
  }
  const std::string text = g.to_string();
  for (const char* name : {"linalg_solve", "linalg_svd", "linalg_eigh", "linalg_qr",
                           "linalg_cholesky", "linalg_logabsdet"})
    EXPECT_NE(text.find(name), std::string::npos) << name << " missing from\n" << text;
  const Tensor want = f(x), got = g(x)[0];
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_TRUE(fx::allclose(got, want, 1e-12, 1e-12)) << fx::max(fx::abs(got - want)).item();
  // On new arguments of the same shape too.
  Tensor x2 = fx::randn({3, 4, 4}, gen, fx::f64);
  EXPECT_TRUE(fx::allclose(g(x2)[0], f(x2), 1e-12, 1e-12));
}

// The backward passes of the rules are traced as well: a gradient inside the traced function,
// with respect to a matrix it captures (a constant of the graph), of a loss on the traced b.
TEST(LinalgMeta, TracedGradientsThroughSolveSvdAndEighEqualEager) {
  fx::Generator gen(9);
  Tensor a = fx::randn({2, 4, 4}, gen, fx::f64) + 4.0 * fx::linalg::eye(4, fx::f64);
  Tensor b = fx::randn({2, 4, 2}, gen, fx::f64);
  auto grad = [&](const Tensor& b) {
    auto loss = [&](const Tensor& a) {
      auto [w, v] = fx::linalg::eigh(a);
      return fx::sum(fx::linalg::solve(a, b) * b) + fx::sum(fx::linalg::svdvals(a)) +
             fx::sum(w * w) + fx::sum(fx::linalg::logdet(fx::matmul(a, fx::transpose(a, -2, -1))));
    };
    return fx::gradient(loss, a);
  };
  fx::Graph g;
  {
    fx::testing::BackendScope scope;
    g = fx::trace(grad, b);
    EXPECT_EQ(lapack_calls(scope), 0);
  }
  for (int k = 0; k < 2; ++k) {
    Tensor bk = k == 0 ? b : fx::randn({2, 4, 2}, gen, fx::f64);
    const Tensor want = grad(bk), got = g(bk)[0];
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_TRUE(fx::allclose(got, want, 1e-12, 1e-12)) << fx::max(fx::abs(got - want)).item();
  }
}

// vmap of a function on meta tensors: the batching rule and the shape rule together.
TEST(LinalgMeta, VmapOnMetaTensors) {
  Tensor a = fx::empty({5, 3, 4, 4}, fx::f32, fx::Device::meta);
  Tensor y = fx::vmap([](const Tensor& x) { return fx::linalg::svdvals(fx::linalg::inv(x)); })(a);
  EXPECT_EQ(y.shape(), (fx::Shape{5, 3, 4}));
  EXPECT_EQ(y.device(), fx::Device::meta);
}

}  // namespace
