// The activations and losses of fluxion/nn against libtorch's: values and gradients (of <u, f(x)>
// for a random cotangent u), in f64, for every function libtorch has. Those it lacks (lisht,
// logcosh, gelu_sigmoid; msle, hinge_loss, squared_hinge_loss, dice_coeff_loss, tversky_loss,
// binary_focal_loss, focal_loss, siamese_contrastive_loss: PyTorch's hinge_embedding_loss is a
// different function) are checked against their scalar definitions in tests/nn. Flux's agg
// choices map to PyTorch's reductions: mean -> 'mean', sum -> 'sum', none -> 'none'; the class
// losses are per sample, so Flux's mean of KL is PyTorch's 'batchmean'.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/data/dataloader.hpp>
#include <fluxion/nn/activations.hpp>
#include <fluxion/nn/losses.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

using fx::Tensor;
using FxFn = std::function<Tensor(const Tensor&)>;
using TorchFn = std::function<torch::Tensor(const torch::Tensor&)>;

torch::Tensor to_torch(const Tensor& t) {
  std::vector<double> v = fx::to_vector<double>(fx::astype(t, fx::f64));
  std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
  return torch::from_blob(v.data(), dims, torch::kDouble).clone();
}

torch::Tensor labels_to_torch(const Tensor& t) {
  std::vector<int64_t> v = fx::to_vector<int64_t>(t);
  std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
  return torch::from_blob(v.data(), dims, torch::kLong).clone();
}

std::vector<double> values_of(const torch::Tensor& t) {
  torch::Tensor d = t.detach().to(torch::kDouble).contiguous();
  return {d.data_ptr<double>(), d.data_ptr<double>() + d.numel()};
}

void expect_close(const std::string& what, const std::vector<double>& got,
                  const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " at " << i;
}

// f(x) and the gradient of <u, f(x)> against torch's g, u drawn for the output's shape.
void expect_same(const std::string& name, const FxFn& f, const TorchFn& g, const Tensor& x,
                 double tol = 1e-12) {
  SCOPED_TRACE(name);
  Tensor y = f(x);
  torch::Tensor tx = to_torch(x).requires_grad_(true);
  torch::Tensor ty = g(tx);
  std::vector<int64_t> fx_shape(y.shape().begin(), y.shape().end());
  ASSERT_EQ(fx_shape, ty.sizes().vec()) << name << ": output shapes differ";
  expect_close(name + " value", fx::to_vector<double>(y), values_of(ty), tol);
  fx::Generator gen(77);
  Tensor u = fx::randn(y.shape(), gen, fx::f64);
  Tensor dx = fx::gradient([&](const Tensor& a) { return fx::sum(f(a) * u); }, x);
  (ty * to_torch(u)).sum().backward();
  expect_close(name + " gradient", fx::to_vector<double>(dx), values_of(tx.grad()), tol);
}

Tensor data(const fx::Shape& shape, uint64_t seed, double scale = 1) {
  fx::Generator gen(seed);
  return fx::randn(shape, gen, fx::f64) * scale;
}
Tensor probs(const fx::Shape& shape, uint64_t seed) {
  fx::Generator gen(seed);
  return fx::uniform(shape, 0.05, 0.95, gen, fx::f64);
}

// An fx function as a FxFn (several are overloaded).
#define FX1(fn) [](const Tensor& a) { return fn(a); }

struct Reduction {
  fx::Agg agg;
  int64_t torch;  // at::Reduction
  const char* name;
};
const Reduction kReductions[] = {{fx::agg::mean, at::Reduction::Mean, "mean"},
                                 {fx::agg::sum, at::Reduction::Sum, "sum"},
                                 {fx::agg::none, at::Reduction::None, "none"}};

}  // namespace

TEST(NnFunctionsOracle, Activations) {
  namespace F = torch::nn::functional;
  // Spread out so every piecewise function sees each of its pieces.
  Tensor x = data({4, 6}, 1, 3.0);
  struct Case {
    const char* name;
    FxFn f;
    TorchFn g;
    double tol = 1e-12;
  };
  const Case cases[] = {
      {"sigmoid", FX1(fx::sigmoid), [](auto& t) { return torch::sigmoid(t); }},
      // torch's hardsigmoid backward multiplies by 1.0f / 6.0f, a float even for doubles.
      {"hardsigmoid", FX1(fx::hardsigmoid), [](auto& t) { return torch::hardsigmoid(t); }, 1e-7},
      {"hardtanh", FX1(fx::hardtanh), [](auto& t) { return torch::hardtanh(t); }},
      {"relu", FX1(fx::relu), [](auto& t) { return torch::relu(t); }},
      {"leakyrelu", [](auto& a) { return fx::leakyrelu(a); },
       [](auto& t) { return torch::leaky_relu(t, 0.01); }},
      {"leakyrelu(0.2)", [](auto& a) { return fx::leakyrelu(a, 0.2); },
       [](auto& t) { return torch::leaky_relu(t, 0.2); }},
      {"relu6", FX1(fx::relu6), [](auto& t) { return F::relu6(t); }},
      {"rrelu (evaluation)", [](auto& a) { return fx::rrelu(a, 0.1, 0.4); },
       [](auto& t) { return torch::rrelu(t, 0.1, 0.4, /*training=*/false); }},
      {"elu", [](auto& a) { return fx::elu(a); }, [](auto& t) { return torch::elu(t); }},
      {"elu(0.5)", [](auto& a) { return fx::elu(a, 0.5); },
       [](auto& t) { return torch::elu(t, 0.5); }},
      {"celu(1.5)", [](auto& a) { return fx::celu(a, 1.5); },
       [](auto& t) { return torch::celu(t, 1.5); }},
      {"selu", FX1(fx::selu), [](auto& t) { return torch::selu(t); }},
      {"gelu", FX1(fx::gelu), [](auto& t) { return torch::gelu(t, "tanh"); }},
      {"gelu_tanh", FX1(fx::gelu_tanh), [](auto& t) { return torch::gelu(t, "tanh"); }},
      {"gelu_erf", FX1(fx::gelu_erf), [](auto& t) { return torch::gelu(t); }},
      {"swish", FX1(fx::swish), [](auto& t) { return torch::silu(t); }},
      {"hardswish", FX1(fx::hardswish), [](auto& t) { return torch::hardswish(t); }},
      {"mish", FX1(fx::mish), [](auto& t) { return torch::mish(t); }},
      {"softplus", FX1(fx::softplus), [](auto& t) { return torch::softplus(t); }},
      {"softsign", FX1(fx::softsign), [](auto& t) { return F::softsign(t); }},
      {"logsigmoid", FX1(fx::logsigmoid), [](auto& t) { return torch::log_sigmoid(t); }},
      {"tanhshrink", FX1(fx::tanhshrink), [](auto& t) { return F::tanhshrink(t); }},
      {"softshrink", [](auto& a) { return fx::softshrink(a); },
       [](auto& t) { return torch::softshrink(t, 0.5); }},
      {"softshrink(1.5)", [](auto& a) { return fx::softshrink(a, 1.5); },
       [](auto& t) { return torch::softshrink(t, 1.5); }},
      {"trelu(1.2)", [](auto& a) { return fx::trelu(a, 1.2); },
       [](auto& t) { return torch::threshold(t, 1.2, 0); }},
      {"glu", [](auto& a) { return fx::glu(a); }, [](auto& t) { return torch::glu(t, -1); }},
      {"glu(0)", [](auto& a) { return fx::glu(a, 0); }, [](auto& t) { return torch::glu(t, 0); }},
      {"softmax", [](auto& a) { return fx::softmax(a); },
       [](auto& t) { return torch::softmax(t, -1); }},
      {"softmax(0)", [](auto& a) { return fx::softmax(a, 0); },
       [](auto& t) { return torch::softmax(t, 0); }},
      {"logsoftmax", [](auto& a) { return fx::logsoftmax(a); },
       [](auto& t) { return torch::log_softmax(t, -1); }},
  };
  for (const Case& c : cases) expect_same(c.name, c.f, c.g, x, c.tol);
}

TEST(NnFunctionsOracle, SoftmaxLogsoftmaxLogsumexpOverSetsOfAxes) {
  Tensor x = data({3, 4, 5}, 2);
  // torch has no multi-axis softmax: exp(x - logsumexp(x, dims)) is its definition.
  expect_same(
      "softmax {0, 2}",
      [](auto& a) {
        return fx::softmax(a, {0, 2});
      },
      [](auto& t) {
        return torch::exp(t - torch::logsumexp(t, std::vector<int64_t>{0, 2}, true));
      },
      x);
  expect_same(
      "logsoftmax {1, 2}",
      [](auto& a) {
        return fx::logsoftmax(a, {1, 2});
      },
      [](auto& t) {
        return t - torch::logsumexp(t, std::vector<int64_t>{1, 2}, true);
      },
      x);
  expect_same(
      "logsumexp {0, 1}",
      [](auto& a) {
        return fx::logsumexp(a, {0, 1});
      },
      [](auto& t) {
        return torch::logsumexp(t, std::vector<int64_t>{0, 1});
      },
      x);
}

TEST(NnFunctionsOracle, RegressionLosses) {
  Tensor yhat = data({5, 4}, 3), y = data({5, 4}, 4);
  torch::Tensor ty = to_torch(y);
  for (const Reduction& r : kReductions) {
    std::string s = std::string(" ") + r.name;
    expect_same(
        "mae" + s, [&](auto& a) { return fx::mae(a, y, r.agg); },
        [&](auto& t) { return torch::l1_loss(t, ty, r.torch); }, yhat);
    expect_same(
        "mse" + s, [&](auto& a) { return fx::mse(a, y, r.agg); },
        [&](auto& t) { return torch::mse_loss(t, ty, r.torch); }, yhat);
    expect_same(
        "huber_loss" + s, [&](auto& a) { return fx::huber_loss(a, y, r.agg); },
        [&](auto& t) { return torch::huber_loss(t, ty, r.torch, 1.0); }, yhat);
    expect_same(
        "huber_loss(0.3)" + s, [&](auto& a) { return fx::huber_loss(a, y, r.agg, 0.3); },
        [&](auto& t) { return torch::huber_loss(t, ty, r.torch, 0.3); }, yhat);
  }
  // poisson: torch adds eps = 1e-8 inside its log, Flux none; equal to ~1e-8 relative.
  std::vector<double> k(20);
  for (int i = 0; i < 20; ++i) k[i] = double((i * 7) % 5);  // counts 0..4, zeros included
  Tensor rate = probs({5, 4}, 5) * 3.0, counts = fx::from_vector(k, {5, 4});
  torch::Tensor tc = to_torch(counts);
  for (const Reduction& r : kReductions)
    expect_same(
        std::string("poisson_loss ") + r.name,
        [&](auto& a) { return fx::poisson_loss(a, counts, r.agg); },
        [&](auto& t) { return torch::poisson_nll_loss(t, tc, false, false, 1e-8, r.torch); }, rate,
        1e-7);
}

TEST(NnFunctionsOracle, BinaryLosses) {
  Tensor p = probs({6, 3}, 7), y = probs({6, 3}, 8), x = data({6, 3}, 9, 2.0);
  torch::Tensor ty = to_torch(y);
  for (const Reduction& r : kReductions) {
    std::string s = std::string(" ") + r.name;
    // torch clamps its logs at -100 and adds no eps: equal to ~1e-15 here.
    expect_same(
        "binarycrossentropy" + s, [&](auto& a) { return fx::binarycrossentropy(a, y, r.agg); },
        [&](auto& t) { return torch::binary_cross_entropy(t, ty, {}, r.torch); }, p, 1e-12);
    expect_same(
        "logitbinarycrossentropy" + s,
        [&](auto& a) { return fx::logitbinarycrossentropy(a, y, r.agg); },
        [&](auto& t) { return torch::binary_cross_entropy_with_logits(t, ty, {}, {}, r.torch); },
        x);
  }
}

TEST(NnFunctionsOracle, ClassLosses) {
  const int64_t n = 6, c = 5;
  Tensor logits = data({n, c}, 10, 2.0);
  Tensor labels = fx::tensor({0, 4, 2, 2, 1, 3}, fx::i64);
  Tensor onehot = fx::data::onehot(labels, c).astype(fx::f64);
  Tensor target = fx::softmax(data({n, c}, 11));
  torch::Tensor tl = labels_to_torch(labels), tt = to_torch(target);
  for (const Reduction& r : kReductions) {
    std::string s = std::string(" ") + r.name;
    expect_same(
        "logitcrossentropy labels" + s,
        [&](auto& a) { return fx::logitcrossentropy(a, labels, r.agg); },
        [&](auto& t) { return torch::cross_entropy_loss(t, tl, {}, r.torch, -100, 0.0); }, logits);
    expect_same(
        "logitcrossentropy probabilities" + s,
        [&](auto& a) { return fx::logitcrossentropy(a, target, r.agg); },
        [&](auto& t) { return torch::cross_entropy_loss(t, tt, {}, r.torch, -100, 0.0); }, logits);
    // Flux's label_smoothing on one-hot targets is PyTorch's label_smoothing option.
    expect_same(
        "logitcrossentropy label_smoothing(0.1)" + s,
        [&](auto& a) { return fx::logitcrossentropy(a, fx::label_smoothing(onehot, 0.1), r.agg); },
        [&](auto& t) { return torch::cross_entropy_loss(t, tl, {}, r.torch, -100, 0.1); }, logits);
    // crossentropy on probabilities: PyTorch's nll_loss of their log.
    expect_same(
        "crossentropy labels" + s,
        [&](auto& a) { return fx::crossentropy(fx::softmax(a), labels, r.agg); },
        [&](auto& t) {
          return torch::nll_loss(torch::log(torch::softmax(t, -1)), tl, {}, r.torch);
        },
        logits, 1e-12);
  }
  // The class axis first (dims = 0), against PyTorch's (N, C) on the transpose.
  expect_same(
      "logitcrossentropy dims 0",
      [&](auto& a) {
        return fx::logitcrossentropy(a, fx::contiguous(target.t()), fx::agg::none, 0);
      },
      [&](auto& t) {
        return torch::cross_entropy_loss(t.t(), tt, {}, at::Reduction::None, -100, 0.0);
      },
      fx::contiguous(logits.t()));
  // KL divergence: torch's kl_div takes log-probabilities; Flux's mean is per sample.
  Tensor p = fx::softmax(data({n, c}, 12));
  expect_same(
      "kldivergence mean", [&](auto& a) { return fx::kldivergence(a, target); },
      [&](auto& t) {
        return torch::kl_div(torch::log(t), tt, at::Reduction::Sum, false) / double(n);
      },
      p, 1e-12);
  expect_same(
      "kldivergence sum", [&](auto& a) { return fx::kldivergence(a, target, fx::agg::sum); },
      [&](auto& t) { return torch::kl_div(torch::log(t), tt, at::Reduction::Sum, false); }, p,
      1e-12);
  expect_same(
      "kldivergence none", [&](auto& a) { return fx::kldivergence(a, target, fx::agg::none); },
      [&](auto& t) { return torch::kl_div(torch::log(t), tt, at::Reduction::None, false).sum(-1); },
      p, 1e-12);
}

TEST(NnFunctionsOracle, CtcLoss) {
  const int64_t n = 3, steps = 12, classes = 6, s_max = 4;
  Tensor logits = data({n, steps, classes}, 13, 1.5);
  // Blank 0 as PyTorch's default; labels 1..5, one repeat, different lengths.
  Tensor targets = fx::tensor({1, 2, 2, 5, 3, 4, 0, 0, 5, 1, 3, 0}, fx::i64).reshape({n, s_max});
  std::vector<int64_t> t_len = {12, 9, 7}, s_len = {4, 2, 3};
  torch::Tensor tt = labels_to_torch(targets);
  auto torch_ctc = [&](const torch::Tensor& t, int64_t reduction) {
    return torch::ctc_loss(torch::log_softmax(t, -1).transpose(0, 1), tt, t_len, s_len, 0,
                           reduction, false);
  };
  expect_same(
      "ctc_loss none",
      [&](auto& a) { return fx::ctc_loss(a, targets, t_len, s_len, 0, fx::agg::none); },
      [&](auto& t) { return torch_ctc(t, at::Reduction::None); }, logits, 1e-10);
  expect_same(
      "ctc_loss sum",
      [&](auto& a) { return fx::ctc_loss(a, targets, t_len, s_len, 0, fx::agg::sum); },
      [&](auto& t) { return torch_ctc(t, at::Reduction::Sum); }, logits, 1e-10);
  // PyTorch's 'mean' divides each loss by its target length: a callable agg.
  Tensor lengths = fx::tensor({4, 2, 3}, fx::f64);
  expect_same(
      "ctc_loss torch mean",
      [&](auto& a) {
        return fx::ctc_loss(a, targets, t_len, s_len, 0,
                            [&](const Tensor& l) { return fx::mean(l / lengths); });
      },
      [&](auto& t) { return torch_ctc(t, at::Reduction::Mean); }, logits, 1e-10);
  // Flux's blank, the last class: the same losses with the labels moved down by one.
  Tensor last = fx::tensor({0, 1, 1, 4, 2, 3, 0, 0, 4, 0, 2, 0}, fx::i64).reshape({n, s_max});
  torch::Tensor tlast = labels_to_torch(last);
  expect_same(
      "ctc_loss blank -1",
      [&](auto& a) { return fx::ctc_loss(a, last, t_len, s_len, -1, fx::agg::none); },
      [&](auto& t) {
        return torch::ctc_loss(torch::log_softmax(t, -1).transpose(0, 1), tlast, t_len, s_len,
                               classes - 1, at::Reduction::None, false);
      },
      logits, 1e-10);
}
