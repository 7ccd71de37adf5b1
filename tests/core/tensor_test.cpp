// The tensor handle: sharing, views and strides, dtypes, printing, RNG, the caching allocator.
#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing/helpers.hpp>
#include <sstream>

using fx::Tensor;

TEST(Tensor, CopiesShareStorage) {
  Tensor a = fx::zeros({2, 3});
  Tensor b = a;
  b.data<float>()[4] = 7;
  EXPECT_EQ(a.data<float>()[4], 7);
  EXPECT_TRUE(a.same_storage(b));
  Tensor c = a.clone();
  c.data<float>()[4] = 1;
  EXPECT_EQ(a.data<float>()[4], 7);
  EXPECT_FALSE(a.same_storage(c));
}

TEST(Tensor, ViewsShareStorageWithStrides) {
  Tensor x = fx::arange(0, 24, 1, fx::f32).reshape({2, 3, 4});
  Tensor t = fx::transpose(x, 0, 2);  // (4, 3, 2)
  EXPECT_EQ(t.shape(), (fx::Shape{4, 3, 2}));
  EXPECT_TRUE(t.same_storage(x));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.stride(0), 1);
  EXPECT_EQ(t.stride(2), 12);
  // element t[3][1][1] == x[1][1][3] == 12 + 4 + 3
  EXPECT_EQ(fx::to_vector<float>(t)[3 * 6 + 1 * 2 + 1], 19);

  Tensor s = fx::slice(x, 2, 1, 4, 2);  // x[:, :, 1:4:2]
  EXPECT_EQ(s.shape(), (fx::Shape{2, 3, 2}));
  EXPECT_EQ(fx::to_vector<float>(s),
            (std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23}));
  EXPECT_TRUE(s.same_storage(x));

  Tensor e = fx::expand(fx::tensor({1, 2, 3}), {4, 3});
  EXPECT_EQ(e.stride(0), 0);
  EXPECT_EQ(fx::to_vector<float>(fx::sum(e, {0})), (std::vector<float>{4, 8, 12}));

  Tensor r = fx::reshape(t, {-1});  // not contiguous: copies
  EXPECT_FALSE(r.same_storage(x));
  EXPECT_EQ(r.numel(), 24);
  EXPECT_EQ(fx::select(x, 1, -1).shape(), (fx::Shape{2, 4}));
  EXPECT_EQ(fx::to_vector<float>(fx::select(x, 1, -1))[0], 8);
}

TEST(Tensor, DtypesAndPromotion) {
  Tensor i = fx::arange(4, fx::i64);
  Tensor f = fx::tensor({0.5, 0.5, 0.5, 0.5}, fx::f64);
  EXPECT_EQ((i + f).dtype(), fx::f64);
  EXPECT_EQ((i * 2.0).dtype(), fx::i64);
  EXPECT_EQ(fx::div(i, i + 1).dtype(), fx::f32);  // true division
  EXPECT_EQ((i > 1).dtype(), fx::boolean);
  EXPECT_EQ(fx::sum(i > 1).item<int64_t>(), 2);
  EXPECT_EQ(fx::astype(f, fx::i32).dtype(), fx::i32);
}

TEST(Tensor, PrintingShowsDtypeShapeAndValues) {
  std::ostringstream os;
  os << fx::tensor({1, 2.5, -3}, fx::f64).reshape({1, 3});
  EXPECT_EQ(os.str(), "Tensor(f64, (1, 3)) [[1, 2.5, -3]]");
  std::string big = fx::zeros({100}).to_string();
  EXPECT_NE(big.find("..."), std::string::npos);  // long dims are elided
  EXPECT_LT(big.size(), 200u);
}

TEST(Tensor, SeededRandomNumbersRepeat) {
  fx::Generator a(7), b(7), c(8);
  EXPECT_TRUE(fx::allclose(fx::randn({50}, a), fx::randn({50}, b), 0, 0));
  EXPECT_FALSE(fx::allclose(fx::randn({50}, a), fx::randn({50}, c), 0, 0));
  fx::Generator g(3);
  auto u = fx::to_vector<double>(fx::rand({10000}, g, fx::f64));
  double mean = 0;
  for (double v : u) {
    ASSERT_GE(v, 0);
    ASSERT_LT(v, 1);
    mean += v / u.size();
  }
  EXPECT_NEAR(mean, 0.5, 0.02);
  auto n = fx::randn({20000}, g, fx::f64);
  EXPECT_NEAR(fx::mean(n).item(), 0, 0.03);
  EXPECT_NEAR(fx::mean(n * n).item(), 1, 0.05);
  auto p = fx::to_vector<int64_t>(fx::randperm(100, g));
  std::sort(p.begin(), p.end());
  for (int64_t i = 0; i < 100; ++i) ASSERT_EQ(p[i], i);
}

TEST(Tensor, SteadyStateTrainingStepDoesNotCallMalloc) {
  fx::Generator g(1);
  Tensor w = fx::randn({64, 32}, g), x = fx::randn({16, 32}, g);
  auto loss = [&](const Tensor& w) { return fx::mean(fx::tanh(fx::matmul(x, w.t())) * 2.0); };
  for (int i = 0; i < 3; ++i) (void)fx::gradient(loss, w);  // warm the caches
  auto before = fx::allocator_stats();
  for (int i = 0; i < 10; ++i) (void)fx::gradient(loss, w);
  auto after = fx::allocator_stats();
  if (fx::allocator_caches()) {
    EXPECT_EQ(after.system_allocs, before.system_allocs);
    EXPECT_GT(after.cache_hits, before.cache_hits);
  } else {  // sanitizer build: every buffer is a real allocation, which ASan checks
    EXPECT_GT(after.system_allocs, before.system_allocs);
  }
}

TEST(Tensor, BadAccessThrowsNamedErrors) {
  Tensor x = fx::zeros({2, 3});
  EXPECT_TRUE(
      fx::testing::throws_mentioning([&] { (void)x.data<double>(); }, {"data", "f32", "f64"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { (void)x.item(); }, {"item", "(2, 3)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { (void)x.size(2); }, {"size", "axis 2"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] {
        fx::Shape({1, 2, 3, 4, 5, 6, 7, 8, 9});
      },
      {"Shape", "9 dimensions"}));
}
