#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

fx::Tensor table() { return fx::tensor({1, -1, 2, 5, 3, 0, -4, 7}, fx::f64).reshape({4, 2}); }

TEST(EmbeddingBag, ReducesFixedBagsBySumMeanAndMax) {
  auto idx = fx::from_vector<int64_t>({0, 1, 2, 3, 3, 3}, {2, 3});
  using B = fx::nn::BagMode;
  EXPECT_EQ(fx::to_vector<double>(fx::nn::EmbeddingBag(table(), B::sum)(idx)),
            (std::vector<double>{6, 4, -12, 21}));
  EXPECT_TRUE(fx::allclose(fx::nn::EmbeddingBag(table(), B::mean)(idx),
                           fx::tensor({2, 4.0 / 3, -4, 7}, fx::f64).reshape({2, 2}), 1e-14));
  EXPECT_EQ(fx::to_vector<double>(fx::nn::EmbeddingBag(table(), B::max)(idx)),
            (std::vector<double>{3, 5, -4, 7}));
  auto w = fx::tensor({1, 2, 0, 1, 1, -1}, fx::f64).reshape({2, 3});
  EXPECT_EQ(fx::to_vector<double>(fx::nn::EmbeddingBag(table(), B::sum)(idx, {}, w)),
            (std::vector<double>{5, 9, -4, 7}));
}

TEST(EmbeddingBag, OffsetsMakeBagsOfVaryingLengthIncludingEmpty) {
  auto idx = fx::from_vector<int64_t>({2, 0, 1, 3, 3});
  auto off = fx::from_vector<int64_t>({0, 1, 1, 3});  // {2}, {}, {0, 1}, {3, 3}
  using B = fx::nn::BagMode;
  EXPECT_EQ(fx::to_vector<double>(fx::nn::EmbeddingBag(table(), B::sum)(idx, off)),
            (std::vector<double>{3, 0, 0, 0, 3, 4, -8, 14}));
  EXPECT_EQ(fx::to_vector<double>(fx::nn::EmbeddingBag(table(), B::mean)(idx, off)),
            (std::vector<double>{3, 0, 0, 0, 1.5, 2, -4, 7}));
  EXPECT_EQ(fx::to_vector<double>(fx::nn::EmbeddingBag(table(), B::max)(idx, off)),
            (std::vector<double>{3, 0, 0, 0, 2, 5, -4, 7}));
}

TEST(EmbeddingBag, GradientsMatchFiniteDifferences) {
  auto idx = fx::from_vector<int64_t>({4, 2, 2, 0, 1, 4, 3});
  auto off = fx::from_vector<int64_t>({0, 2, 2, 5});
  auto fixed = fx::from_vector<int64_t>({4, 2, 0, 0, 1, 3}, {2, 3});
  for (auto mode : {fx::nn::BagMode::sum, fx::nn::BagMode::mean, fx::nn::BagMode::max}) {
    auto bag = fx::nn::EmbeddingBag(fx::testing::randn({5, 3}, {.seed = 1}), mode);
    auto r = fx::testing::gradcheck(
        [&](const fx::nn::EmbeddingBag& m) { return fx::tanh(m(idx, off)); }, bag);
    EXPECT_TRUE(r) << r;
    auto r2 = fx::testing::gradcheck(
        [&](const fx::nn::EmbeddingBag& m) { return fx::tanh(m(fixed)); }, bag);
    EXPECT_TRUE(r2) << r2;
  }
  auto w = fx::testing::randn({7}, {.seed = 2});
  auto sum_bag =
      fx::nn::EmbeddingBag(fx::testing::randn({5, 3}, {.seed = 1}), fx::nn::BagMode::sum);
  auto r3 = fx::testing::gradcheck(
      [&](const fx::nn::EmbeddingBag& m, const fx::Tensor& w) { return m(idx, off, w); }, sum_bag,
      w);
  EXPECT_TRUE(r3) << r3;
}

TEST(EmbeddingBag, BadInputsNameTheLayerAndShapes) {
  auto bag = fx::nn::EmbeddingBag(table());
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)bag(fx::from_vector<int64_t>({0, 1}));
      },
      {"fx::nn::EmbeddingBag", "(2,)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)bag(fx::from_vector<int64_t>({0, 1}), fx::from_vector<int64_t>({1}));
      },
      {"fx::nn::EmbeddingBag", "offsets", "(1,)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)bag(fx::from_vector<int64_t>({0, 9}), fx::from_vector<int64_t>({0}));
      },
      {"fx::nn::EmbeddingBag", "(4, 2)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)bag(fx::from_vector<int64_t>({0, 1}, {1, 2}), {}, fx::ones({1, 2}));
      },
      {"fx::nn::EmbeddingBag", "per_sample_weights", "sum mode"}));
}

}  // namespace
