// The multi-threaded paths of the CPU kernels, on sizes above their thresholds, agree with the
// reference backend and with one thread: matmul split by rows or columns of C, linear's epilogue
// and fused pullback, 2-d elementwise layouts with a transposed operand (walked in tiles), sums
// over rows, the fused relu pullback, relu(NaN) in linear's forward, the optimiser loop and the
// DataLoader's row gather. Two threads are requested whatever the machine has.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/data/dataloader.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/optim/rules.hpp>
#include <fluxion/testing/backends.hpp>

namespace {

using fx::Tensor;

// Sets the OpenMP thread count for one scope.
struct Threads {
  int saved = omp_get_max_threads();
  explicit Threads(int n) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(saved); }
};

template <class F>
Tensor on_reference(F f) {
  fx::testing::BackendScope scope(fx::testing::Backends::reference);
  return f();
}

template <class F>
Tensor with_threads(int n, F f) {
  Threads t(n);
  return f();
}

// Bit-for-bit equality of two tensors of one shape and dtype (NaNs compare by their bits).
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.raw_data(), y.raw_data(), size_t(x.numel()) * fx::itemsize(x.dtype())) == 0;
}

TEST(ParallelPaths, MatmulSplitByRowsOrColumnsMatchesReference) {
  fx::Generator gen(3);
  struct Case {
    int64_t m, k, n;
    bool ta, tb;  // operands given as transposed views
  };
  // The MLP's products (both layouts of each operand), an odd row count, few rows, and a
  // product just above the split threshold. Split by columns (B the largest operand): Dense's
  // x @ W^T, odd column counts, B plain and transposed.
  const Case cases[] = {
      {256, 784, 128, false, true}, {256, 128, 784, true, false}, {256, 128, 128, true, true},
      {37, 300, 91, false, false},  {10, 128, 128, false, true},  {64, 64, 40, false, false},
      {128, 784, 256, false, true}, {40, 300, 91, false, false},  {33, 200, 151, true, true}};
  for (fx::DType t : {fx::f32, fx::f64}) {
    const double tol = t == fx::f32 ? 1e-4 : 1e-12;
    for (const Case& c : cases) {
      Tensor a =
          c.ta ? fx::transpose(fx::randn({c.k, c.m}, gen, t)) : fx::randn({c.m, c.k}, gen, t);
      Tensor b =
          c.tb ? fx::transpose(fx::randn({c.n, c.k}, gen, t)) : fx::randn({c.k, c.n}, gen, t);
      Tensor two = with_threads(2, [&] { return fx::matmul(a, b); });
      Tensor one = with_threads(1, [&] { return fx::matmul(a, b); });
      Tensor ref = on_reference([&] { return fx::matmul(a, b); });
      EXPECT_TRUE(fx::allclose(two, ref, tol, tol)) << c.m << "x" << c.k << "x" << c.n;
      EXPECT_TRUE(fx::allclose(two, one, tol, tol)) << c.m << "x" << c.k << "x" << c.n;
    }
  }
  // Batched: every product of the batch is split the same way.
  Tensor a = fx::randn({3, 96, 200}, gen), b = fx::randn({3, 200, 72}, gen);
  Tensor two = with_threads(2, [&] { return fx::matmul(a, b); });
  EXPECT_TRUE(fx::allclose(two, on_reference([&] { return fx::matmul(a, b); }), 1e-4, 1e-4));
}

// fx::linear on two threads: the forward's epilogue on each thread's block of C (split by
// columns or by rows), and the fused pullback's column blocks of dz, db and dW, then (after the
// barrier) its row blocks of dx.
TEST(ParallelPaths, LinearEpilogueAndFusedPullbackMatchReference) {
  fx::Generator gen(9);
  struct Case {
    int64_t m, k, n;
    bool tx;  // x given as a transposed view
  };
  const Case cases[] = {
      {128, 784, 256, false}, {128, 256, 128, false}, {37, 300, 91, true}, {200, 64, 30, false}};
  for (fx::DType t : {fx::f32, fx::f64}) {
    const double tol = t == fx::f32 ? 1e-4 : 1e-12;
    for (const Case& c : cases)
      for (auto act : {fx::Epilogue::relu, fx::Epilogue::sigmoid, fx::Epilogue::identity}) {
        SCOPED_TRACE(::testing::Message() << c.m << "x" << c.k << "x" << c.n << " epilogue "
                                          << int(act) << " " << fx::dtype_name(t));
        Tensor x =
            c.tx ? fx::transpose(fx::randn({c.k, c.m}, gen, t)) : fx::randn({c.m, c.k}, gen, t);
        Tensor w = fx::randn({c.n, c.k}, gen, t) * 0.1, b = fx::randn({c.n}, gen, t);
        Tensor dy = fx::randn({c.m, c.n}, gen, t);
        auto run = [&] {
          auto [y, back] = fx::pullback([&](const Tensor& x, const Tensor& w,
                                            const Tensor& b) { return fx::linear(x, w, b, act); },
                                        x, w, b);
          auto [gx, gw, gb] = back(dy);
          return std::vector<Tensor>{y, gx, gw, gb};
        };
        std::vector<Tensor> two, one, ref;
        {
          Threads th(2);
          two = run();
        }
        {
          Threads th(1);
          one = run();
        }
        {
          fx::testing::BackendScope scope(fx::testing::Backends::reference);
          ref = run();
        }
        for (size_t i = 0; i < two.size(); ++i) {
          EXPECT_TRUE(fx::allclose(two[i], ref[i], tol, tol)) << "output " << i;
          EXPECT_TRUE(fx::allclose(two[i], one[i], tol, tol)) << "output " << i;
        }
      }
  }
}

TEST(ParallelPaths, TransposedOperandsWalkedInTilesMatchReference) {
  fx::Generator gen(5);
  // Large (threads), medium (threads from a quarter of the usual size), small (one thread), and
  // shapes that are not multiples of the tile.
  const std::pair<int64_t, int64_t> shapes[] = {{200, 300}, {128, 128}, {33, 65}, {7, 100}};
  for (fx::DType t : {fx::f32, fx::f64}) {
    for (auto [r, c] : shapes) {
      Tensor xt = fx::transpose(fx::randn({c, r}, gen, t));  // (r, c), unit stride down columns
      Tensor y = fx::randn({r, c}, gen, t);
      Tensor bias = fx::randn({c}, gen, t);
      auto ops = [&] { return std::vector<Tensor>{xt + y, y * xt, xt + bias, fx::maximum(xt, y)}; };
      std::vector<Tensor> two;
      {
        Threads th(2);
        two = ops();
      }
      std::vector<Tensor> ref;
      {
        fx::testing::BackendScope scope(fx::testing::Backends::reference);
        ref = ops();
      }
      for (size_t i = 0; i < two.size(); ++i)
        EXPECT_TRUE(same_bits(two[i], ref[i])) << "op " << i << " on " << r << "x" << c;
    }
  }
}

TEST(ParallelPaths, FusedReluPullbackMatchesComposedRule) {
  fx::Generator gen(9);
  for (fx::DType t : {fx::f32, fx::f64}) {
    for (auto [r, c] : {std::pair<int64_t, int64_t>{128, 256}, {128, 128}, {5, 7}}) {
      Tensor x = fx::randn({r, c}, gen, t);
      auto [y, back] = fx::pullback([](const Tensor& v) { return fx::relu(v); }, x);
      // A cotangent as a matmul pullback gives it (transposed) and a contiguous one.
      for (Tensor dy : {fx::transpose(fx::randn({c, r}, gen, t)), fx::randn({r, c}, gen, t)}) {
        Tensor fused = with_threads(2, [&] { return back(dy); });
        Tensor composed = fx::where(y > 0.0, dy, 0.0);
        EXPECT_TRUE(same_bits(fused, composed)) << r << "x" << c;
      }
    }
  }
  // Zero and NaN pre-activations get a +0 gradient, as the composed rule gives them.
  Tensor x = fx::tensor({-1.0, 0.0, std::nan(""), 2.0});
  auto [y, back] = fx::pullback([](const Tensor& v) { return fx::relu(v); }, x);
  Tensor dy = fx::tensor({5.0, 6.0, 7.0, std::nan("")});
  EXPECT_TRUE(same_bits(back(dy), fx::where(y > 0.0, dy, 0.0)));
}

// A sum over the leading rows (a bias gradient: one output row of 200 columns) splits its
// columns across threads; a sum with several output rows splits those. Either way each output
// adds its terms in the same order as on one thread.
TEST(ParallelPaths, SumOverRowsSplitsColumnsOrRowsBitForBit) {
  fx::Generator gen(12);
  for (fx::DType t : {fx::f32, fx::f64}) {
    Tensor x = fx::randn({300, 200}, gen, t), b = fx::randn({3, 150, 90}, gen, t);
    for (const auto& [in, axes] : {std::pair{x, fx::Axes{0}}, std::pair{b, fx::Axes{1}}}) {
      Tensor two = with_threads(2, [&] { return fx::sum(in, axes); });
      Tensor one = with_threads(1, [&] { return fx::sum(in, axes); });
      Tensor sq2 = with_threads(2, [&] { return fx::sum_squares(in, axes); });
      Tensor sq1 = with_threads(1, [&] { return fx::sum_squares(in, axes); });
      EXPECT_TRUE(same_bits(one, two)) << in.shape();
      EXPECT_TRUE(same_bits(sq1, sq2)) << in.shape();
      Tensor ref = on_reference([&] { return fx::sum(in, axes); });
      EXPECT_TRUE(fx::allclose(two, ref, 1e-5, 1e-5)) << in.shape();
    }
  }
}

TEST(ParallelPaths, AdamOnTwoThreadsMatchesOneThread) {
  fx::Generator gen(11);
  const fx::optim::Adam adam{};
  // 784 x 256: the MLP's first weight, well above the optimiser loop's threshold.
  Tensor p0 = fx::randn({784, 256}, gen);
  Tensor g1 = fx::randn({784, 256}, gen), g2 = fx::randn({784, 256}, gen);
  auto run = [&](int threads) {
    Threads th(threads);
    Tensor p = p0.clone();
    auto s = adam.init(p);
    adam.apply(s, p, g1);
    adam.apply(s, p, g2);
    return std::vector<Tensor>{p, s.m, s.v};
  };
  std::vector<Tensor> one = run(1), two = run(2);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(same_bits(one[i], two[i])) << i;
}

TEST(ParallelPaths, RowGatherOnTwoThreadsCopiesEveryRow) {
  fx::Generator gen(13);
  Tensor x = fx::randn({1000, 784}, gen);  // 300 rows: 940 kB, above the gather threshold
  std::vector<int64_t> rows(300);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = int64_t((i * 7919) % 1000);
  Tensor got = with_threads(2, [&] { return fx::data::take_rows(x, rows); });
  ASSERT_EQ(got.shape(), (fx::Shape{300, 784}));
  const float* src = x.data<float>();
  const float* dst = got.data<float>();
  for (size_t i = 0; i < rows.size(); ++i)
    ASSERT_EQ(std::memcmp(dst + i * 784, src + rows[i] * 784, 784 * sizeof(float)), 0) << i;
  EXPECT_THROW(fx::data::take_rows(x, std::vector<int64_t>{0, 1000}), fx::Error);
}

// relu(NaN) is NaN on every path of the fused forward, as fx::relu gives it: a tiny product, a
// split one, and the Dense-shaped f32 products that oneDNN's matmul primitive runs (whose own
// relu turns NaN into 0), on one thread and two. The other rows match the composed ops.
// A loader's batch gathers images and labels in one region, each thread the same share of both.
TEST(ParallelPaths, LoaderBatchOnTwoThreadsPairsImagesWithTheirLabels) {
  fx::Generator gen(14);
  Tensor x = fx::randn({1000, 784}, gen);
  Tensor y = fx::arange(1000);  // each sample's label is its index
  fx::data::DataLoader loader(x, y, {.batch = 300, .shuffle = true, .seed = 5});
  Threads two(2);
  int64_t seen = 0;
  for (auto [bx, by] : loader) {
    const auto labels = fx::to_vector<int64_t>(by);
    ASSERT_EQ(bx.shape()[0], int64_t(labels.size()));
    for (size_t i = 0; i < labels.size(); ++i)
      ASSERT_EQ(std::memcmp(bx.data<float>() + i * 784, x.data<float>() + labels[i] * 784,
                            784 * sizeof(float)),
                0)
          << "row " << i << " of a batch, sample " << labels[i];
    seen += int64_t(labels.size());
  }
  EXPECT_EQ(seen, 1000);
}

TEST(ParallelPaths, LinearReluKeepsNaN) {
  fx::Generator gen(21);
  struct Case {
    int64_t m, n, k;
  };
  for (int threads : {1, 2})
    for (Case c : {Case{3, 4, 5}, Case{128, 256, 784}, Case{128, 128, 256}, Case{200, 30, 64}}) {
      SCOPED_TRACE(::testing::Message()
                   << c.m << "x" << c.k << " -> " << c.n << " on " << threads << " threads");
      std::vector<float> xs = fx::to_vector<float>(fx::randn({c.m, c.k}, gen));
      xs[1] = std::nanf("");  // in row 0: every output of that row is NaN
      const Tensor x = fx::from_vector(xs, fx::Shape{c.m, c.k});
      const Tensor w = fx::randn({c.n, c.k}, gen), b = fx::randn({c.n}, gen);
      Threads th(threads);
      const std::vector<float> y = fx::to_vector<float>(fx::linear(x, w, b, fx::Epilogue::relu));
      for (int64_t j = 0; j < c.n; ++j) EXPECT_TRUE(std::isnan(y[size_t(j)])) << "column " << j;
      const Tensor composed = fx::relu(fx::matmul(x, fx::transpose(w)) + b);
      const std::vector<float> want = fx::to_vector<float>(composed);
      EXPECT_TRUE(std::equal(y.begin() + c.n, y.end(), want.begin() + c.n));
    }
}

}  // namespace
