#include <gtest/gtest.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/linalg.hpp>
#include <fluxion/nn/functors.hpp>
#include <fluxion/nn/multihead_attention.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {
// An attention layer whose projections are identities: its heads attend over feature slices.
fx::nn::MultiHeadAttention identity_mha(int64_t E, int64_t heads) {
  auto m = fx::nn::MultiHeadAttention(E, heads, {.dtype = fx::f64});
  m.in_proj_weight = fx::concat(
      {fx::linalg::eye(E, fx::f64), fx::linalg::eye(E, fx::f64), fx::linalg::eye(E, fx::f64)}, 0);
  m.out_proj_weight = fx::linalg::eye(E, fx::f64);
  return m;
}
}  // namespace

TEST(MultiHeadAttention, HeadsAttendOverTheirOwnFeatureSlices) {
  auto m = identity_mha(6, 2);
  auto q = fx::testing::randn({2, 3, 6}, {.seed = 1});
  auto kv = fx::testing::randn({2, 4, 6}, {.seed = 2});
  auto [y, w] = m(q, kv, kv, {.average_weights = false});
  ASSERT_EQ(y.shape(), (fx::Shape{2, 3, 6}));
  ASSERT_EQ(w.shape(), (fx::Shape{2, 2, 3, 4}));
  for (int64_t h = 0; h < 2; ++h) {
    auto s = [&](const fx::Tensor& t) { return fx::slice(t, 2, 3 * h, 3 * h + 3); };
    auto [yh, wh] = fx::nn::dot_product_attention(s(q), s(kv), s(kv));
    EXPECT_TRUE(fx::allclose(s(y), yh, 1e-13, 1e-13)) << h;
    EXPECT_TRUE(fx::allclose(fx::select(w, 1, h), wh, 1e-13, 1e-13)) << h;
  }
  auto [ya, wa] = m(q, kv, kv);
  EXPECT_TRUE(fx::allclose(wa, fx::mean(w, {1}), 1e-14, 1e-14));  // averaged over heads
  EXPECT_EQ(fx::nn::parameter_count(m), 3 * 36 + 18 + 36 + 6);
}

TEST(MultiHeadAttention, PaddedKeysAndCausalMasksFollowPyTorch) {
  fx::Generator gen(3);
  auto m = fx::nn::MultiHeadAttention(8, 2, {.dtype = fx::f64, .gen = &gen});
  auto x = fx::testing::randn({2, 4, 8}, {.seed = 4});
  // key_padding_mask: true marks a key to ignore; its value then cannot matter.
  auto pad = fx::from_vector<double>({0, 0, 0, 1, 0, 0, 1, 1}, {2, 4}) > 0.5;
  auto [y, w] = m(x, x, x, {.key_padding_mask = pad});
  EXPECT_EQ(fx::sum(fx::where(fx::reshape(pad, {2, 1, 4}), w, 0.0)).item(), 0.0);
  auto v2 = fx::slice_set(x, 1, 3, 4, 1, fx::full({2, 1, 8}, 100.0, fx::f64));
  EXPECT_TRUE(fx::allclose(m(x, x, v2, {.key_padding_mask = pad}).first, y, 1e-12, 1e-12));
  // causal equals a boolean attn_mask that is true above the diagonal.
  auto upper = fx::reshape(fx::arange(4), {1, 4}) > fx::reshape(fx::arange(4), {4, 1});
  auto [yc, wc] = m(x, x, x, {.causal = true});
  auto [ym, wm] = m(x, x, x, {.attn_mask = upper});
  EXPECT_TRUE(fx::allclose(yc, ym, 1e-14, 1e-14));
  EXPECT_EQ(fx::sum(fx::where(upper, wc, 0.0)).item(), 0.0);
  // A (N * heads, L, S) mask applies per head.
  auto per_head = fx::expand(fx::unsqueeze(upper, 0), {4, 4, 4});
  EXPECT_TRUE(fx::allclose(m(x, x, x, {.attn_mask = per_head}).first, yc, 1e-14, 1e-14));
}

TEST(MultiHeadAttention, GradientsMatchFiniteDifferencesToSecondOrder) {
  fx::Generator gen(5);
  auto m = fx::nn::MultiHeadAttention(4, 2, {.dtype = fx::f64, .gen = &gen});
  m.in_proj_bias = fx::testing::randn({12}, {.seed = 6});
  auto q = fx::testing::randn({2, 3, 4}, {.seed = 7});
  auto kv = fx::testing::randn({2, 2, 4}, {.seed = 8});
  auto f = [](const fx::nn::MultiHeadAttention& m, const fx::Tensor& q, const fx::Tensor& kv) {
    auto [y, w] = m(q, kv, kv, {.attn_mask = fx::ones({3, 2}, fx::f64)});
    return fx::sum(y * y) + fx::sum(w * fx::sum(q, {2}, true));
  };
  auto r = fx::testing::gradcheck(f, m, q, kv);
  EXPECT_TRUE(r) << r;
}

TEST(MultiHeadAttention, BadShapesNameTheLayerAndShapes) {
  EXPECT_TRUE(fx::testing::throws_mentioning([] { (void)fx::nn::MultiHeadAttention(10, 3); },
                                             {"fx::nn::MultiHeadAttention", "10", "3"}));
  auto m = fx::nn::MultiHeadAttention(8, 2);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)m(fx::zeros({2, 3, 8}), fx::zeros({2, 4, 6}), fx::zeros({2, 4, 6}));
      },
      {"fx::nn::MultiHeadAttention", "(2, 4, 6)", "(N, S, 8)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        auto x = fx::zeros({2, 3, 8});
        (void)m(x, x, x, {.key_padding_mask = fx::zeros({2, 4}, fx::boolean)});
      },
      {"fx::nn::MultiHeadAttention", "key_padding_mask", "(2, 4)", "(2, 3)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        auto x = fx::zeros({2, 3, 8});
        (void)m(x, x, x, {.attn_mask = fx::zeros({3, 4}, fx::boolean)});
      },
      {"fx::nn::MultiHeadAttention", "attn_mask", "(3, 4)", "(3, 3)"}));
}

TEST(MultiHeadAttention, RunsOnTheMetaDeviceWithACausalMask) {
  auto meta = fx::to(fx::nn::MultiHeadAttention(8, 2), fx::Device::meta);
  auto q = fx::to(fx::zeros({3, 4, 8}), fx::Device::meta);
  auto kv = fx::to(fx::zeros({3, 6, 8}), fx::Device::meta);
  auto [y, w] = meta(q, kv, kv, {.causal = true, .average_weights = false});
  EXPECT_EQ(y.shape(), (fx::Shape{3, 4, 8}));
  EXPECT_EQ(w.shape(), (fx::Shape{3, 2, 4, 6}));
}

TEST(MultiHeadAttention, KeysAndValuesOfOtherWidthsHaveTheirOwnProjections) {
  fx::Generator gen(9);
  auto m = fx::nn::MultiHeadAttention(4, 2, {.kdim = 3, .vdim = 5, .dtype = fx::f64, .gen = &gen});
  EXPECT_FALSE(m.in_proj_weight.defined());
  EXPECT_EQ(m.k_proj_weight.shape(), (fx::Shape{4, 3}));
  EXPECT_EQ(m.v_proj_weight.shape(), (fx::Shape{4, 5}));
  EXPECT_EQ(fx::nn::parameter_count(m), 16 + 12 + 20 + 12 + 16 + 4);
  auto q = fx::testing::randn({2, 3, 4}, {.seed = 10});
  auto k = fx::testing::randn({2, 6, 3}, {.seed = 11});
  auto v = fx::testing::randn({2, 6, 5}, {.seed = 12});
  auto [y, w] = m(q, k, v);
  EXPECT_EQ(y.shape(), (fx::Shape{2, 3, 4}));
  EXPECT_EQ(w.shape(), (fx::Shape{2, 3, 6}));
  auto f = [](const fx::nn::MultiHeadAttention& m, const fx::Tensor& q, const fx::Tensor& k,
              const fx::Tensor& v) { return m(q, k, v, {.causal = true}).first; };
  auto r = fx::testing::gradcheck(f, m, q, k, v);
  EXPECT_TRUE(r) << r;
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] { (void)m(q, v, v); }, {"fx::nn::MultiHeadAttention", "(2, 6, 5)", "(N, S, 3)"}));
}
