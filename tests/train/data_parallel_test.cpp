// fx::train::data_parallel_withgradient: shares of a batch differentiated on separate threads
// and combined by size must give what withgradient gives on the whole batch.
#include <gtest/gtest.h>
#include <omp.h>

#include <vector>

#include <fluxion/nn/activations.hpp>
#include <fluxion/nn/chain.hpp>
#include <fluxion/nn/dense.hpp>
#include <fluxion/nn/losses.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/train/data_parallel.hpp>

namespace {

using fx::Tensor;

// A model with a parameter the loss never reads: its gradient is zero in every share.
struct Net {
  fx::nn::Chain<fx::nn::Dense, fx::nn::Dense> body;
  Tensor unused;
  Tensor operator()(const Tensor& x) const { return body(x); }
  FX_FIELDS(body, unused)
};

Net make_net() {
  fx::Generator gen(21);
  Net n{fx::nn::Chain(fx::nn::Dense(6, 5, fx::tanh, gen), fx::nn::Dense(5, 3, fx::identity, gen)),
        fx::ones({4}, fx::f64)};
  fx::for_each_tensor(n, [](Tensor& t) { t = t.astype(fx::f64); });
  return n;
}

// Class labels in [0, 3) as i64.
Tensor labels(int64_t rows, fx::Generator& gen) {
  std::vector<int64_t> v(static_cast<size_t>(rows));
  for (auto& e : v) e = int64_t(gen.below(3));
  return fx::from_vector(v, {rows});
}

auto loss_fn = [](const auto& m, const Tensor& x, const Tensor& y) {
  return fx::logitcrossentropy(m(x), y);
};

// Runs f with an OpenMP team of `threads` and restores the previous setting.
template <class F>
auto with_threads(int threads, F&& f) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  auto r = f();
  omp_set_num_threads(before);
  return r;
}

void expect_same_gradient(const Net& a, const Net& b) {
  std::vector<Tensor> ga, gb;
  fx::for_each_tensor(const_cast<Net&>(a), [&](Tensor& t) { ga.push_back(t); });
  fx::for_each_tensor(const_cast<Net&>(b), [&](Tensor& t) { gb.push_back(t); });
  ASSERT_EQ(ga.size(), gb.size());
  for (size_t i = 0; i < ga.size(); ++i) {
    EXPECT_EQ(ga[i].shape(), gb[i].shape());
    EXPECT_TRUE(fx::allclose(ga[i], gb[i], 1e-12, 1e-14)) << ga[i] << "\n" << gb[i];
  }
}

TEST(DataParallel, SharesCombineToTheWholeBatchGradient) {
  Net net = make_net();
  fx::Generator gen(4);
  for (int64_t rows : {37, 2, 3}) {  // uneven shares, and as many shares as rows
    Tensor x = fx::randn({rows, 6}, gen, fx::f64);
    Tensor y = labels(rows, gen);
    auto [l, g] = fx::withgradient([&](const Net& m) { return loss_fn(m, x, y); }, net);
    for (int threads : {2, 3}) {
      SCOPED_TRACE(::testing::Message() << rows << " rows, " << threads << " threads");
      auto [lp, gp] = with_threads(
          threads, [&] { return fx::train::data_parallel_withgradient(loss_fn, net, x, y); });
      EXPECT_NEAR(lp.item(), l.item(), 1e-13);
      EXPECT_EQ(lp.shape(), l.shape());
      expect_same_gradient(gp, g);
      // The unused leaf stays an allocation-free zero.
      EXPECT_EQ(fx::to_vector<double>(gp.unused), std::vector<double>(4, 0.0));
    }
  }
}

// Two parameters read only through their sum: their gradients may be one buffer. The combine
// writes the sum over the first share's gradient only where that buffer has no other handle.
struct Twin {
  Tensor a, b;
  FX_FIELDS(a, b)
};

TEST(DataParallel, GradientsSharingABufferCombineCorrectly) {
  Twin twin{fx::tensor({0.5, -1.0, 2.0}, fx::f64), fx::tensor({1.5, 0.25, -0.5}, fx::f64)};
  auto f = [](const Twin& m, const Tensor& x) { return fx::mean(fx::tanh(x * (m.a + m.b))); };
  fx::Generator gen(9);
  Tensor x = fx::randn({16, 3}, gen, fx::f64);
  auto [l, g] = fx::withgradient([&](const Twin& m) { return f(m, x); }, twin);
  auto [lp, gp] =
      with_threads(2, [&] { return fx::train::data_parallel_withgradient(f, twin, x); });
  EXPECT_NEAR(lp.item(), l.item(), 1e-14);
  EXPECT_TRUE(fx::allclose(gp.a, g.a, 1e-12, 1e-14)) << gp.a << "\n" << g.a;
  EXPECT_TRUE(fx::allclose(gp.b, g.b, 1e-12, 1e-14)) << gp.b << "\n" << g.b;
  EXPECT_TRUE(fx::allclose(gp.a, gp.b, 0, 0));  // the same adjoint, once each
}

TEST(DataParallel, OneThreadAndNestedRegionsRunTheWholeBatch) {
  Net net = make_net();
  fx::Generator gen(5);
  Tensor x = fx::randn({10, 6}, gen, fx::f64), y = labels(10, gen);
  auto [l, g] = fx::withgradient([&](const Net& m) { return loss_fn(m, x, y); }, net);
  auto [l1, g1] =
      with_threads(1, [&] { return fx::train::data_parallel_withgradient(loss_fn, net, x, y); });
  EXPECT_EQ(l1.item(), l.item());
  expect_same_gradient(g1, g);
  // Inside a parallel region there is one share per caller (no nested teams).
  std::vector<double> losses(2);
#pragma omp parallel num_threads(2)
  {
    auto [ln, gn] = fx::train::data_parallel_withgradient(loss_fn, net, x, y);
    losses[size_t(omp_get_thread_num())] = ln.item();
  }
  for (double v : losses) EXPECT_EQ(v, l.item());
}

TEST(DataParallel, BadBatchesAndFailingSharesThrow) {
  Net net = make_net();
  fx::Generator gen(6);
  Tensor x = fx::randn({8, 6}, gen, fx::f64), y = labels(7, gen);
  try {
    (void)fx::train::data_parallel_withgradient(loss_fn, net, x, y);
    FAIL() << "rows 8 and 7 were accepted";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs 8 rows"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(7,)"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)fx::train::data_parallel_withgradient(loss_fn, net, fx::ones({}), y),
               fx::Error);
  // An error inside a share (here: a model whose input width is wrong) reaches the caller.
  Tensor wide = fx::randn({8, 7}, gen, fx::f64), y8 = labels(8, gen);
  EXPECT_THROW(
      with_threads(2,
                   [&] { return fx::train::data_parallel_withgradient(loss_fn, net, wide, y8); }),
      fx::Error);
}

TEST(DataParallel, BalancedSharesCombineToTheWholeBatchGradient) {
  Net net = make_net();
  fx::Generator gen(8);
  fx::train::DataParallel dp;
  // Thread 1 four times slower per row than thread 0: the next split gives thread 0 about 4/5.
  dp.observe({0, 5, 10}, {0.001, 0.004});
  EXPECT_EQ(dp.bounds(37, 2), (std::vector<int64_t>{0, 32, 37}));  // 29.6 on the 8-row grid
  for (int step = 0; step < 3; ++step) {
    Tensor x = fx::randn({37, 6}, gen, fx::f64), y = labels(37, gen);
    auto [l, g] = fx::withgradient([&](const Net& m) { return loss_fn(m, x, y); }, net);
    auto [lp, gp] = with_threads(2, [&] { return dp.withgradient(loss_fn, net, x, y); });
    EXPECT_NEAR(lp.item(), l.item(), 1e-13);
    expect_same_gradient(gp, g);
  }
}

TEST(DataParallel, SharesFollowEachThreadsSpeed) {
  fx::train::DataParallel dp;
  // Untimed: even.
  EXPECT_EQ(dp.bounds(10, 2), (std::vector<int64_t>{0, 5, 10}));
  EXPECT_EQ(dp.bounds(10, 3), (std::vector<int64_t>{0, 3, 6, 10}));
  // Thread 1 took twice as long per row: rows go 2:1, on a grid of 8 rows.
  dp.observe({0, 60, 120}, {0.060, 0.120});
  EXPECT_EQ(dp.bounds(120, 2), (std::vector<int64_t>{0, 80, 120}));
  EXPECT_EQ(dp.bounds(100, 2), (std::vector<int64_t>{0, 64, 100}));  // 66.7 -> 64
  // Batches too small for the grid stay even.
  EXPECT_EQ(dp.bounds(30, 2), (std::vector<int64_t>{0, 15, 30}));
  // A third thread not yet timed: even split again, until it has been.
  EXPECT_EQ(dp.bounds(120, 3), (std::vector<int64_t>{0, 40, 80, 120}));
  // The speeds are a moving average: thread 1 now as fast as thread 0, and the split moves back
  // to even over a few steps, not at once.
  std::vector<int64_t> at;
  for (int step = 0; step < 16; ++step) {
    const std::vector<int64_t> b = dp.bounds(120, 2);
    at.push_back(b[1]);
    dp.observe(b, {0.001 * double(b[1]), 0.001 * double(120 - b[1])});
  }
  EXPECT_EQ(at[0], 80);
  EXPECT_GT(at[1], 64);
  for (size_t i = 1; i < at.size(); ++i) EXPECT_LE(at[i], at[i - 1]) << i;
  EXPECT_EQ(at.back(), 64);
  // However slow a thread is, its share keeps a row.
  fx::train::DataParallel lopsided;
  lopsided.observe({0, 1, 2, 3}, {1e-6, 1.0, 1.0});
  const std::vector<int64_t> b = lopsided.bounds(96, 3);
  ASSERT_EQ(b.size(), 4u);
  for (size_t s = 0; s < 3; ++s) EXPECT_GE(b[s + 1] - b[s], 1) << s;
  EXPECT_GT(b[1], 90);
  EXPECT_EQ(b.back(), 96);
  // Timings that do not match the bounds are a mistake, not something to skip quietly.
  EXPECT_THROW(lopsided.observe({0, 48, 96}, {0.1, 0.1, 0.1}), fx::Error);
}

TEST(DataParallel, BalancedBadBatchesThrowNamingTheMethod) {
  Net net = make_net();
  fx::Generator gen(9);
  fx::train::DataParallel dp;
  Tensor x = fx::randn({8, 6}, gen, fx::f64), y = labels(7, gen);
  try {
    (void)dp.withgradient(loss_fn, net, x, y);
    FAIL() << "rows 8 and 7 were accepted";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("DataParallel::withgradient"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("needs 8 rows"), std::string::npos) << e.what();
  }
}

}  // namespace
