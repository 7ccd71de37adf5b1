// The normalisation and lookup layers against libtorch's: forward values and the gradients of
// <u, y> with respect to the input and every parameter, on the same f64 inputs, with the same
// hyperparameters. BatchNorm runs three training steps and then test mode, comparing the running
// statistics after each step (PyTorch's momentum convention and unbiased running variance).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

torch::Tensor to_torch(const fx::Tensor& t) {
  std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
  if (t.dtype() == fx::i64) {
    auto v = fx::to_vector<int64_t>(t);
    return torch::from_blob(v.data(), dims, torch::kLong).clone();
  }
  auto v = fx::to_vector<double>(t);
  return torch::from_blob(v.data(), dims, torch::kDouble).clone();
}

torch::Tensor leaf(const fx::Tensor& t) { return to_torch(t).requires_grad_(); }

// |fluxion - torch| <= atol + rtol |torch| elementwise, with a message naming what differs.
void expect_close(const fx::Tensor& got, const torch::Tensor& want, const char* what,
                  double tol = 1e-10) {
  ASSERT_TRUE(got.defined()) << what;
  auto w = want.detach().contiguous().to(torch::kDouble);
  ASSERT_EQ(got.numel(), w.numel()) << what;
  auto g = fx::to_vector<double>(got);
  const double* p = w.data_ptr<double>();
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], p[i], tol * (1 + std::abs(p[i]))) << what << " at " << i;
}

TEST(NormOracle, BatchNormTrainingStepsThenTestMode) {
  const int64_t c = 3;
  auto bn = fx::nn::BatchNorm(c, fx::identity, {.momentum = 0.2, .dtype = fx::f64});
  bn.scale = fx::testing::randn({c}, {.seed = 1});
  bn.bias = fx::testing::randn({c}, {.seed = 2});
  auto tw = leaf(bn.scale), tb = leaf(bn.bias);
  auto trm = torch::zeros({c}, torch::kDouble), trv = torch::ones({c}, torch::kDouble);
  for (uint64_t step = 0; step < 3; ++step) {
    auto x = fx::testing::randn({4, c, 3, 2}, {.seed = 10 + step}) * 2.0 + 0.5;
    auto u = fx::testing::randn({4, c, 3, 2}, {.seed = 20 + step});
    fx::Tensor y;
    auto [gm, gx] = fx::gradient(
        [&](const fx::nn::BatchNorm& m, const fx::Tensor& x) {
          fx::Tensor out = m(x);  // automatic mode: training inside the gradient
          y = fx::stop_gradient(out);
          return fx::sum(out * u);
        },
        bn, x);
    auto tx = leaf(x);
    auto ty = torch::batch_norm(tx, tw, tb, trm, trv, /*training=*/true, 0.2, 1e-5, false);
    (ty * to_torch(u)).sum().backward();
    expect_close(y, ty, "batch norm forward (training)");
    expect_close(gx, tx.grad(), "d/dx");
    expect_close(gm.scale, tw.grad(), "d/dscale");
    expect_close(gm.bias, tb.grad(), "d/dbias");
    expect_close(bn.running_mean, trm, "running_mean");
    expect_close(bn.running_var, trv, "running_var");
    tw.mutable_grad() = torch::Tensor();
    tb.mutable_grad() = torch::Tensor();
  }
  // Test mode: the running statistics, and gradients through them.
  auto x = fx::testing::randn({2, c, 5}, {.seed = 30});
  auto u = fx::testing::randn({2, c, 5}, {.seed = 31});
  fx::nn::testmode(bn);
  auto [gm, gx] = fx::gradient(
      [&](const fx::nn::BatchNorm& m, const fx::Tensor& x) { return fx::sum(m(x) * u); }, bn, x);
  auto tx = leaf(x);
  auto ty = torch::batch_norm(tx, tw, tb, trm, trv, /*training=*/false, 0.2, 1e-5, false);
  (ty * to_torch(u)).sum().backward();
  expect_close(bn(x), ty, "batch norm forward (test)");
  expect_close(gx, tx.grad(), "d/dx (test)");
  expect_close(gm.scale, tw.grad(), "d/dscale (test)");
  expect_close(gm.bias, tb.grad(), "d/dbias (test)");
  expect_close(bn.running_mean, trm, "running_mean unchanged in test mode");
}

// A layer's <u, y> gradients against torch: fx_grads are (d/dx, d/dparams...), torch_leaves
// (x, params...) after backward.
void compare(const fx::Tensor& y, const torch::Tensor& ty, const std::vector<fx::Tensor>& grads,
             const std::vector<torch::Tensor>& leaves, const char* layer) {
  expect_close(y, ty, layer);
  for (size_t i = 0; i < grads.size(); ++i) {
    SCOPED_TRACE(std::string(layer) + " gradient " + std::to_string(i));
    expect_close(grads[i], leaves[i].grad(), layer);
  }
}

TEST(NormOracle, LayerNorm) {
  auto ln = fx::nn::LayerNorm({3, 4}, fx::identity, true, 1e-5, fx::f64);
  ln.scale = fx::testing::randn({3, 4}, {.seed = 1});
  ln.bias = fx::testing::randn({3, 4}, {.seed = 2});
  auto x = fx::testing::randn({2, 5, 3, 4}, {.seed = 3}),
       u = fx::testing::randn({2, 5, 3, 4}, {.seed = 4});
  auto [gm, gx] = fx::gradient(
      [&](const fx::nn::LayerNorm& m, const fx::Tensor& x) { return fx::sum(m(x) * u); }, ln, x);
  auto tx = leaf(x), tw = leaf(ln.scale), tb = leaf(ln.bias);
  auto ty = torch::layer_norm(tx, {3, 4}, tw, tb, 1e-5, false);
  (ty * to_torch(u)).sum().backward();
  compare(ln(x), ty, {gx, gm.scale, gm.bias}, {tx, tw, tb}, "LayerNorm");
}

TEST(NormOracle, GroupNorm) {
  auto gn = fx::nn::GroupNorm(6, 3, fx::identity, true, 1e-5, fx::f64);
  gn.scale = fx::testing::randn({6}, {.seed = 1});
  gn.bias = fx::testing::randn({6}, {.seed = 2});
  auto x = fx::testing::randn({2, 6, 4, 3}, {.seed = 3}),
       u = fx::testing::randn({2, 6, 4, 3}, {.seed = 4});
  auto [gm, gx] = fx::gradient(
      [&](const fx::nn::GroupNorm& m, const fx::Tensor& x) { return fx::sum(m(x) * u); }, gn, x);
  auto tx = leaf(x), tw = leaf(gn.scale), tb = leaf(gn.bias);
  auto ty = torch::group_norm(tx, 3, tw, tb, 1e-5, false);
  (ty * to_torch(u)).sum().backward();
  compare(gn(x), ty, {gx, gm.scale, gm.bias}, {tx, tw, tb}, "GroupNorm");
}

TEST(NormOracle, InstanceNorm) {
  auto in = fx::nn::InstanceNorm(4, fx::identity, true, 1e-5, fx::f64);
  in.scale = fx::testing::randn({4}, {.seed = 1});
  in.bias = fx::testing::randn({4}, {.seed = 2});
  auto x = fx::testing::randn({3, 4, 7}, {.seed = 3}),
       u = fx::testing::randn({3, 4, 7}, {.seed = 4});
  auto [gm, gx] = fx::gradient(
      [&](const fx::nn::InstanceNorm& m, const fx::Tensor& x) { return fx::sum(m(x) * u); }, in, x);
  auto tx = leaf(x), tw = leaf(in.scale), tb = leaf(in.bias);
  auto ty = torch::instance_norm(tx, tw, tb, {}, {}, /*use_input_stats=*/true, 0.1, 1e-5, false);
  (ty * to_torch(u)).sum().backward();
  compare(in(x), ty, {gx, gm.scale, gm.bias}, {tx, tw, tb}, "InstanceNorm");
}

TEST(NormOracle, EmbeddingWithPadding) {
  auto emb = fx::nn::Embedding(fx::testing::randn({6, 4}, {.seed = 1}), /*padding_index=*/2);
  auto idx = fx::from_vector<int64_t>({0, 2, 5, 5, 1, 2, 3, 0}, {2, 4});
  auto u = fx::testing::randn({2, 4, 4}, {.seed = 2});
  auto g = fx::gradient([&](const fx::nn::Embedding& m) { return fx::sum(m(idx) * u); }, emb);
  auto tw = leaf(emb.weight);
  auto ty = torch::embedding(tw, to_torch(idx), /*padding_idx=*/2, false, false);
  (ty * to_torch(u)).sum().backward();
  compare(emb(idx), ty, {g.weight}, {tw}, "Embedding");
}

TEST(NormOracle, EmbeddingBagAllModes) {
  auto table = fx::testing::randn({7, 3}, {.seed = 1});
  auto idx = fx::from_vector<int64_t>({4, 2, 2, 0, 1, 6, 3, 5});
  auto offsets = fx::from_vector<int64_t>({0, 2, 2, 5});
  auto fixed = fx::from_vector<int64_t>({4, 2, 0, 6, 1, 3}, {2, 3});
  using B = fx::nn::BagMode;
  for (auto [mode, tmode] : {std::pair{B::sum, 0}, std::pair{B::mean, 1}, std::pair{B::max, 2}}) {
    SCOPED_TRACE(tmode);
    auto bag = fx::nn::EmbeddingBag(table, mode);
    auto u = fx::testing::randn({4, 3}, {.seed = 2});
    auto g = fx::gradient(
        [&](const fx::nn::EmbeddingBag& m) { return fx::sum(m(idx, offsets) * u); }, bag);
    auto tw = leaf(table);
    auto ty = std::get<0>(torch::embedding_bag(tw, to_torch(idx), to_torch(offsets), false, tmode));
    (ty * to_torch(u)).sum().backward();
    compare(bag(idx, offsets), ty, {g.weight}, {tw}, "EmbeddingBag (offsets)");
    auto u2 = fx::testing::randn({2, 3}, {.seed = 3});
    auto g2 =
        fx::gradient([&](const fx::nn::EmbeddingBag& m) { return fx::sum(m(fixed) * u2); }, bag);
    auto tw2 = leaf(table);
    // ATen's embedding_bag takes fixed bags as flat indices with offsets 0, L, 2L, ...
    auto ty2 = std::get<0>(torch::embedding_bag(
        tw2, to_torch(fixed).reshape({-1}), torch::arange(0, 6, 3, torch::kLong), false, tmode));
    (ty2 * to_torch(u2)).sum().backward();
    compare(bag(fixed), ty2, {g2.weight}, {tw2}, "EmbeddingBag (fixed)");
  }
  // Sum mode with per-sample weights, differentiated in the weights too.
  auto bag = fx::nn::EmbeddingBag(table, B::sum);
  auto w = fx::testing::randn({8}, {.seed = 4});
  auto u = fx::testing::randn({4, 3}, {.seed = 5});
  auto [gm, gw] = fx::gradient([&](const fx::nn::EmbeddingBag& m,
                                   const fx::Tensor& w) { return fx::sum(m(idx, offsets, w) * u); },
                               bag, w);
  auto tt = leaf(table), tpw = leaf(w);
  auto ty =
      std::get<0>(torch::embedding_bag(tt, to_torch(idx), to_torch(offsets), false, 0, false, tpw));
  (ty * to_torch(u)).sum().backward();
  compare(bag(idx, offsets, w), ty, {gm.weight, gw}, {tt, tpw}, "EmbeddingBag (weighted)");
}

TEST(NormOracle, Bilinear) {
  auto bl = fx::nn::Bilinear(fx::testing::randn({4, 3, 5}, {.seed = 1}),
                             fx::testing::randn({4}, {.seed = 2}));
  auto x1 = fx::testing::randn({6, 3}, {.seed = 3}), x2 = fx::testing::randn({6, 5}, {.seed = 4});
  auto u = fx::testing::randn({6, 4}, {.seed = 5});
  auto [gm, g1, g2] = fx::gradient([&](const fx::nn::Bilinear& m, const fx::Tensor& a,
                                       const fx::Tensor& b) { return fx::sum(m(a, b) * u); },
                                   bl, x1, x2);
  auto tw = leaf(bl.weight), tb = leaf(bl.bias), t1 = leaf(x1), t2 = leaf(x2);
  auto ty = torch::bilinear(t1, t2, tw, tb);
  (ty * to_torch(u)).sum().backward();
  compare(bl(x1, x2), ty, {g1, g2, gm.weight, gm.bias}, {t1, t2, tw, tb}, "Bilinear");
}

}  // namespace
