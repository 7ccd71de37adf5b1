// fx::checkpointed: the same gradients as without it (f64, to 1e-12, and gradcheck to second
// order), a tape that holds one node per checkpointed call, a measured fall in peak memory, the
// function run again in the backward pass, and the errors.
//
// How memory is measured: the caching allocator asks the system for a buffer only when its cache
// has no free one of that size class, so after fx::empty_cache() the number of system
// allocations a gradient call makes is the high-water mark of buffers alive at once. The
// recurrence's tensors are all (64, 32) f64, so that count is the peak of live activations.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <vector>

#include <fluxion/ad/checkpoint.hpp>
#include <fluxion/ad/custom.hpp>
#include <fluxion/ad/forward.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

using fx::Tensor;

std::vector<double> vec(const Tensor& t) { return fx::to_vector<double>(t); }

void expect_near(const Tensor& got, const Tensor& want, double tol) {
  auto g = vec(got), w = vec(want);
  ASSERT_EQ(g.size(), w.size());
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g[i] - w[i]));
  EXPECT_LE(worst, tol);
}

// h <- tanh(W h + x_t) for steps [t0, t1).
Tensor steps(const Tensor& w, Tensor h, const std::vector<Tensor>& xs, int t0, int t1) {
  for (int t = t0; t < t1; ++t) h = fx::tanh(fx::matmul(w, h) + xs[size_t(t)]);
  return h;
}

struct RecurrenceRun {
  Tensor gw, gh;
  size_t tape_nodes;        // nodes on the tape fx::pullback recorded
  uint64_t nodes_recorded;  // all nodes recorded, recomputation included
  uint64_t peak_buffers;    // system allocations from an empty cache: buffers alive at once
};

// Gradients of sum(h_100) with respect to W and h0, 100 steps, checkpointed in `segments`
// segments (0: not checkpointed).
RecurrenceRun run_recurrence(const Tensor& w, const Tensor& h0, const std::vector<Tensor>& xs,
                             int segments) {
  const int n = int(xs.size());
  auto loss = [&](const Tensor& w, const Tensor& h0) {
    if (segments == 0) return fx::sum(steps(w, h0, xs, 0, n));
    Tensor h = h0;
    const int len = n / segments;
    for (int s = 0; s < segments; ++s) {
      h = fx::checkpointed(
          [&xs, s, len](const Tensor& w, const Tensor& h) {
            return steps(w, h, xs, s * len, (s + 1) * len);
          },
          w, h);
    }
    return fx::sum(h);
  };
  fx::empty_cache();
  fx::ad::reset_tape_stats();
  const uint64_t allocs0 = fx::allocator_stats().system_allocs;
  RecurrenceRun r;
  {
    auto [y, back] = fx::pullback(loss, w, h0);
    r.tape_nodes = back.recording().num_nodes();
    std::tie(r.gw, r.gh) = back(fx::ones_like(y));
  }
  r.peak_buffers = fx::allocator_stats().system_allocs - allocs0;
  r.nodes_recorded = fx::ad::tape_stats().nodes_recorded;
  return r;
}

TEST(Checkpoint, RecurrenceGradientsAreUnchangedAndPeakMemoryFalls) {
  const int n = 100;
  Tensor w = fx::testing::randn({64, 64}, {.seed = 1}) * (0.9 / 8);
  Tensor h0 = fx::testing::randn({64, 32}, {.seed = 2});
  std::vector<Tensor> xs;
  for (int t = 0; t < n; ++t)
    xs.push_back(fx::testing::randn({64, 32}, {.seed = 100 + uint64_t(t)}));

  RecurrenceRun plain = run_recurrence(w, h0, xs, 0);
  RecurrenceRun seg10 = run_recurrence(w, h0, xs, 10);
  RecurrenceRun each = run_recurrence(w, h0, xs, 100);
  for (const RecurrenceRun* r : {&seg10, &each}) {
    expect_near(r->gw, plain.gw, 1e-12);
    expect_near(r->gh, plain.gh, 1e-12);
  }
  // Without checkpointing the tape holds 3 nodes a step (matmul, add, tanh) and sum; with it,
  // one node per segment and sum. The backward pass records each segment again, one at a time.
  EXPECT_EQ(plain.tape_nodes, size_t(3 * n + 1));
  EXPECT_EQ(seg10.tape_nodes, size_t(10 + 1));
  EXPECT_EQ(each.tape_nodes, size_t(n + 1));
  EXPECT_EQ(seg10.nodes_recorded, seg10.tape_nodes + 3u * n);  // the recomputation
  std::cout << "[ measure  ] tape nodes: plain " << plain.tape_nodes << ", 10 segments "
            << seg10.tape_nodes << " (+ " << (seg10.nodes_recorded - seg10.tape_nodes) / 10
            << " re-recorded per segment, one segment at a time), every step " << each.tape_nodes
            << "\n[ measure  ] peak live buffers: plain " << plain.peak_buffers << ", 10 segments "
            << seg10.peak_buffers << ", every step " << each.peak_buffers << " ("
            << 64 * 32 * 8 / 1024 << " KiB each)\n";
  if (fx::allocator_caches()) {  // sanitizer builds allocate every buffer from the system
    // Plain keeps every step's activation (~100); 10 segments keep 10 boundaries plus one
    // segment's 10 during its backward pass (~20 + temporaries).
    EXPECT_GE(plain.peak_buffers, uint64_t(n));
    EXPECT_LE(seg10.peak_buffers * 3, plain.peak_buffers);
  }
}

struct Layer {
  Tensor w, b;
  double scale = 1.5;
  FX_FIELDS(w, b)
  Tensor operator()(const Tensor& x) const { return fx::tanh(fx::matmul(x, w) + b) * scale; }
};

TEST(Checkpoint, StructArgumentsPassGradcheckToSecondOrder) {
  Layer layer{fx::testing::randn({4, 3}, {.seed = 3}), fx::testing::randn({3}, {.seed = 4})};
  Tensor x = fx::testing::randn({2, 4}, {.seed = 5});
  auto f = [](const Layer& l, const Tensor& x) {
    return fx::sin(fx::checkpointed([](const Layer& l, const Tensor& x) { return l(x); }, l, x));
  };
  auto r = fx::testing::gradcheck(f, layer, x);
  EXPECT_TRUE(r) << r;
  // A layer is itself a function: checkpointed(layer, x).
  auto [gl, gx] = fx::gradient(
      [](const Layer& l, const Tensor& x) { return fx::sum(fx::checkpointed(l, x)); }, layer, x);
  auto [hl, hx] =
      fx::gradient([](const Layer& l, const Tensor& x) { return fx::sum(l(x)); }, layer, x);
  expect_near(gl.w, hl.w, 1e-14);
  expect_near(gl.b, hl.b, 1e-14);
  expect_near(gx, hx, 1e-14);
}

TEST(Checkpoint, HessiansInEveryModeAgree) {
  auto f = [](const Tensor& x) { return fx::sum(fx::sin(x) * x); };
  auto loss = [&](const Tensor& x) { return fx::checkpointed(f, x); };
  Tensor x = fx::testing::randn({4}, {.seed = 8});
  Tensor want = fx::hessian(f, x);
  expect_near(fx::hessian(loss, x), want, 1e-14);
  expect_near(fx::hessian_reverse(loss, x), want, 1e-14);
  Tensor v = fx::testing::randn({4}, {.seed = 9});
  expect_near(fx::jvp(loss, x, v).second, fx::jvp(f, x, v).second, 1e-14);
}

TEST(Checkpoint, RunsTheFunctionAgainInTheBackwardPassOnly) {
  int calls = 0;
  auto f = [&](const Tensor& x) {
    ++calls;
    return fx::exp(x) * x;
  };
  Tensor x = fx::tensor({0.5, -1}, fx::f64);
  EXPECT_EQ(vec(fx::checkpointed(f, x)), vec(f(x)));
  EXPECT_EQ(calls, 2);  // not recording: f once per call, nothing else
  calls = 0;
  auto [y, back] = fx::pullback([&](const Tensor& x) { return fx::checkpointed(f, x); }, x);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(back.recording().num_nodes(), 1u);
  Tensor g = back(fx::ones_like(y));
  EXPECT_EQ(calls, 2);
  auto gv = vec(g);
  EXPECT_NEAR(gv[0], std::exp(0.5) * 1.5, 1e-15);
  EXPECT_NEAR(gv[1], 0, 1e-15);
}

TEST(Checkpoint, NestsAndHoldsHooksAndCustomRules) {
  auto log1pexp = fx::custom_rule(
      "log1pexp", [](const Tensor& x) { return fx::relu(x) + fx::log1p(fx::exp(-fx::abs(x))); },
      [](const Tensor& x, const Tensor&, const Tensor& dy) { return dy * fx::sigmoid(x); });
  auto inner = [&](const Tensor& x) { return log1pexp(x) * x; };
  auto outer = [&](const Tensor& x) {
    Tensor y = fx::checkpointed(inner, x);
    y = fx::hook([](const Tensor& dy) { return dy * 1; }, y);
    return fx::checkpointed(inner, fx::sin(y));
  };
  auto r = fx::testing::gradcheck([&](const Tensor& x) { return fx::checkpointed(outer, x); },
                                  fx::testing::randn({5}, {.seed = 6}));
  EXPECT_TRUE(r) << r;
}

TEST(Checkpoint, NumbersAndIntegerTensorsAreConstants) {
  Tensor idx = fx::tensor({0, 2, 2}, fx::i64);
  auto f = [](const Tensor& x, double s, const Tensor& i) { return fx::index_select(x, 0, i) * s; };
  Tensor x = fx::tensor({1, 2, 3, 4}, fx::f64);
  Tensor g =
      fx::gradient([&](const Tensor& x) { return fx::sum(fx::checkpointed(f, x, 2.0, idx)); }, x);
  // (Not {2, 2, 2, 0}: GCC 12.2 with -mavx512f can miscompile that literal as {2, 2, 2, 2}.)
  EXPECT_EQ(vec(g), (std::vector<double>{2, 0, 4, 0}));
}

TEST(Checkpoint, CapturingATrackedTensorIsAnError) {
  auto bad = [] {
    fx::gradient(
        [](const Tensor& w, const Tensor& x) {
          return fx::sum(fx::checkpointed([&w](const Tensor& x) { return x * w; }, x));
        },
        fx::tensor({1, 2}, fx::f64), fx::tensor({3, 4}, fx::f64));
  };
  EXPECT_TRUE(fx::testing::throws_mentioning(bad, {"fx::checkpointed",
                                                   "not one of the "
                                                   "arguments",
                                                   "capture"}));
}

TEST(Checkpoint, AFunctionThatChangesOnRecomputationIsAnError) {
  int calls = 0;
  auto shifty = [&](const Tensor& x) { return ++calls == 1 ? x * 2 : fx::sum(x); };
  auto bad = [&] {
    fx::gradient([&](const Tensor& x) { return fx::sum(fx::checkpointed(shifty, x)); },
                 fx::tensor({1, 2}, fx::f64));
  };
  EXPECT_TRUE(fx::testing::throws_mentioning(
      bad, {"fx::checkpointed", "f64 ()", "f64 (2,)", "deterministic"}));
}

TEST(Checkpoint, AnArgumentOverwrittenBeforeTheBackwardPassIsAnError) {
  Tensor a = fx::tensor({1, 2}, fx::f64);
  auto f = [](const Tensor& x, const Tensor& a) { return fx::sum(fx::sin(x * a)); };
  auto [y, back] = fx::pullback([&](const Tensor& x) { return fx::checkpointed(f, x, a); },
                                fx::tensor({3, 4}, fx::f64));
  a += 1;  // the recomputation would use the new values
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] { back(fx::ones_like(y)); },
      {"fx::checkpointed", "argument tensor 1", "(2,)", "overwritten"}));
}

}  // namespace
