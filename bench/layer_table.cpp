// The per-layer table of issue 30: forward + backward (the gradient with respect to the input and
// the parameters) of each layer type at a typical size, fluxion beside libtorch in the same
// process, on the same inputs and with the same thread count. Prints name=value lines:
//   layer_<name>_fx_ms, layer_<name>_torch_ms, layer_<name>_ratio (fluxion / libtorch)
// per row, then layer_table_max_ratio and layer_table_slowest (the row with that ratio). With
// --threads 1,2 the 2-thread rows follow as layer_t2_<name>_* and layer_table_t2_max_ratio.
//
//   ./build/bench/layer_table [--reps 7] [--rounds 5] [--threads 1[,2]] [--only conv2d,layer_norm]
//
// Each step is y = layer(x), then the pullback of a fixed random cotangent u (fx::pullback, and
// y.backward(u) in libtorch with x and the parameters requiring gradients, gradients set to none
// before each step, so both sides allocate them afresh). The two libraries take their steps in
// turn, one warm-up each, and a round's figure is the median of --reps steps. With --rounds R the
// whole table runs R times (so a slow spell of a shared machine hits every row a little rather
// than one row much) and each printed figure is the median over rounds; a ratio is the median of
// the rounds' ratios. On one thread a step is
// timed in the thread's CPU time (everything runs on the calling thread), which a busy shared
// machine disturbs far less than wall time; with more threads, in wall time.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

using Step = std::function<void()>;

struct Row {
  std::string name;
  Step fx, torch;
};

double now_ms(bool cpu_time) {
  if (cpu_time) {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
  }
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

torch::Tensor to_torch(const fx::Tensor& t) {
  std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
  if (t.dtype() == fx::i64) {
    auto v = fx::to_vector<int64_t>(t);
    return torch::from_blob(v.data(), dims, torch::kLong).clone();
  }
  auto v = fx::to_vector<float>(t);
  return torch::from_blob(v.data(), dims, torch::kFloat).clone();
}

fx::Generator& gen() {
  static fx::Generator g(1);
  return g;
}

// Integer indices in [0, n) of the given shape.
fx::Tensor random_indices(const fx::Shape& s, int64_t n) {
  auto u = fx::to_vector<float>(fx::rand(s, gen()));
  std::vector<int64_t> v(u.size());
  for (size_t i = 0; i < u.size(); ++i) v[i] = std::min<int64_t>(n - 1, int64_t(u[i] * n));
  return fx::from_vector(v, s);
}

// fluxion's step: the pullback of u through f(model, x), with respect to both.
template <class M, class F>
Step fx_step(const M& model, const fx::Tensor& x, F f) {
  fx::Tensor u = fx::randn(f(model, x).shape(), gen());
  return [=] {
    auto [y, back] = fx::pullback(f, model, x);
    auto g = std::move(back)(u);
    (void)g;
  };
}
// The same for a function of the model alone (integer inputs: embeddings).
template <class M, class F>
Step fx_step_params(const M& model, F f) {
  fx::Tensor u = fx::randn(f(model).shape(), gen());
  return [=] {
    auto [y, back] = fx::pullback(f, model);
    auto g = std::move(back)(u);
    (void)g;
  };
}
// And of x alone (layers without parameters, activations, losses).
template <class F>
Step fx_step_input(const fx::Tensor& x, F f) {
  fx::Tensor u = fx::randn(f(x).shape(), gen());
  return [=] {
    auto [y, back] = fx::pullback(f, x);
    auto g = std::move(back)(u);
    (void)g;
  };
}

// libtorch's step: f(x).backward(u), x requiring a gradient when it is floating.
Step torch_step(std::vector<torch::Tensor> params, const torch::Tensor& x0,
                std::function<torch::Tensor(const torch::Tensor&)> f) {
  torch::Tensor u;
  {
    torch::NoGradGuard no_grad;
    u = torch::randn_like(f(x0));
  }
  return [=] {
    torch::Tensor x = x0.is_floating_point() ? x0.detach().requires_grad_() : x0;
    for (const auto& p : params) const_cast<torch::Tensor&>(p).mutable_grad() = torch::Tensor();
    f(x).backward(u);
  };
}

// The table's rows. Sizes are a typical training step's (a small CNN's feature maps, a
// transformer block's tokens, an RNN language model's batch).
std::vector<Row> make_rows() {
  std::vector<Row> rows;
  auto& g = gen();
  auto add = [&](std::string name, Step f, Step t) {
    rows.push_back({std::move(name), std::move(f), std::move(t)});
  };
  auto fx_x = [&](fx::Shape s) { return fx::randn(s, g); };

  {  // Dense 784 -> 256, relu, batch 128
    auto m = fx::nn::Dense(784, 256, fx::relu, g);
    auto x = fx_x({128, 784});
    torch::nn::Linear t(784, 256);
    add("dense", fx_step(m, x, [](const fx::nn::Dense& m, const fx::Tensor& x) { return m(x); }),
        torch_step(t->parameters(), to_torch(x),
                   [t](const torch::Tensor& x) mutable { return torch::relu(t->forward(x)); }));
  }
  auto conv_row = [&](std::string name, fx::nn::Conv m, fx::Shape xs, torch::nn::AnyModule t) {
    auto x = fx_x(xs);
    add(std::move(name),
        fx_step(m, x, [](const fx::nn::Conv& m, const fx::Tensor& x) { return m(x); }),
        torch_step(t.ptr()->parameters(), to_torch(x),
                   [t](const torch::Tensor& x) mutable { return t.forward(x); }));
  };
  conv_row("conv1d", fx::nn::Conv({5}, 32, 64, fx::identity, g, {.padding = {2}}), {32, 32, 256},
           torch::nn::AnyModule(torch::nn::Conv1d(torch::nn::Conv1dOptions(32, 64, 5).padding(2))));
  conv_row("conv2d", fx::nn::Conv({3, 3}, 32, 64, fx::identity, g, {.padding = {1}}),
           {32, 32, 28, 28},
           torch::nn::AnyModule(torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1))));
  conv_row("conv3d", fx::nn::Conv({3, 3, 3}, 16, 32, fx::identity, g, {.padding = {1}}),
           {8, 16, 16, 16, 16},
           torch::nn::AnyModule(torch::nn::Conv3d(torch::nn::Conv3dOptions(16, 32, 3).padding(1))));
  conv_row("depthwise_conv2d",
           fx::nn::DepthwiseConv({3, 3}, 64, 64, fx::identity, g, {.padding = {1}}),
           {32, 64, 28, 28},
           torch::nn::AnyModule(
               torch::nn::Conv2d(torch::nn::Conv2dOptions(64, 64, 3).padding(1).groups(64))));
  {  // ConvTranspose 64 -> 32, kernel 4, stride 2: 14x14 -> 28x28
    auto m =
        fx::nn::ConvTranspose({4, 4}, 64, 32, fx::identity, g, {.stride = {2}, .padding = {1}});
    auto x = fx_x({32, 64, 14, 14});
    torch::nn::ConvTranspose2d t(torch::nn::ConvTranspose2dOptions(64, 32, 4).stride(2).padding(1));
    add("conv_transpose2d",
        fx_step(m, x, [](const fx::nn::ConvTranspose& m, const fx::Tensor& x) { return m(x); }),
        torch_step(t->parameters(), to_torch(x),
                   [t](const torch::Tensor& x) mutable { return t->forward(x); }));
  }
  // Layers without parameters, on a CNN's feature map.
  auto input_row = [&](std::string name, fx::Shape xs,
                       std::function<fx::Tensor(const fx::Tensor&)> f,
                       std::function<torch::Tensor(const torch::Tensor&)> t) {
    auto x = fx_x(xs);
    add(std::move(name), fx_step_input(x, [f](const fx::Tensor& x) { return f(x); }),
        torch_step({}, to_torch(x), std::move(t)));
  };
  const fx::Shape fmap = {32, 64, 28, 28}, small_map = {32, 64, 14, 14};
  namespace F = torch::nn::functional;
  input_row(
      "max_pool2d", fmap, [m = fx::nn::MaxPool({2, 2})](const fx::Tensor& x) { return m(x); },
      [](const torch::Tensor& x) {
        return torch::max_pool2d(x, {2, 2});
      });
  input_row(
      "mean_pool2d", fmap, [m = fx::nn::MeanPool({2, 2})](const fx::Tensor& x) { return m(x); },
      [](const torch::Tensor& x) {
        return torch::avg_pool2d(x, {2, 2});
      });
  input_row(
      "adaptive_mean_pool2d", fmap,
      [m = fx::nn::AdaptiveMeanPool({7, 7})](const fx::Tensor& x) { return m(x); },
      [](const torch::Tensor& x) {
        return torch::adaptive_avg_pool2d(x, {7, 7});
      });
  input_row(
      "upsample_nearest2d", small_map,
      [m = fx::nn::Upsample({2, 2})](const fx::Tensor& x) { return m(x); },
      [](const torch::Tensor& x) {
        return F::interpolate(x, F::InterpolateFuncOptions()
                                     .scale_factor(std::vector<double>{2, 2})
                                     .mode(torch::kNearest));
      });
  input_row(
      "upsample_bilinear2d", small_map,
      [m = fx::nn::Upsample({2, 2}, fx::nn::UpsampleMode::bilinear)](const fx::Tensor& x) {
        return m(x);
      },
      [](const torch::Tensor& x) {
        return F::interpolate(x, F::InterpolateFuncOptions()
                                     .scale_factor(std::vector<double>{2, 2})
                                     .mode(torch::kBilinear)
                                     .align_corners(false));
      });
  input_row(
      "pixel_shuffle", {32, 256, 14, 14},
      [m = fx::nn::PixelShuffle(2)](const fx::Tensor& x) { return m(x); },
      [](const torch::Tensor& x) { return torch::pixel_shuffle(x, 2); });

  // Normalisation, in training mode (the batch's statistics).
  {
    auto m = fx::nn::BatchNorm(64);
    auto x = fx_x(fmap);
    torch::nn::BatchNorm2d t(64);
    add("batch_norm",
        fx_step(m, x, [](const fx::nn::BatchNorm& m, const fx::Tensor& x) { return m(x); }),
        torch_step(t->parameters(), to_torch(x),
                   [t](const torch::Tensor& x) mutable { return t->forward(x); }));
  }
  {  // a transformer's tokens: 32 sequences of 64, width 512
    auto m = fx::nn::LayerNorm(512);
    auto x = fx_x({32, 64, 512});
    torch::nn::LayerNorm t(torch::nn::LayerNormOptions({512}));
    add("layer_norm",
        fx_step(m, x, [](const fx::nn::LayerNorm& m, const fx::Tensor& x) { return m(x); }),
        torch_step(t->parameters(), to_torch(x),
                   [t](const torch::Tensor& x) mutable { return t->forward(x); }));
  }
  {
    auto m = fx::nn::GroupNorm(64, 8);
    auto x = fx_x(fmap);
    torch::nn::GroupNorm t(8, 64);
    add("group_norm",
        fx_step(m, x, [](const fx::nn::GroupNorm& m, const fx::Tensor& x) { return m(x); }),
        torch_step(t->parameters(), to_torch(x),
                   [t](const torch::Tensor& x) mutable { return t->forward(x); }));
  }
  {
    auto m = fx::nn::InstanceNorm(64, fx::identity, /*affine=*/true);
    auto x = fx_x(fmap);
    torch::nn::InstanceNorm2d t(torch::nn::InstanceNorm2dOptions(64).affine(true));
    add("instance_norm",
        fx_step(m, x, [](const fx::nn::InstanceNorm& m, const fx::Tensor& x) { return m(x); }),
        torch_step(t->parameters(), to_torch(x),
                   [t](const torch::Tensor& x) mutable { return t->forward(x); }));
  }
  input_row(
      "dropout", {128, 4096}, [m = fx::nn::Dropout(0.5)](const fx::Tensor& x) { return m(x); },
      [](const torch::Tensor& x) { return torch::dropout(x, 0.5, /*train=*/true); });

  // Lookups: a vocabulary of 10000, width 256; gradient with respect to the table.
  {
    auto m = fx::nn::Embedding(10000, 256, -1, g);
    auto idx = random_indices({32, 64}, 10000);
    torch::nn::Embedding t(10000, 256);
    add("embedding", fx_step_params(m, [idx](const fx::nn::Embedding& m) { return m(idx); }),
        torch_step(t->parameters(), to_torch(idx),
                   [t](const torch::Tensor& i) mutable { return t->forward(i); }));
  }
  {
    auto m = fx::nn::EmbeddingBag(10000, 256, fx::nn::BagMode::mean, g);
    auto idx = random_indices({256, 16}, 10000);
    torch::nn::EmbeddingBag t(torch::nn::EmbeddingBagOptions(10000, 256).mode(torch::kMean));
    add("embedding_bag", fx_step_params(m, [idx](const fx::nn::EmbeddingBag& m) { return m(idx); }),
        torch_step(t->parameters(), to_torch(idx),
                   [t](const torch::Tensor& i) mutable { return t->forward(i); }));
  }
  {  // Bilinear 64 x 64 -> 64, batch 256, both inputs the same tensor
    auto m = fx::nn::Bilinear(64, 64, 64, fx::identity, g);
    auto x = fx_x({256, 64});
    torch::nn::Bilinear t(64, 64, 64);
    add("bilinear",
        fx_step(m, x, [](const fx::nn::Bilinear& m, const fx::Tensor& x) { return m(x, x); }),
        torch_step(t->parameters(), to_torch(x),
                   [t](const torch::Tensor& x) mutable { return t->forward(x, x); }));
  }

  // Recurrent (N 32, T 64, features 64, hidden 256, as bench/recurrent_layers) and attention.
  {
    const int64_t N = 32, T = 64, Fe = 64, H = 256;
    auto x = fx_x({N, T, Fe});
    auto rnn = fx::nn::RNN(Fe, H, {.gen = &g});
    torch::nn::RNN trnn(torch::nn::RNNOptions(Fe, H).batch_first(true));
    add("rnn",
        fx_step(rnn, x, [](const fx::nn::RNN& m, const fx::Tensor& x) { return m(x).first; }),
        torch_step(trnn->parameters(), to_torch(x), [trnn](const torch::Tensor& x) mutable {
          return std::get<0>(trnn->forward(x));
        }));
    auto lstm = fx::nn::LSTM(Fe, H, {.gen = &g});
    torch::nn::LSTM tlstm(torch::nn::LSTMOptions(Fe, H).batch_first(true));
    add("lstm",
        fx_step(lstm, x, [](const fx::nn::LSTM& m, const fx::Tensor& x) { return m(x).first; }),
        torch_step(tlstm->parameters(), to_torch(x), [tlstm](const torch::Tensor& x) mutable {
          return std::get<0>(tlstm->forward(x));
        }));
    auto gru = fx::nn::GRU(Fe, H, {.gen = &g});
    torch::nn::GRU tgru(torch::nn::GRUOptions(Fe, H).batch_first(true));
    add("gru",
        fx_step(gru, x, [](const fx::nn::GRU& m, const fx::Tensor& x) { return m(x).first; }),
        torch_step(tgru->parameters(), to_torch(x), [tgru](const torch::Tensor& x) mutable {
          return std::get<0>(tgru->forward(x));
        }));
  }
  {  // self-attention: N 16, L 64, E 256, 8 heads (libtorch's layout is (L, N, E))
    auto m = fx::nn::MultiHeadAttention(256, 8, {.gen = &g});
    auto x = fx_x({16, 64, 256});
    torch::nn::MultiheadAttention t(torch::nn::MultiheadAttentionOptions(256, 8));
    add("multihead_attention",
        fx_step(m, x,
                [](const fx::nn::MultiHeadAttention& m, const fx::Tensor& x) {
                  return m(x, x, x).first;
                }),
        torch_step(
            t->parameters(), to_torch(x).transpose(0, 1).contiguous(),
            [t](const torch::Tensor& x) mutable { return std::get<0>(t->forward(x, x, x)); }));
  }

  // Activations on a (128, 4096) block.
  const fx::Shape act = {128, 4096};
  input_row(
      "relu", act, [](const fx::Tensor& x) { return fx::relu(x); },
      [](const torch::Tensor& x) { return torch::relu(x); });
  input_row(
      "gelu_tanh", act, [](const fx::Tensor& x) { return fx::gelu_tanh(x); },
      [](const torch::Tensor& x) { return torch::gelu(x, "tanh"); });
  input_row(
      "gelu_erf", act, [](const fx::Tensor& x) { return fx::gelu_erf(x); },
      [](const torch::Tensor& x) { return torch::gelu(x); });
  input_row(
      "sigmoid", act, [](const fx::Tensor& x) { return fx::sigmoid(x); },
      [](const torch::Tensor& x) { return torch::sigmoid(x); });
  input_row(
      "tanh", act, [](const fx::Tensor& x) { return fx::tanh(x); },
      [](const torch::Tensor& x) { return torch::tanh(x); });
  input_row(
      "softmax", act, [](const fx::Tensor& x) { return fx::softmax(x); },
      [](const torch::Tensor& x) { return torch::softmax(x, -1); });
  input_row(
      "logsoftmax", act, [](const fx::Tensor& x) { return fx::logsoftmax(x); },
      [](const torch::Tensor& x) { return torch::log_softmax(x, -1); });

  // Losses (mean over the batch): logits (128, 1000).
  {
    const fx::Shape s = {128, 1000};
    auto target = fx_x(s);
    input_row(
        "mse", s, [target](const fx::Tensor& x) { return fx::mse(x, target); },
        [t = to_torch(target)](const torch::Tensor& x) { return torch::mse_loss(x, t); });
    auto probs = fx::rand(s, g);
    input_row(
        "logitbinarycrossentropy", s,
        [probs](const fx::Tensor& x) { return fx::logitbinarycrossentropy(x, probs); },
        [t = to_torch(probs)](const torch::Tensor& x) {
          return torch::binary_cross_entropy_with_logits(x, t);
        });
    auto labels = random_indices({128}, 1000);
    input_row(
        "logitcrossentropy", s,
        [labels](const fx::Tensor& x) { return fx::logitcrossentropy(x, labels); },
        [t = to_torch(labels)](const torch::Tensor& x) { return torch::cross_entropy_loss(x, t); });
  }
  return rows;
}

void set_threads(int t) {
  omp_set_num_threads(t);
  if (openblas_set_num_threads) openblas_set_num_threads(t);
  torch::set_num_threads(t);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7, rounds = 1;
  std::vector<int> threads = {1};
  std::vector<std::string> only;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--reps") reps = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--threads") {
      threads.clear();
      for (const auto& t : split(argv[i + 1])) threads.push_back(std::max(1, std::stoi(t)));
    } else if (a == "--only") only = split(argv[i + 1]);
    else {
      std::fprintf(stderr,
                   "usage: layer_table [--reps N] [--rounds R] [--threads 1,2] [--only a,b]\n");
      return 2;
    }
  }
  torch::manual_seed(1);
  set_threads(threads.front());
  std::vector<Row> rows = make_rows();
  if (!only.empty())
    std::erase_if(rows, [&](const Row& r) {
      return std::find(only.begin(), only.end(), r.name) == only.end();
    });

  for (int t : threads) {
    set_threads(t);
    const bool cpu_time = t == 1;
    // Per row and round: the medians of that round's steps, and their ratio.
    std::vector<std::vector<double>> fx_ms(rows.size()), torch_ms(rows.size()), ratios(rows.size());
    for (int round = 0; round < rounds; ++round)
      for (size_t k = 0; k < rows.size(); ++k) {
        const Row& r = rows[k];
        if (round == 0) {
          r.fx();  // warm-up: first-touch allocations, oneDNN primitives, libtorch's autograd setup
          r.torch();
        }
        std::vector<double> tf, tt;
        for (int i = 0; i < reps; ++i) {
          double a = now_ms(cpu_time);
          r.fx();
          double b = now_ms(cpu_time);
          r.torch();
          double c = now_ms(cpu_time);
          tf.push_back(b - a), tt.push_back(c - b);
        }
        fx_ms[k].push_back(median(tf)), torch_ms[k].push_back(median(tt));
        ratios[k].push_back(fx_ms[k].back() / torch_ms[k].back());
      }
    const std::string prefix = t == 1 ? "layer_" : "layer_t" + std::to_string(t) + "_";
    double worst = 0;
    std::string slowest;
    for (size_t k = 0; k < rows.size(); ++k) {
      const char* p = prefix.c_str();
      const char* n = rows[k].name.c_str();
      const double ratio = median(ratios[k]);
      std::printf("%s%s_fx_ms=%.4f\n%s%s_torch_ms=%.4f\n%s%s_ratio=%.3f\n", p, n, median(fx_ms[k]),
                  p, n, median(torch_ms[k]), p, n, ratio);
      if (ratio > worst) worst = ratio, slowest = rows[k].name;
    }
    const std::string table = t == 1 ? "layer_table_" : "layer_table_t" + std::to_string(t) + "_";
    std::printf("%smax_ratio=%.3f\n%sslowest=%s\n", table.c_str(), worst, table.c_str(),
                slowest.c_str());
    std::fflush(stdout);
  }
  return 0;
}
