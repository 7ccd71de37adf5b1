#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

TEST(Embedding, LooksUpRowsForIndicesOfAnyShape) {
  auto emb = fx::nn::Embedding(fx::tensor({0, 1, 10, 11, 20, 21}, fx::f64).reshape({3, 2}));
  auto idx = fx::from_vector<int64_t>({2, 0, 2, 1}, {2, 2});
  auto y = emb(idx);
  EXPECT_EQ(y.shape(), (fx::Shape{2, 2, 2}));
  EXPECT_EQ(fx::to_vector<double>(y), (std::vector<double>{20, 21, 0, 1, 20, 21, 10, 11}));
}

TEST(Embedding, GradientAccumulatesRepeatedIndicesAndSkipsPadding) {
  auto emb = fx::nn::Embedding(4, 3, /*padding_index=*/1, fx::f64);
  EXPECT_EQ(fx::to_vector<double>(fx::select(emb.weight, 0, 1)), (std::vector<double>{0, 0, 0}));
  auto idx = fx::from_vector<int64_t>({0, 1, 0, 3, 1});
  auto g = fx::gradient([&](const fx::nn::Embedding& m) { return fx::sum(m(idx)); }, emb);
  // rows used: 0 twice, 3 once; 1 is padding (no gradient), 2 unused.
  EXPECT_EQ(fx::to_vector<double>(fx::sum(g.weight, {1})), (std::vector<double>{6, 0, 0, 3}));
  emb.weight = fx::ones({4, 3}, fx::f64);  // even a non-zero padding row looks up as zero
  EXPECT_EQ(fx::to_vector<double>(fx::sum(emb(idx), {1})), (std::vector<double>{3, 0, 3, 3, 0}));
}

TEST(Embedding, GradientsMatchFiniteDifferences) {
  auto emb = fx::nn::Embedding(fx::testing::randn({5, 3}, {.seed = 1}), 4);
  auto idx = fx::from_vector<int64_t>({4, 2, 2, 0, 1, 4}, {3, 2});
  auto r =
      fx::testing::gradcheck([&](const fx::nn::Embedding& m) { return fx::tanh(m(idx)); }, emb);
  EXPECT_TRUE(r) << r;
}

TEST(Embedding, BadIndicesNameTheLayerAndShapes) {
  auto emb = fx::nn::Embedding(5, 3);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)emb(fx::from_vector<int64_t>({0, 5}));
      },
      {"fx::nn::Embedding", "(2,)", "(5, 3)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { (void)emb(fx::zeros({2})); },
                                             {"fx::nn::Embedding", "integers", "(5, 3)"}));
}

}  // namespace
