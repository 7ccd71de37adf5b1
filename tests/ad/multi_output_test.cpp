// Primitives with several outputs (Primitive::num_outputs, fx::bind_n) through every
// transformation: reverse mode (first and second order, one output unused), forward mode,
// vmap (with a batching rule and example by example), tracing and the meta device.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include <fluxion/fluxion.hpp>

namespace fx {
namespace {

// sincos(x) = (sin x, cos x, the quadrant floor(2x / pi) as i32): two differentiable outputs and
// a non-floating one, a residual that is never tracked. The forward is a shape rule and a loop
// over the data (none on the meta device); the rules are written in public ops, so they
// differentiate again.
void sincos_forward(const Primitive&, std::span<const Tensor> in, Attrs, Tensor* out) {
  const Tensor& x = in[0];
  const Device dev = output_device(in);
  out[0] = Tensor::empty(x.shape(), x.dtype(), dev);
  out[1] = Tensor::empty(x.shape(), x.dtype(), dev);
  out[2] = Tensor::empty(x.shape(), i32, dev);
  if (!dev.has_data()) return;
  const std::vector<double> v = to_vector<double>(untagged_view(x));
  std::vector<double> s(v.size()), c(v.size());
  std::vector<int32_t> q(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    s[i] = std::sin(v[i]);
    c[i] = std::cos(v[i]);
    q[i] = int32_t(std::floor(2 * v[i] / std::numbers::pi));
  }
  out[0] = astype(from_vector(s, x.shape()), x.dtype());
  out[1] = astype(from_vector(c, x.shape()), x.dtype());
  out[2] = from_vector(q, x.shape());
}

Primitive sincos_p{.name = "sincos",
                   .saves = saves::output,
                   .num_outputs = 3,
                   .forward_n = sincos_forward,
                   .pullback_n =
                       [](const PullbackArgs& a, const Tensor* dy, Tensor* dx) {
                         // d sin = cos, d cos = -sin; an undefined cotangent is a zero.
                         Tensor g;
                         if (dy[0].defined()) g = dy[0] * a.output(1);
                         if (dy[1].defined())
                           g = g.defined() ? g - dy[1] * a.output(0) : -(dy[1] * a.output(0));
                         dx[0] = g;
                       },
                   .jvp_n =
                       [](const JvpArgs& a, const Tensor* dx, Tensor* dy) {
                         if (!dx[0].defined()) return;
                         dy[0] = dx[0] * a.output(1);
                         dy[1] = -(dx[0] * a.output(0));
                       },
                   .batch_n =
                       [](const Primitive& p, const BatchArgs& a, Tensor* out) {
                         // Elementwise: the batch axis is one more axis.
                         auto r = bind_n<3>(p, {a.in[0]}, a.attrs);
                         for (int k = 0; k < 3; ++k) out[k] = r[size_t(k)];
                       }};

// The same primitive without a batching rule: vmap runs it example by example.
Primitive sincos_loop_p = [] {
  Primitive p = sincos_p;
  p.name = "sincos_loop";
  p.batch_n = nullptr;
  return p;
}();

Tensor f(const Tensor& x) {
  auto [s, c, q] = bind_n<3>(sincos_p, {x});
  return sum(s * s * c + 3 * c);
}
// d/dx (s^2 c + 3c) = 2 s c^2 - s^3 - 3 s
Tensor df(const Tensor& x) {
  Tensor s = sin(x), c = cos(x);
  return 2 * s * c * c - s * s * s - 3 * s;
}

void expect_near(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  auto g = to_vector<double>(got), w = to_vector<double>(want);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << i;
}

TEST(MultiOutput, ForwardGivesEveryOutput) {
  Tensor x = from_vector(std::vector<double>{-2.0, 0.5, 2.0}, {3});
  auto [s, c, q] = bind_n<3>(sincos_p, {x});
  expect_near(s, sin(x), 1e-15);
  expect_near(c, cos(x), 1e-15);
  EXPECT_EQ(q.dtype(), i32);
  EXPECT_EQ(to_vector<int32_t>(q), (std::vector<int32_t>{-2, 0, 1}));
}

TEST(MultiOutput, GradientMatchesTheClosedFormAndFiniteDifferences) {
  Generator gen(3);
  Tensor x = randn({5}, gen, f64);
  expect_near(gradient(f, x), df(x), 1e-12);
  auto r = testing::gradcheck(f, testing::GradcheckOptions{.order = 2}, x);
  EXPECT_TRUE(r) << r;
}

TEST(MultiOutput, AnUnusedOutputHasAZeroCotangent) {
  Generator gen(4);
  Tensor x = randn({4}, gen, f64);
  auto only_cos = [](const Tensor& x) { return sum(bind_n<3>(sincos_p, {x})[1]); };
  auto only_sin = [](const Tensor& x) { return sum(bind_n<3>(sincos_p, {x})[0]); };
  expect_near(gradient(only_cos, x), -sin(x), 1e-14);
  expect_near(gradient(only_sin, x), cos(x), 1e-14);
}

TEST(MultiOutput, SecondOrderDifferentiatesTheRulesAgain) {
  Generator gen(5);
  Tensor x = randn({3}, gen, f64);
  // Reverse over reverse and forward over reverse: the Hessian of sum(s^2 c + 3c) is diagonal,
  // d/dx (2 s c^2 - s^3 - 3 s) = 2 c^3 - 4 s^2 c - 3 s^2 c - 3 c.
  Tensor s = sin(x), c = cos(x);
  Tensor want = linalg::diag_embed(2 * c * c * c - 7 * s * s * c - 3 * c);
  expect_near(hessian_reverse(f, x), want, 1e-12);
  expect_near(hessian(f, x), want, 1e-12);
}

TEST(MultiOutput, ForwardModeGivesEachOutputsTangent) {
  Generator gen(6);
  Tensor x = randn({4}, gen, f64), v = randn({4}, gen, f64);
  auto [y, dy] = jvp([](const Tensor& x) { return bind_n<3>(sincos_p, {x})[1]; }, x, v);
  expect_near(y, cos(x), 1e-15);
  expect_near(dy, -sin(x) * v, 1e-14);
  auto [y2, dy2] = jvp(f, x, v);
  expect_near(dy2, sum(df(x) * v), 1e-12);
}

TEST(MultiOutput, VmapEqualsALoopWithARuleAndExampleByExample) {
  Generator gen(7);
  Tensor xs = randn({4, 3}, gen, f64);
  for (const Primitive* p : {&sincos_p, &sincos_loop_p}) {
    SCOPED_TRACE(p->name);
    auto g = [p](const Tensor& x) {
      auto [s, c, q] = bind_n<3>(*p, {x});
      return std::make_tuple(s * c, astype(q, f64));
    };
    auto [a, b] = vmap(g)(xs);
    for (int64_t i = 0; i < 4; ++i) {
      auto [ai, bi] = g(select(xs, 0, i));
      expect_near(select(a, 0, i), ai, 0);
      expect_near(select(b, 0, i), bi, 0);
    }
    // Per-example gradients through it.
    Tensor per = vmap([](const Tensor& x) { return gradient(f, x); })(xs);
    for (int64_t i = 0; i < 4; ++i) expect_near(select(per, 0, i), df(select(xs, 0, i)), 1e-12);
  }
}

TEST(MultiOutput, TraceRecordsOneEquationWithEveryOutput) {
  Generator gen(8);
  Tensor x = randn({3}, gen, f64);
  const AllocatorStats before = allocator_stats();
  Graph g = trace(f, x);
  EXPECT_EQ(allocator_stats().live_bytes, before.live_bytes);
  const std::string text = g.to_string();
  EXPECT_NE(text.find("f64[3], %2: f64[3], %3: i32[3] = sincos(%0)"), std::string::npos) << text;
  Tensor x2 = randn({3}, gen, f64);
  expect_near(g(x2)[0], f(x2), 0);
  // A gradient inside the traced function: its pullback is traced too.
  Graph dg = trace([](const Tensor& x) { return gradient(f, x); }, x);
  expect_near(dg(x2)[0], df(x2), 1e-12);
}

TEST(MultiOutput, MetaTensorsGetShapesAndNoData) {
  Tensor m = Tensor::empty({2, 5}, f32, Device::meta);
  const AllocatorStats before = allocator_stats();
  auto [s, c, q] = bind_n<3>(sincos_p, {m});
  EXPECT_EQ(allocator_stats().live_bytes, before.live_bytes);
  EXPECT_EQ(s.device(), Device::meta);
  EXPECT_EQ(c.shape(), (Shape{2, 5}));
  EXPECT_EQ(q.dtype(), i32);
}

TEST(MultiOutput, TheWrongNumberOfOutputsIsAnError) {
  Tensor x = ones({2});
  EXPECT_THROW((void)bind_n<2>(sincos_p, {x}), Error);
  EXPECT_THROW((void)bind_n<2>(add_p, {x, x}), Error);
}

}  // namespace
}  // namespace fx
