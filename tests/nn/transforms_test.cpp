// Layers with fused CPU kernels (norms, resampling, activations, losses, convolutions, attention,
// recurrent cells) under every transformation. Under fx::vmap and fx::trace a batched or traced
// value holds no data for a kernel to read, so each layer must take its composed path there and
// give what it gives each example eagerly (where it may run fused), and a traced graph must give
// it on new inputs. Forward mode and second order (which differentiate the composed forms) are
// checked against finite differences in f64.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>
#include <fluxion/testing.hpp>

namespace {

using fx::Tensor;

struct Case {
  std::string name;
  std::vector<int64_t> example;  // one example's input shape (vmap adds a leading axis of 3)
  std::function<Tensor(const Tensor&)> f;
};

// The layers' parameters and constants in dtype dt (inputs must be dt too).
std::vector<Case> cases(fx::DType dt = fx::f32) {
  auto in_dt = [dt](const auto& m) {
    return fx::nn::fmap([dt](const Tensor& t) { return t.astype(dt); }, m);
  };
  const Tensor target = fx::astype(fx::testing::randn({4, 6}, {.seed = 9}), dt);
  std::vector<double> hot(24, 0.0);
  for (int r = 0; r < 4; ++r) hot[size_t(r * 6 + (r * 5) % 6)] = 1;
  const Tensor onehot = fx::astype(fx::from_vector(hot, {4, 6}), dt);
  auto mha = in_dt(fx::nn::MultiHeadAttention(8, 2));
  auto ln = in_dt(fx::nn::LayerNorm({6}));
  auto bn = in_dt(fx::nn::BatchNorm(3));
  fx::nn::testmode(bn);  // running statistics: each example alone is no batch
  auto dense = in_dt(fx::nn::Dense(6, 5, fx::tanh));
  auto conv = in_dt(fx::nn::Conv({3, 3}, 3, 4, fx::relu, {.padding = {1}}));
  auto deconv = in_dt(fx::nn::ConvTranspose({3, 3}, 3, 2, fx::identity, {.stride = {2}}));
  auto gn = in_dt(fx::nn::GroupNorm(6, 3));
  auto cell = in_dt(fx::nn::LSTMCell(6, 5));
  auto rnn = in_dt(fx::nn::RNN(6, 4));
  auto gru = in_dt(fx::nn::GRU(6, 4, {.bidirectional = true}));
  auto lstm = in_dt(fx::nn::LSTM(6, 4, {.num_layers = 2}));
  auto gru_cell = in_dt(fx::nn::GRUCell(6, 5));
  auto gru3_cell = in_dt(fx::nn::GRUv3Cell(6, 5));
  auto rnn_cell = in_dt(fx::nn::RNNCell(6, 5));
  auto bilinear = in_dt(fx::nn::Bilinear(6, 6, 3, fx::tanh));
  auto weightnorm = in_dt(fx::nn::WeightNorm(fx::nn::Dense(6, 4, fx::elu)));
  auto depthwise = in_dt(fx::nn::DepthwiseConv({3, 3}, 3, 6));
  auto conv1 = in_dt(fx::nn::Conv({3}, 3, 4, fx::identity, {.stride = {2}, .dilation = {2}}));
  auto conv3 = in_dt(fx::nn::Conv({3, 3, 3}, 2, 3, fx::identity, {.same = true}));
  return {
      {"Upsample nearest",
       {2, 3, 4, 5},
       [m = fx::nn::Upsample({2, 3})](const Tensor& x) { return m(x); }},
      {"Upsample bilinear",
       {2, 3, 4, 5},
       [m = fx::nn::Upsample({2, 3}, fx::nn::UpsampleMode::bilinear)](const Tensor& x) {
         return m(x);
       }},
      {"PixelShuffle",
       {2, 8, 3, 2},
       [m = fx::nn::PixelShuffle(2)](const Tensor& x) { return m(x); }},
      {"GroupNorm", {2, 6, 4, 4}, [m = gn](const Tensor& x) { return m(x); }},
      {"InstanceNorm",
       {2, 3, 4, 4},
       [m = fx::nn::InstanceNorm(3)](const Tensor& x) { return m(x); }},
      {"BatchNorm, test mode", {2, 3, 4}, [m = bn](const Tensor& x) { return m(x); }},
      {"LayerNorm", {4, 6}, [m = ln](const Tensor& x) { return m(x); }},
      {"Dense", {4, 6}, [m = dense](const Tensor& x) { return m(x); }},
      {"Conv", {2, 3, 6, 6}, [m = conv](const Tensor& x) { return m(x); }},
      {"ConvTranspose", {2, 3, 4, 4}, [m = deconv](const Tensor& x) { return m(x); }},
      {"MaxPool", {2, 3, 6, 6}, [m = fx::nn::MaxPool({2, 2})](const Tensor& x) { return m(x); }},
      {"gelu_erf", {4, 6}, [](const Tensor& x) { return fx::gelu_erf(x); }},
      {"gelu_tanh", {4, 6}, [](const Tensor& x) { return fx::gelu_tanh(x); }},
      {"hardsigmoid", {4, 6}, [](const Tensor& x) { return fx::hardsigmoid(x); }},
      {"hardtanh", {4, 6}, [](const Tensor& x) { return fx::hardtanh(x); }},
      {"relu6", {4, 6}, [](const Tensor& x) { return fx::relu6(x); }},
      {"leakyrelu", {4, 6}, [](const Tensor& x) { return fx::leakyrelu(x); }},
      {"trelu", {4, 6}, [](const Tensor& x) { return fx::trelu(x); }},
      {"softshrink", {4, 6}, [](const Tensor& x) { return fx::softshrink(x); }},
      {"elu", {4, 6}, [](const Tensor& x) { return fx::elu(x); }},
      {"celu", {4, 6}, [](const Tensor& x) { return fx::celu(x); }},
      {"selu", {4, 6}, [](const Tensor& x) { return fx::selu(x); }},
      {"gelu_sigmoid", {4, 6}, [](const Tensor& x) { return fx::gelu_sigmoid(x); }},
      {"swish", {4, 6}, [](const Tensor& x) { return fx::swish(x); }},
      {"hardswish", {4, 6}, [](const Tensor& x) { return fx::hardswish(x); }},
      {"mish", {4, 6}, [](const Tensor& x) { return fx::mish(x); }},
      {"lisht", {4, 6}, [](const Tensor& x) { return fx::lisht(x); }},
      {"softsign", {4, 6}, [](const Tensor& x) { return fx::softsign(x); }},
      {"logsigmoid", {4, 6}, [](const Tensor& x) { return fx::logsigmoid(x); }},
      {"logcosh", {4, 6}, [](const Tensor& x) { return fx::logcosh(x); }},
      {"tanhshrink", {4, 6}, [](const Tensor& x) { return fx::tanhshrink(x); }},
      {"glu", {4, 6}, [](const Tensor& x) { return fx::glu(x); }},
      {"softmax", {4, 6}, [](const Tensor& x) { return fx::softmax(x); }},
      {"logsoftmax", {4, 6}, [](const Tensor& x) { return fx::logsoftmax(x); }},
      {"mse", {4, 6}, [target](const Tensor& x) { return fx::mse(x, target); }},
      {"logitcrossentropy",
       {4, 6},
       [onehot](const Tensor& x) { return fx::logitcrossentropy(x, onehot); }},
      {"logitcrossentropy, labels",
       {4, 6},
       [labels = fx::astype(fx::from_vector(std::vector<double>{1, 0, 5, 2}, {4}), fx::i64)](
           const Tensor& x) { return fx::logitcrossentropy(x, labels); }},
      {"mae", {4, 6}, [target](const Tensor& x) { return fx::mae(x, target); }},
      {"huber_loss", {4, 6}, [target](const Tensor& x) { return fx::huber_loss(x, target); }},
      {"msle", {4, 6}, [target](const Tensor& x) { return fx::msle(fx::exp(x), fx::exp(target)); }},
      {"crossentropy",
       {4, 6},
       [onehot](const Tensor& x) { return fx::crossentropy(fx::softmax(x), onehot); }},
      {"kldivergence",
       {4, 6},
       [target](const Tensor& x) { return fx::kldivergence(fx::softmax(x), fx::softmax(target)); }},
      {"focal_loss",
       {4, 6},
       [onehot](const Tensor& x) { return fx::focal_loss(fx::softmax(x), onehot); }},
      {"binarycrossentropy",
       {4, 6},
       [onehot](const Tensor& x) { return fx::binarycrossentropy(fx::sigmoid(x), onehot); }},
      {"logitbinarycrossentropy",
       {4, 6},
       [onehot](const Tensor& x) { return fx::logitbinarycrossentropy(x, onehot); }},
      {"binary_focal_loss",
       {4, 6},
       [onehot](const Tensor& x) { return fx::binary_focal_loss(fx::sigmoid(x), onehot); }},
      {"poisson_loss",
       {4, 6},
       [onehot](const Tensor& x) { return fx::poisson_loss(fx::exp(x), onehot); }},
      {"hinge_loss",
       {4, 6},
       [onehot](const Tensor& x) { return fx::hinge_loss(x, 2 * onehot - 1); }},
      {"squared_hinge_loss",
       {4, 6},
       [onehot](const Tensor& x) { return fx::squared_hinge_loss(x, 2 * onehot - 1); }},
      {"dice_coeff_loss",
       {4, 6},
       [onehot](const Tensor& x) { return fx::dice_coeff_loss(fx::sigmoid(x), onehot); }},
      {"tversky_loss",
       {4, 6},
       [onehot](const Tensor& x) { return fx::tversky_loss(fx::sigmoid(x), onehot); }},
      {"siamese_contrastive_loss",
       {4, 6},
       [onehot](const Tensor& x) { return fx::siamese_contrastive_loss(fx::abs(x), onehot); }},
      {"RNN", {2, 5, 6}, [m = rnn](const Tensor& x) { return m(x).first; }},
      {"GRU, bidirectional", {2, 5, 6}, [m = gru](const Tensor& x) { return m(x).first; }},
      {"LSTM, two layers", {2, 5, 6}, [m = lstm](const Tensor& x) { return m(x).first; }},
      {"GRUCell", {4, 6}, [m = gru_cell](const Tensor& x) { return m(x).first; }},
      {"GRUv3Cell", {4, 6}, [m = gru3_cell](const Tensor& x) { return m(x).first; }},
      {"RNNCell", {4, 6}, [m = rnn_cell](const Tensor& x) { return m(x).first; }},
      {"Bilinear", {4, 6}, [m = bilinear](const Tensor& x) { return m(x); }},
      {"WeightNorm", {4, 6}, [m = weightnorm](const Tensor& x) { return m(x); }},
      {"DepthwiseConv", {2, 3, 6, 6}, [m = depthwise](const Tensor& x) { return m(x); }},
      {"Conv1d", {2, 3, 9}, [m = conv1](const Tensor& x) { return m(x); }},
      {"Conv3d", {1, 2, 4, 4, 4}, [m = conv3](const Tensor& x) { return m(x); }},
      {"MeanPool",
       {2, 3, 6, 6},
       [m = fx::nn::MeanPool({3, 3}, {.stride = {1}, .padding = {1}})](const Tensor& x) {
         return m(x);
       }},
      {"AdaptiveMaxPool",
       {2, 3, 7, 5},
       [m = fx::nn::AdaptiveMaxPool({3, 2})](const Tensor& x) { return m(x); }},
      {"AdaptiveMeanPool",
       {2, 3, 7, 5},
       [m = fx::nn::AdaptiveMeanPool({3, 2})](const Tensor& x) { return m(x); }},
      {"pad reflect",
       {2, 3, 4, 5},
       [](const Tensor& x) {
         return fx::nn::pad(x, {1, 2, 2, 1}, fx::nn::PadMode::reflect);
       }},
      {"pad replicate",
       {2, 3, 4, 5},
       [](const Tensor& x) {
         return fx::nn::pad(x, {1, 2, 2, 1}, fx::nn::PadMode::replicate);
       }},
      {"pad circular",
       {2, 3, 4, 5},
       [](const Tensor& x) {
         return fx::nn::pad(x, {1, 2, 2, 1}, fx::nn::PadMode::circular);
       }},
      {"MultiHeadAttention, causal",
       {2, 5, 8},
       [m = mha](const Tensor& x) { return m(x, x, x, {.causal = true}).first; }},
      {"MultiHeadAttention", {2, 5, 8}, [m = mha](const Tensor& x) { return m(x, x, x).first; }},
      {"LSTMCell", {4, 6}, [m = cell](const Tensor& x) { return m(x).first; }},
  };
}

TEST(LayersUnderTransforms, VmapAndTraceGiveWhatEachExampleGivesEagerly) {
  for (const Case& c : cases()) {
    std::vector<int64_t> batched = c.example;
    batched.insert(batched.begin(), 3);
    const Tensor xs = fx::astype(fx::testing::randn(fx::Shape(batched), {.seed = 1}), fx::f32);
    const Tensor ys = fx::vmap(c.f)(xs);
    const fx::Graph g = fx::trace(c.f, fx::select(xs, 0, 0));
    for (int64_t b = 0; b < 3; ++b) {
      const Tensor x = fx::select(xs, 0, b), want = c.f(x);
      EXPECT_TRUE(fx::allclose(fx::select(ys, 0, b), want, 1e-5, 1e-5)) << c.name << " vmap " << b;
      EXPECT_TRUE(fx::allclose(g(x)[0], want, 1e-5, 1e-5)) << c.name << " trace " << b;
    }
  }
}

TEST(LayersUnderTransforms, GradientsOfAVmappedLossEqualTheLoopsSum) {
  // A reverse tape above vmap: the batched layers' pullbacks, against one example at a time.
  size_t checked = 0;
  for (const Case& c : cases()) {
    std::vector<int64_t> batched = c.example;
    batched.insert(batched.begin(), 3);
    const Tensor xs = fx::astype(fx::testing::randn(fx::Shape(batched), {.seed = 2}), fx::f32);
    const Tensor got =
        fx::gradient([&](const Tensor& x) { return fx::sum(fx::sin(fx::vmap(c.f)(x))); }, xs);
    for (int64_t b = 0; b < 3; ++b) {
      const Tensor want = fx::gradient([&](const Tensor& x) { return fx::sum(fx::sin(c.f(x))); },
                                       fx::select(xs, 0, b));
      EXPECT_TRUE(fx::allclose(fx::select(got, 0, b), want, 1e-4, 1e-5)) << c.name << " " << b;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3 * cases().size());
}

TEST(LayersUnderTransforms, TracedAndVmappedGradientsEqualTheEagerOnes) {
  // A reverse tape inside fx::trace (the traced graph of the gradient, run on new inputs) and
  // inside fx::vmap (per-example gradients).
  for (const Case& c : cases()) {
    auto grad = [&](const Tensor& x) {
      return fx::gradient([&](const Tensor& t) { return fx::sum(fx::sin(c.f(t))); }, x);
    };
    const Tensor x0 = fx::astype(fx::testing::randn(fx::Shape(c.example), {.seed = 3}), fx::f32);
    const Tensor x1 = fx::astype(fx::testing::randn(fx::Shape(c.example), {.seed = 4}), fx::f32);
    const fx::Graph g = fx::trace(grad, x0);
    for (const Tensor& x : {x0, x1})
      EXPECT_TRUE(fx::allclose(g(x)[0], grad(x), 1e-4, 1e-5)) << c.name;
    // Per-example gradients: a tape inside vmap.
    const Tensor per = fx::vmap(grad)(fx::stack({x0, x1}, 0));
    EXPECT_TRUE(fx::allclose(fx::select(per, 0, 1), grad(x1), 1e-4, 1e-5)) << c.name << " vmap";
  }
}

TEST(LayersUnderTransforms, EmbeddingsOfBatchedAndTracedIndices) {
  auto emb = fx::nn::Embedding(10, 4, /*padding_index=*/0);
  auto bag = fx::nn::EmbeddingBag(10, 4, fx::nn::BagMode::mean);
  const std::vector<std::function<Tensor(const Tensor&)>> layers = {
      [&](const Tensor& i) { return emb(i); }, [&](const Tensor& i) { return bag(i); }};
  const Tensor idx = fx::astype(
      fx::from_vector(std::vector<double>{1, 0, 9, 3, 3, 7, 2, 0, 5, 8, 6, 4, 1, 1, 2, 9, 0, 3},
                      {3, 2, 3}),
      fx::i64);
  for (size_t l = 0; l < layers.size(); ++l) {
    const Tensor ys = fx::vmap(layers[l])(idx);
    const fx::Graph g = fx::trace(layers[l], fx::select(idx, 0, 0));
    for (int64_t b = 0; b < 3; ++b) {
      const Tensor want = layers[l](fx::select(idx, 0, b));
      EXPECT_TRUE(fx::allclose(fx::select(ys, 0, b), want, 1e-6, 1e-6)) << l << " vmap " << b;
      EXPECT_TRUE(fx::allclose(g(fx::select(idx, 0, b))[0], want, 1e-6, 1e-6)) << l << " trace";
    }
    // An index outside the table is still an error when the batched lookup runs.
    EXPECT_THROW((void)fx::vmap(layers[l])(idx + 5), fx::Error) << l;
  }
}

TEST(LayersUnderTransforms, PerExampleGradientsOfAModelEqualTheLoops) {
  // vmap of the gradient with respect to a whole model (what DP-SGD needs): one gradient per
  // example, each leaf with the batch on axis 0.
  auto model = fx::nn::Chain(
      fx::nn::Conv({3, 3}, 1, 4, fx::relu, {.padding = {1}}), fx::nn::MaxPool({2, 2}),
      fx::nn::GroupNorm(4, 2), [](const Tensor& x) { return fx::nn::flatten(x); },
      fx::nn::Dense(4 * 4 * 4, 10, fx::gelu_erf), fx::nn::LayerNorm({10}));
  const Tensor xs = fx::astype(fx::testing::randn({3, 1, 1, 8, 8}, {.seed = 1}), fx::f32);
  const Tensor labels = fx::astype(fx::from_vector(std::vector<double>{1, 4, 7}, {3, 1}), fx::i64);
  auto grad = [&](const Tensor& x, const Tensor& y) {
    return fx::gradient([&](const auto& m) { return fx::logitcrossentropy(m(x), y); }, model);
  };
  auto per_example = fx::vmap(grad)(xs, labels);
  for (int64_t b = 0; b < 3; ++b) {
    auto want = grad(fx::select(xs, 0, b), fx::select(labels, 0, b));
    std::vector<Tensor> got_leaves, want_leaves;
    fx::for_each_tensor(per_example, [&](Tensor& t) { got_leaves.push_back(fx::select(t, 0, b)); });
    fx::for_each_tensor(want, [&](Tensor& t) { want_leaves.push_back(t); });
    ASSERT_EQ(got_leaves.size(), want_leaves.size());
    ASSERT_GE(got_leaves.size(), 8u);  // conv, group norm, dense, layer norm: weights and biases
    for (size_t i = 0; i < got_leaves.size(); ++i)
      EXPECT_TRUE(fx::allclose(got_leaves[i], want_leaves[i], 1e-4, 1e-5)) << b << " leaf " << i;
  }
}

// (f(x + h v) - f(x - h v)) / 2h.
Tensor central_difference(const std::function<Tensor(const Tensor&)>& f, const Tensor& x,
                          const Tensor& v) {
  const double h = 1e-6;
  return (f(x + h * v) - f(x - h * v)) / (2 * h);
}

TEST(LayersUnderTransforms, ForwardModeAndSecondOrderMatchFiniteDifferences) {
  for (const Case& c : cases(fx::f64)) {
    const Tensor x = fx::testing::randn(fx::Shape(c.example), {.seed = 5});
    const Tensor v = fx::testing::randn(fx::Shape(c.example), {.seed = 6});
    auto [y, jv] = fx::jvp(c.f, x, v);
    ASSERT_EQ(y.dtype(), fx::f64) << c.name;  // the layer's parameters were converted too
    EXPECT_TRUE(fx::allclose(jv, central_difference(c.f, x, v), 1e-6, 1e-7)) << c.name << " jvp";
    auto grad = [&](const Tensor& t) {
      return fx::gradient([&](const Tensor& u) { return fx::sum(fx::sin(c.f(u))); }, t);
    };
    const Tensor want = central_difference(grad, x, v);
    auto [g, hv] = fx::jvp(grad, x, v);  // forward over reverse
    EXPECT_TRUE(fx::allclose(hv, want, 1e-6, 1e-7)) << c.name << " forward over reverse";
    const Tensor hv_rr =
        fx::gradient([&](const Tensor& t) { return fx::sum(grad(t) * v); }, x);  // reverse twice
    EXPECT_TRUE(fx::allclose(hv_rr, want, 1e-6, 1e-7)) << c.name << " reverse over reverse";
  }
}

}  // namespace
