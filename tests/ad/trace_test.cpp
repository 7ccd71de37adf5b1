// fx::trace (graph capture on meta tensors), Graph execution and printing, fx::cond and fx::scan.
#include <gtest/gtest.h>

#include <sstream>

#include <fluxion/fluxion.hpp>

namespace fx {
namespace {

void expect_near(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  auto g = to_vector<double>(got), w = to_vector<double>(want);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << i;
}

TEST(Trace, RecordsWithoutDataAndRunsToTheEagerValue) {
  Generator gen(1);
  Tensor x = randn({4, 3}, gen, f64), w = randn({3}, gen, f64);
  auto f = [](const Tensor& a, const Tensor& b) { return sum(tanh(a * b) + exp(a)); };
  const AllocatorStats before = allocator_stats();
  Graph g = trace(f, x, w);
  // Tracing ran on meta tensors: the only data it made is the graph itself (no tensor buffers
  // of the traced computation), and no kernel ran.
  EXPECT_EQ(allocator_stats().live_bytes, before.live_bytes);
  EXPECT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.outputs.size(), 1u);
  EXPECT_GE(g.equations.size(), 5u);
  const std::string text = g.to_string();
  EXPECT_NE(text.find("tanh("), std::string::npos) << text;
  EXPECT_NE(text.find("f64[4,3]"), std::string::npos) << text;
  EXPECT_NE(text.find("sum("), std::string::npos) << text;
  // New arguments of the same shapes.
  Tensor x2 = randn({4, 3}, gen, f64), w2 = randn({3}, gen, f64);
  expect_near(g(x2, w2)[0], f(x2, w2), 0);
}

TEST(Trace, AGradientInsideTheFunctionIsTraced) {
  Generator gen(2);
  auto model = nn::Chain(nn::Dense(5, 8, tanh, gen), nn::Dense(8, 2, identity, gen));
  Tensor x = randn({6, 5}, gen), y = randn({6, 2}, gen);
  auto step = [&](const Tensor& xb, const Tensor& yb) {
    auto grad = gradient([&](const auto& m) { return mse(m(xb), yb); }, model);
    return std::get<0>(grad.layers).weight;
  };
  Graph g = trace(step, x, y);
  std::ostringstream os;
  os << g;
  EXPECT_TRUE(os.str().find("matmul") != std::string::npos ||
              os.str().find("linear") != std::string::npos)
      << os.str();
  EXPECT_GE(g.constants.size(), 4u) << "the model's parameters are captured constants";
  Tensor x2 = randn({6, 5}, gen), y2 = randn({6, 2}, gen);
  expect_near(g(x2, y2)[0], step(x2, y2), 1e-6);
}

TEST(Trace, AGradientWithRespectToATracedArgument) {
  Generator gen(9);
  Tensor x = randn({4}, gen, f64);
  auto df = [](const Tensor& v) {
    return gradient([](const Tensor& u) { return sum(tanh(u) * u); }, v);
  };
  auto tangent = [](const Tensor& v) {
    return jvp([](const Tensor& u) { return sum(exp(u)); }, v, ones_like(v)).second;
  };
  Graph g = trace(df, x), h = trace(tangent, x);
  Tensor x2 = randn({4}, gen, f64);
  expect_near(g(x2)[0], df(x2), 0);
  expect_near(h(x2)[0], tangent(x2), 0);
}

// A tensor the function captures is one constant however often it is used; a trace taken
// inside a differentiated function (the tape under the trace) leaves the gradient intact, and
// running the graph there is differentiated like the eager function.
TEST(Trace, CapturedTensorsAndATraceInsideAGradient) {
  Generator gen(4);
  Tensor x = randn({5}, gen, f64), w = randn({5}, gen, f64);
  auto f = [&](const Tensor& v) { return sum(tanh(v * w) + w * v * w); };
  Graph g = trace(f, x);
  EXPECT_EQ(g.constants.size(), 1u) << g;
  Tensor got = gradient(
      [&](const Tensor& v) {
        Graph inner = trace(f, v);
        return inner(v)[0];
      },
      x);
  expect_near(got, gradient(f, x), 0);
}

// Abstract evaluation of one primitive: the output types from the shape rule, on the inputs'
// device, without data; under a tape nothing is recorded; bad shapes give evaluation's error.
TEST(AbstractEval, TypesFromTheShapeRuleAlone) {
  Tensor x = randn({8, 3}, f64), w = randn({3, 4}, f64);
  const AllocatorStats before = allocator_stats();
  std::vector<AbstractValue> t = abstract_eval(matmul_p, {x, w});
  EXPECT_EQ(allocator_stats().system_allocs, before.system_allocs);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].shape, Shape({8, 4}));
  EXPECT_EQ(t[0].dtype, f64);
  EXPECT_EQ(t[0].device, Device::cpu);
  auto rec = ad::Recording::begin();
  Tensor xt = rec.track(x);
  (void)abstract_eval(matmul_p, {xt, w});
  EXPECT_EQ(rec.num_nodes(), 0u);
  rec.end();
  EXPECT_THROW((void)abstract_eval(matmul_p, {w, w}), Error);
}

TEST(Trace, ValueDependentControlFlowIsAClearError) {
  Tensor x = ones({3}, f64);
  auto f = [](const Tensor& a) {
    if (sum(a).item() > 0) return a * 2;
    return a;
  };
  try {
    trace(f, x);
    FAIL() << "expected fx::Error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("item"), std::string::npos) << m;
    EXPECT_NE(m.find("fx::cond"), std::string::npos) << m;
    EXPECT_NE(m.find("fx::scan"), std::string::npos) << m;
  }
}

TEST(Trace, AGraphRefusesArgumentsOfOtherShapes) {
  Graph g = trace([](const Tensor& a) { return a * 2; }, zeros({2, 3}));
  EXPECT_THROW(g(zeros({3, 2})), Error);
  EXPECT_THROW(g(zeros({2, 3}, f64)), Error);
  EXPECT_THROW(g.run({}), Error);
}

TEST(Trace, InPlaceUpdatesOfTracedValuesAreRecorded) {
  auto f = [](const Tensor& a) {
    Tensor b = a * 3.0;
    b += a;
    b *= a;
    return b;
  };
  Tensor x = tensor({1, -2, 0.5}, f64);
  Graph g = trace(f, x);
  expect_near(g(x)[0], f(x), 0);
  expect_near(g(x)[0], x * x * 4, 1e-15);
  Tensor captured = zeros({3}, f64);
  EXPECT_THROW(trace([&](const Tensor& a) { return captured += a; }, x), Error);
}

TEST(Cond, EagerPicksOneBranchAndIsDifferentiable) {
  Tensor x = tensor({1, 2, 3}, f64);
  auto f = [](const Tensor& v) {
    return sum(cond(
        sum(v) > 0.0, [](const Tensor& a) { return a * a; }, [](const Tensor& a) { return -a; },
        v));
  };
  EXPECT_DOUBLE_EQ(f(x).item(), 14);
  EXPECT_DOUBLE_EQ(f(-x).item(), 6);
  expect_near(gradient(f, x), x * 2, 1e-12);
  expect_near(gradient(f, -x), full({3}, -1, f64), 1e-12);
}

TEST(Cond, TracedRecordsBothBranchesAndSelects) {
  auto f = [](const Tensor& v) {
    return cond(
        sum(v) > 0.0, [](const Tensor& a) { return a * a; }, [](const Tensor& a) { return -a; }, v);
  };
  Tensor x = tensor({1, 2, 3}, f64);
  Graph g = trace(f, x);
  expect_near(g(x)[0], f(x), 0);
  expect_near(g(-x)[0], f(-x), 0);  // the other branch, from the same graph
  // Differentiable through the traced graph too.
  auto via_graph = [&](const Tensor& v) { return sum(g(v)[0]); };
  expect_near(gradient(via_graph, x), x * 2, 1e-12);
  expect_near(gradient(via_graph, -x), full({3}, -1, f64), 1e-12);
}

TEST(Cond, BranchesOfDifferentShapesAreAnErrorWhenTraced) {
  auto f = [](const Tensor& v) {
    return cond(
        sum(v) > 0.0, [](const Tensor& a) { return a; }, [](const Tensor& a) { return sum(a); }, v);
  };
  EXPECT_THROW(trace(f, ones({3})), Error);
}

TEST(Scan, RunningSumEagerTracedAndDifferentiated) {
  Generator gen(3);
  Tensor xs = randn({5, 3}, gen, f64);
  auto f = [](const Tensor& h0, const Tensor& seq) {
    auto [last, ys] = scan(
        [](const Tensor& c, const Tensor& row) {
          Tensor next = tanh(c + row);
          return std::pair{next, next * 2};
        },
        h0, seq);
    return sum(ys) + sum(last);
  };
  Tensor h0 = zeros({3}, f64);
  // Eager against a hand-written loop.
  Tensor c = h0, total = scalar(0, f64);
  for (int64_t t = 0; t < 5; ++t) {
    c = tanh(c + select(xs, 0, t));
    total = total + sum(c * 2);
  }
  total = total + sum(c);
  expect_near(f(h0, xs), total, 1e-14);
  Graph g = trace(f, h0, xs);
  expect_near(g(h0, xs)[0], f(h0, xs), 0);
  auto r = testing::gradcheck([&](const std::vector<Tensor>& a) { return f(a[0], a[1]); },
                              testing::GradcheckOptions{}, std::vector<Tensor>{h0, xs});
  EXPECT_TRUE(r) << r;
}

}  // namespace
}  // namespace fx
