// examples/fashion_mnist_cnn's network against libtorch's (bench/train_cnn's TorchCnn): from the
// same weights on the same batch, the training-mode loss, every parameter's gradient and the
// BatchNorm running statistics after the step agree, on one thread and on two (where the
// BatchNorm kernels split channels across the team and oneDNN runs multi-threaded). Also a
// data-parallel gradient (oneDNN conv and pooling inside each thread's share, one thread per
// primitive) against libtorch's gradient of the whole batch. Dropout is left out: its masks are
// drawn from different generators.
#include <gtest/gtest.h>
#include <omp.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/train/data_parallel.hpp>

#include "torch_bridge.hpp"

namespace {

using fx::oracle::to_torch;

// max |a - b| / (scale of b) <= tol, where the scale is b's largest magnitude: gradients of a
// deep f32 network differ in their small entries by the order of summation, not in the large.
::testing::AssertionResult close(const std::string& what, const fx::Tensor& a,
                                 const torch::Tensor& b, double tol) {
  const torch::Tensor ta = to_torch(a).reshape(b.sizes());
  const double scale = b.abs().max().item<double>() + 1e-12;
  const double err = (ta - b).abs().max().item<double>() / scale;
  if (err <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": max error " << err << " of its scale " << scale
                                       << " (tolerance " << tol << ")";
}

auto make_model(fx::Generator& gen) {
  using namespace fx::nn;
  return Chain(Conv({5, 5}, 1, 16, fx::identity, gen, {.same = true, .bias = false}),
               BatchNorm(16, fx::relu), MaxPool({2, 2}),
               Conv({5, 5}, 16, 32, fx::identity, gen, {.bias = false}), BatchNorm(32, fx::relu),
               MaxPool({2, 2}), fx::Activation(flatten), Dense(32 * 5 * 5, 128, fx::relu, gen),
               Dense(128, 10, fx::identity, gen));
}
using Model = decltype(make_model(std::declval<fx::Generator&>()));

struct TorchCnnImpl : torch::nn::Module {
  torch::nn::Conv2d c1{torch::nn::Conv2dOptions(1, 16, 5).padding(2).bias(false)};
  torch::nn::BatchNorm2d b1{16};
  torch::nn::Conv2d c2{torch::nn::Conv2dOptions(16, 32, 5).bias(false)};
  torch::nn::BatchNorm2d b2{32};
  torch::nn::Linear l1{32 * 5 * 5, 128}, l2{128, 10};
  TorchCnnImpl() {
    register_module("c1", c1);
    register_module("b1", b1);
    register_module("c2", c2);
    register_module("b2", b2);
    register_module("l1", l1);
    register_module("l2", l2);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    namespace F = torch::nn::functional;
    torch::Tensor h = F::max_pool2d(torch::relu(b1(c1(x))), F::MaxPool2dFuncOptions(2));
    h = F::max_pool2d(torch::relu(b2(c2(h))), F::MaxPool2dFuncOptions(2));
    return l2(torch::relu(l1(h.flatten(1))));
  }
};
TORCH_MODULE(TorchCnn);

TorchCnn torch_copy(const Model& m) {
  TorchCnn t;
  torch::NoGradGuard no_grad;
  t->c1->weight.copy_(to_torch(std::get<0>(m.layers).weight));
  t->c2->weight.copy_(to_torch(std::get<3>(m.layers).weight));
  t->l1->weight.copy_(to_torch(std::get<7>(m.layers).weight));
  t->l1->bias.copy_(to_torch(std::get<7>(m.layers).bias));
  t->l2->weight.copy_(to_torch(std::get<8>(m.layers).weight));
  t->l2->bias.copy_(to_torch(std::get<8>(m.layers).bias));
  t->train();
  return t;
}

// Compares every parameter's gradient of fluxion's model (g) with libtorch's after backward.
void expect_same_gradients(const Model& g, TorchCnn& t, double tol) {
  EXPECT_TRUE(close("conv1.weight", std::get<0>(g.layers).weight, t->c1->weight.grad(), tol));
  EXPECT_TRUE(close("bn1.scale", std::get<1>(g.layers).scale, t->b1->weight.grad(), tol));
  EXPECT_TRUE(close("bn1.bias", std::get<1>(g.layers).bias, t->b1->bias.grad(), tol));
  EXPECT_TRUE(close("conv2.weight", std::get<3>(g.layers).weight, t->c2->weight.grad(), tol));
  EXPECT_TRUE(close("bn2.scale", std::get<4>(g.layers).scale, t->b2->weight.grad(), tol));
  EXPECT_TRUE(close("bn2.bias", std::get<4>(g.layers).bias, t->b2->bias.grad(), tol));
  EXPECT_TRUE(close("dense1.weight", std::get<7>(g.layers).weight, t->l1->weight.grad(), tol));
  EXPECT_TRUE(close("dense1.bias", std::get<7>(g.layers).bias, t->l1->bias.grad(), tol));
  EXPECT_TRUE(close("dense2.weight", std::get<8>(g.layers).weight, t->l2->weight.grad(), tol));
  EXPECT_TRUE(close("dense2.bias", std::get<8>(g.layers).bias, t->l2->bias.grad(), tol));
}

// The OpenMP team size for a scope, restored after.
struct Threads {
  int saved = omp_get_max_threads();
  explicit Threads(int n) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(saved); }
};

class CnnOracle : public ::testing::TestWithParam<int> {};

TEST_P(CnnOracle, TrainingStepMatchesLibtorch) {
  const Threads threads(GetParam());
  fx::Generator gen(3);
  Model model = make_model(gen);
  TorchCnn tmodel = torch_copy(model);
  // A batch large enough that each BatchNorm pass splits its channels across the team.
  const fx::Tensor x = fx::rand({64, 1, 28, 28}, gen);
  // Labels 0..9 (the conversion truncates).
  const fx::Tensor y = fx::astype(fx::rand({64}, gen) * 9.99, fx::i64);

  auto [loss, grad] =
      fx::withgradient([&](const Model& m) { return fx::logitcrossentropy(m(x), y); }, model);
  torch::Tensor tloss = torch::nn::functional::cross_entropy(
      tmodel->forward(to_torch(x)), to_torch(fx::astype(y, fx::f32)).to(torch::kLong));
  tloss.backward();

  EXPECT_NEAR(loss.item(), tloss.item<double>(), 1e-5 * (1 + std::abs(tloss.item<double>())));
  expect_same_gradients(grad, tmodel, 1e-4);
  // The running statistics the step updated (PyTorch's momentum and unbiased variance).
  const auto& bn1 = std::get<1>(model.layers);
  const auto& bn2 = std::get<4>(model.layers);
  EXPECT_TRUE(close("bn1.running_mean", bn1.running_mean, tmodel->b1->running_mean, 1e-5));
  EXPECT_TRUE(close("bn1.running_var", bn1.running_var, tmodel->b1->running_var, 1e-5));
  EXPECT_TRUE(close("bn2.running_mean", bn2.running_mean, tmodel->b2->running_mean, 1e-5));
  EXPECT_TRUE(close("bn2.running_var", bn2.running_var, tmodel->b2->running_var, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Threads, CnnOracle, ::testing::Values(1, 2));

TEST(CnnOracleDataParallel, ShareGradientsWithoutBatchNormMatchLibtorch) {
  // BatchNorm's batch statistics differ per share by design, so this model has none: conv and
  // pooling run on oneDNN inside each thread's share, and the mean of the shares' gradients is
  // the whole batch's gradient.
  const Threads threads(2);
  fx::Generator gen(5);
  using namespace fx::nn;
  auto model = Chain(Conv({5, 5}, 1, 8, fx::relu, gen, {.same = true}), MaxPool({2, 2}),
                     Conv({3, 3}, 8, 8, fx::relu, gen), MeanPool({2, 2}), fx::Activation(flatten),
                     Dense(8 * 6 * 6, 10, fx::identity, gen));
  torch::nn::Conv2d c1(torch::nn::Conv2dOptions(1, 8, 5).padding(2));
  torch::nn::Conv2d c2(torch::nn::Conv2dOptions(8, 8, 3));
  torch::nn::Linear l(8 * 6 * 6, 10);
  {
    torch::NoGradGuard no_grad;
    c1->weight.copy_(to_torch(std::get<0>(model.layers).weight));
    c1->bias.copy_(to_torch(std::get<0>(model.layers).bias));
    c2->weight.copy_(to_torch(std::get<2>(model.layers).weight));
    c2->bias.copy_(to_torch(std::get<2>(model.layers).bias));
    l->weight.copy_(to_torch(std::get<5>(model.layers).weight));
    l->bias.copy_(to_torch(std::get<5>(model.layers).bias));
  }
  const fx::Tensor x = fx::rand({32, 1, 28, 28}, gen), y = fx::randn({32, 10}, gen);
  auto loss = [](const auto& m, const fx::Tensor& x, const fx::Tensor& y) {
    return fx::mse(m(x), y);
  };
  auto [l_fx, g] = fx::train::data_parallel_withgradient(loss, model, x, y);

  namespace F = torch::nn::functional;
  torch::Tensor h = F::max_pool2d(torch::relu(c1(to_torch(x))), F::MaxPool2dFuncOptions(2));
  h = F::avg_pool2d(torch::relu(c2(h)), F::AvgPool2dFuncOptions(2));
  torch::Tensor tl = F::mse_loss(l(h.flatten(1)), to_torch(y));
  tl.backward();
  EXPECT_NEAR(l_fx.item(), tl.item<double>(), 1e-5 * (1 + std::abs(tl.item<double>())));
  EXPECT_TRUE(close("conv1.weight", std::get<0>(g.layers).weight, c1->weight.grad(), 1e-4));
  EXPECT_TRUE(close("conv1.bias", std::get<0>(g.layers).bias, c1->bias.grad(), 1e-4));
  EXPECT_TRUE(close("conv2.weight", std::get<2>(g.layers).weight, c2->weight.grad(), 1e-4));
  EXPECT_TRUE(close("dense.weight", std::get<5>(g.layers).weight, l->weight.grad(), 1e-4));
}

}  // namespace
