// Epoch time of the Fashion-MNIST MLP (784-256-128-10 relu, Adam 1e-3, batch 128, shuffled),
// fluxion beside libtorch in the same process, from the same initial weights.
//
//   OPENBLAS_NUM_THREADS=2 ./build/bench/train_mlp --threads 2 --epochs 3
//   fluxion_epoch_s=...  libtorch_epoch_s=...  ratio=...   (fluxion / libtorch: below 1 is faster)
//   fluxion_test_accuracy=...  libtorch_test_accuracy=...    (after all timed epochs)
//
// Epochs alternate between the two libraries so that noise from other processes on the machine
// lands on both; the reported time is the median over epochs. --steps K times only the first K
// steps of each epoch (for quick runs), scales that to a whole epoch, and the output says so. Each side
// reads the loss every step (as a progress bar would), so both synchronise the same way.
// Without libtorch (CMake found no Torch) only the fluxion line is printed.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/data/dataloader.hpp>
#include <fluxion/data/idx.hpp>
#include <fluxion/nn/activations.hpp>
#include <fluxion/nn/chain.hpp>
#include <fluxion/nn/dense.hpp>
#include <fluxion/nn/losses.hpp>
#include <fluxion/optim/rules.hpp>
#include <fluxion/optim/update.hpp>
#include <fluxion/train/metrics.hpp>

#ifdef FLUXION_BENCH_TORCH
#include <torch/torch.h>
#endif

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int threads = 1;
  int epochs = 3;
  int64_t steps = 0;  // 0: whole epochs
  uint64_t seed = 1;
  std::string data = fx::data::kFashionMnistDir;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--threads") a.threads = std::atoi(v.c_str());
    else if (k == "--epochs") a.epochs = std::atoi(v.c_str());
    else if (k == "--steps") a.steps = std::atoll(v.c_str());
    else if (k == "--seed") a.seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--data") a.data = v;
    else {
      std::cerr << "usage: train_mlp [--threads T] [--epochs N>=3] [--steps K] [--seed S] [--data DIR]\n";
      std::exit(2);
    }
  }
  if (argc % 2 == 0) {
    std::cerr << "train_mlp: " << argv[argc - 1] << " needs a value\n";
    std::exit(2);
  }
  a.threads = std::max(a.threads, 1);
  a.epochs = std::max(a.epochs, 3);  // a median of fewer says little
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

using Mlp = fx::nn::Chain<fx::nn::Dense, fx::nn::Dense, fx::nn::Dense>;

// One (possibly truncated) epoch of fluxion training; returns seconds.
template <class Opt>
double fluxion_epoch(Mlp& model, Opt& opt, fx::data::DataLoader& loader, int64_t steps,
                     double& loss_out) {
  auto t0 = Clock::now();
  int64_t k = 0;
  double loss = 0;
  for (auto [x, y] : loader) {
    if (steps && k == steps) break;
    auto [l, grad] = fx::withgradient(
        [&](const auto& m) { return fx::logitcrossentropy(m(x), y); }, model);
    fx::optim::update(opt, model, grad);
    loss = l.item();
    ++k;
  }
  loss_out = loss;
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

#ifdef FLUXION_BENCH_TORCH
struct TorchMlpImpl : torch::nn::Module {
  torch::nn::Linear l1{784, 256}, l2{256, 128}, l3{128, 10};
  TorchMlpImpl() {
    register_module("l1", l1);
    register_module("l2", l2);
    register_module("l3", l3);
  }
  torch::Tensor forward(torch::Tensor x) {
    return l3(torch::relu(l2(torch::relu(l1(x)))));
  }
};
TORCH_MODULE(TorchMlp);

torch::Tensor to_torch(const fx::Tensor& t) {
  fx::Tensor c = t.contiguous();
  std::vector<int64_t> sizes(c.shape().begin(), c.shape().end());
  auto type = c.dtype() == fx::i64 ? torch::kLong : torch::kFloat;
  return torch::from_blob(c.raw_data(), sizes, type).clone();
}

// Starts libtorch from fluxion's initial weights: same init scale, same starting point.
void copy_weights(TorchMlp& tm, const Mlp& fm) {
  torch::NoGradGuard no_grad;
  const auto& [d1, d2, d3] = fm.layers;
  for (auto [lin, d] : {std::pair{tm->l1.get(), &d1}, {tm->l2.get(), &d2}, {tm->l3.get(), &d3}}) {
    lin->weight.copy_(to_torch(d->weight));
    lin->bias.copy_(to_torch(d->bias));
  }
}

double torch_epoch(TorchMlp& model, torch::optim::Adam& opt, const torch::Tensor& x,
                   const torch::Tensor& y, int64_t batch, int64_t steps, double& loss_out) {
  auto t0 = Clock::now();
  const int64_t n = x.size(0);
  torch::Tensor perm = torch::randperm(n, torch::kLong);  // the idiomatic libtorch shuffle
  double loss = 0;
  for (int64_t start = 0, k = 0; start < n; start += batch, ++k) {
    if (steps && k == steps) break;
    torch::Tensor idx = perm.slice(0, start, std::min(n, start + batch));
    torch::Tensor xb = x.index_select(0, idx), yb = y.index_select(0, idx);
    opt.zero_grad();
    torch::Tensor l = torch::nn::functional::cross_entropy(model->forward(xb), yb);
    l.backward();
    opt.step();
    loss = l.item<double>();
  }
  loss_out = loss;
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double torch_accuracy(TorchMlp& model, const torch::Tensor& x, const torch::Tensor& y) {
  torch::NoGradGuard no_grad;
  auto pred = model->forward(x).argmax(1);
  return pred.eq(y).sum().item<double>() / double(x.size(0));
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  omp_set_num_threads(args.threads);
  if (openblas_set_num_threads) openblas_set_num_threads(args.threads);
  const char* env = std::getenv("OPENBLAS_NUM_THREADS");
  if (!env || std::atoi(env) != args.threads)
    std::fprintf(stderr, "train_mlp: note: OPENBLAS_NUM_THREADS=%s; set it to %d for a fair run\n",
                 env ? env : "(unset)", args.threads);

  fx::data::Dataset train, test;
  try {
    train = fx::data::fashion_mnist(args.data, "train");
    test = fx::data::fashion_mnist(args.data, "test");
  } catch (const fx::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }

  fx::Generator gen(args.seed);
  Mlp model(fx::nn::Dense(784, 256, fx::relu, gen), fx::nn::Dense(256, 128, fx::relu, gen),
            fx::nn::Dense(128, 10, fx::identity, gen));
  auto opt = fx::optim::setup(fx::optim::Adam(1e-3), model);
  fx::data::DataLoader loader(train.images, train.labels,
                              {.batch = 128, .shuffle = true, .seed = args.seed});

#ifdef FLUXION_BENCH_TORCH
  torch::set_num_threads(args.threads);
  torch::manual_seed(args.seed);
  TorchMlp tmodel;
  copy_weights(tmodel, model);
  torch::optim::Adam topt(tmodel->parameters(), torch::optim::AdamOptions(1e-3));
  torch::Tensor tx = to_torch(train.images), ty = to_torch(train.labels);
  torch::Tensor tex = to_torch(test.images), tey = to_torch(test.labels);
#endif

  // With --steps, a repetition is K steps and its time is scaled up to a whole epoch.
  const int64_t epoch_steps = loader.size();
  const int64_t timed = args.steps ? std::min(args.steps, epoch_steps) : epoch_steps;
  const double scale = double(epoch_steps) / double(timed);
  std::printf("# MLP 784-256-128-10 relu, Adam(1e-3), batch 128, shuffled; threads=%d\n",
              args.threads);
  std::printf("# %d repetitions of %lld steps%s; median reported\n", args.epochs,
              (long long)timed, timed < epoch_steps ? ", scaled to a 469-step epoch" : " (a full epoch)");
  std::vector<double> ft, tt;
  for (int e = 0; e < args.epochs; ++e) {
    double fl = 0;
    ft.push_back(scale * fluxion_epoch(model, opt, loader, args.steps, fl));
    std::printf("# rep %d: fluxion %.3f s (loss %.4f)", e + 1, ft.back(), fl);
#ifdef FLUXION_BENCH_TORCH
    double tl = 0;
    tt.push_back(scale * torch_epoch(tmodel, topt, tx, ty, 128, args.steps, tl));
    std::printf("  libtorch %.3f s (loss %.4f)", tt.back(), tl);
#endif
    std::printf("\n");
    std::fflush(stdout);
  }
  const double f = median(ft);
  std::printf("fluxion_epoch_s=%.4f\n", f);
  std::printf("fluxion_test_accuracy=%.4f\n",
              fx::train::accuracy(model, test.images, test.labels));
#ifdef FLUXION_BENCH_TORCH
  const double t = median(tt);
  std::printf("libtorch_epoch_s=%.4f\n", t);
  std::printf("libtorch_test_accuracy=%.4f\n", torch_accuracy(tmodel, tex, tey));
  std::printf("# ratio = fluxion / libtorch epoch time: below 1 means fluxion is faster\n");
  std::printf("ratio=%.3f\n", f / t);
#endif
  return 0;
}
