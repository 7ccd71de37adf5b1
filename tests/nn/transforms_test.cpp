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
