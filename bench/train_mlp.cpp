// Epoch time of the Fashion-MNIST MLP (784-256-128-10 relu, Adam 1e-3, batch 128, shuffled),
// fluxion beside libtorch in the same process, from the same initial weights.
//
//   OPENBLAS_NUM_THREADS=2 ./build/bench/train_mlp --threads 2 --epochs 3
//   fluxion_epoch_s=...  libtorch_epoch_s=...  ratio=...   (fluxion / libtorch: below 1 is faster)
//   fluxion_images_per_s=...  libtorch_images_per_s=...   (training images per second)
//   fluxion_test_accuracy=...  libtorch_test_accuracy=...    (after all timed epochs)
//
//   OPENBLAS_NUM_THREADS=2 ./build/bench/train_mlp --threads 1,2 --epochs 5
//   t1_fluxion_epoch_s=... t2_fluxion_epoch_s=... fluxion_speedup_t2_vs_t1=... (and libtorch's)
//
// Epochs alternate between the two libraries so that noise from other processes on the machine
// lands on both; the reported time is the median over epochs. With several thread counts, each
// count trains its own copy of both models and the counts also take their epochs in turn; a
// speedup is the median of the per-repetition ratios, so that the machine's speed drifting
// between one thread count's epochs and the next does not enter it. --steps K times only the
// first K steps of each epoch (for quick runs), scales that to a whole epoch, and the output says
// so. Each side reads the loss every step (as a progress bar would), so both synchronise the same
// way. fluxion's threads split each step's batch by their speeds (--parallel balanced, the
// default) or evenly (even), or split each large op (ops); libtorch's split each op, its only
// mode. Without libtorch (CMake found no
// Torch) only the fluxion lines are printed.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
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
#include <fluxion/train/data_parallel.hpp>
#include <fluxion/train/metrics.hpp>

#ifdef FLUXION_BENCH_TORCH
#include <torch/torch.h>
#endif

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::vector<int> threads{1};
  int epochs = 3;
  int64_t steps = 0;                  // 0: whole epochs
  std::string parallel = "balanced";  // --parallel balanced|even|ops: see fluxion_epoch
  uint64_t seed = 1;
  std::string data = fx::data::kFashionMnistDir;
};

// "1,2" -> {1, 2}; counts below 1 become 1.
std::vector<int> parse_counts(const std::string& list) {
  std::vector<int> out;
  for (size_t at = 0; at <= list.size();) {
    size_t comma = std::min(list.find(',', at), list.size());
    out.push_back(std::max(1, std::atoi(list.substr(at, comma - at).c_str())));
    at = comma + 1;
  }
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--threads") a.threads = parse_counts(v);
    else if (k == "--epochs") a.epochs = std::atoi(v.c_str());
    else if (k == "--steps") a.steps = std::atoll(v.c_str());
    else if (k == "--seed") a.seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--parallel" && (v == "balanced" || v == "even" || v == "ops")) a.parallel = v;
    else if (k == "--data") a.data = v;
    else {
      std::cerr << "usage: train_mlp [--threads T[,T...]] [--epochs N>=3] [--steps K] [--seed S] "
                   "[--parallel balanced|even|ops] [--data DIR]\n";
      std::exit(2);
    }
  }
  if (argc % 2 == 0) {
    std::cerr << "train_mlp: " << argv[argc - 1] << " needs a value\n";
    std::exit(2);
  }
  a.epochs = std::max(a.epochs, 3);  // a median of fewer says little
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

using Mlp = fx::nn::Chain<fx::nn::Dense, fx::nn::Dense, fx::nn::Dense>;

// One (possibly truncated) epoch of fluxion training; returns seconds. With several threads,
// "balanced" and "even" split each step's batch across them, one join per step: by the speed
// each thread has shown (fx::train::DataParallel, which `dp` carries from step to step and epoch
// to epoch) or in equal shares (fx::train::data_parallel_withgradient). "ops" lets the large ops
// split their own work instead (intra-op threading, as libtorch does): a join per op. With one
// thread all three are plain withgradient.
template <class Opt>
double fluxion_epoch(Mlp& model, Opt& opt, fx::data::DataLoader& loader, int64_t steps,
                     const std::string& parallel, fx::train::DataParallel& dp, double& loss_out) {
  auto t0 = Clock::now();
  int64_t k = 0;
  double loss = 0;
  auto loss_fn = [](const Mlp& m, const fx::Tensor& x, const fx::Tensor& y) {
    return fx::logitcrossentropy(m(x), y);
  };
  for (auto [x, y] : loader) {
    if (steps && k == steps) break;
    auto [l, grad] = parallel == "balanced" ? dp.withgradient(loss_fn, model, x, y)
                     : parallel == "even"
                         ? fx::train::data_parallel_withgradient(loss_fn, model, x, y)
                         : fx::withgradient([&](const Mlp& m) { return loss_fn(m, x, y); }, model);
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
  torch::Tensor forward(torch::Tensor x) { return l3(torch::relu(l2(torch::relu(l1(x))))); }
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

// What one thread count trains: its own copy of each model, from the same initial weights, and
// the epoch times it measured.
struct Run {
  int threads;
  Mlp model;
  decltype(fx::optim::setup(fx::optim::Adam(1e-3), std::declval<Mlp&>())) opt;
  fx::data::DataLoader loader;
  fx::train::DataParallel dp;
  std::vector<double> fluxion_s, torch_s;
#ifdef FLUXION_BENCH_TORCH
  TorchMlp tmodel;
  torch::optim::Adam topt;
#endif

  Run(int threads, const fx::data::Dataset& train, uint64_t seed)
      : threads(threads),
        model(make_model(seed)),
        opt(fx::optim::setup(fx::optim::Adam(1e-3), model)),
        loader(train.images, train.labels, {.batch = 128, .shuffle = true, .seed = seed})
#ifdef FLUXION_BENCH_TORCH
        ,
        tmodel(),
        topt(tmodel->parameters(), torch::optim::AdamOptions(1e-3))
#endif
  {
#ifdef FLUXION_BENCH_TORCH
    copy_weights(tmodel, model);
#endif
  }

  static Mlp make_model(uint64_t seed) {
    fx::Generator gen(seed);
    return Mlp(fx::nn::Dense(784, 256, fx::relu, gen), fx::nn::Dense(256, 128, fx::relu, gen),
               fx::nn::Dense(128, 10, fx::identity, gen));
  }
};

// The thread count of OpenMP's team (fluxion's kernels, oneDNN; libtorch's intra-op loops use
// the same team) and of OpenBLAS.
void set_threads(int threads) {
  omp_set_num_threads(threads);
  if (openblas_set_num_threads) openblas_set_num_threads(threads);
}

#ifdef FLUXION_BENCH_TORCH
// libtorch's own thread count, set right before each libtorch epoch and followed by an untimed
// pause. torch::set_num_threads also rebuilds libtorch's pthreadpool, whose new worker spins for
// 12-16 ms of CPU time before it sleeps (measured here: process CPU time across 50 ms of idling
// after the call; none in the 300 ms after that). Called before each fluxion epoch, as it once
// was, that spin took a core from fluxion's 2-thread epoch: 4-5% longer, and a 2-thread speedup
// of 1.57-1.60 instead of 1.62-1.65 with libtorch's epochs skipped, on the Intel Xeon VM.
void set_torch_threads(int threads) {
  torch::set_num_threads(threads);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}
#endif

// Median over repetitions of base[e] / other[e]: how many times faster `other` ran.
double median_speedup(const std::vector<double>& base, const std::vector<double>& other) {
  std::vector<double> r;
  for (size_t e = 0; e < base.size(); ++e) r.push_back(base[e] / other[e]);
  return median(r);
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  const int most = *std::max_element(args.threads.begin(), args.threads.end());
  const char* env = std::getenv("OPENBLAS_NUM_THREADS");
  if (!env || std::atoi(env) != most)
    std::fprintf(stderr, "train_mlp: note: OPENBLAS_NUM_THREADS=%s; set it to %d for a fair run\n",
                 env ? env : "(unset)", most);

  fx::data::Dataset train, test;
  try {
    train = fx::data::fashion_mnist(args.data, "train");
    test = fx::data::fashion_mnist(args.data, "test");
  } catch (const fx::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }

#ifdef FLUXION_BENCH_TORCH
  torch::manual_seed(args.seed);
  torch::Tensor tx = to_torch(train.images), ty = to_torch(train.labels);
  torch::Tensor tex = to_torch(test.images), tey = to_torch(test.labels);
#endif
  std::vector<std::unique_ptr<Run>> runs;
  for (int t : args.threads) runs.push_back(std::make_unique<Run>(t, train, args.seed));

  // With --steps, a repetition is K steps and its time is scaled up to a whole epoch.
  const int64_t epoch_steps = runs[0]->loader.size();
  const int64_t timed = args.steps ? std::min(args.steps, epoch_steps) : epoch_steps;
  const double scale = double(epoch_steps) / double(timed);
  std::string counts;
  for (int t : args.threads) {
    if (!counts.empty()) counts += ',';
    counts += std::to_string(t);
  }
  std::printf(
      "# MLP 784-256-128-10 relu, Adam(1e-3), batch 128, shuffled; threads=%s; fluxion "
      "--parallel %s\n",
      counts.c_str(), args.parallel.c_str());
  std::printf("# %d repetitions of %lld steps%s; median reported\n", args.epochs, (long long)timed,
              timed < epoch_steps ? ", scaled to a 469-step epoch" : " (a full epoch)");
  for (int e = 0; e < args.epochs; ++e) {
    std::printf("# rep %d:", e + 1);
    for (auto& run : runs) {
      set_threads(run->threads);
      double fl = 0;
      run->fluxion_s.push_back(scale * fluxion_epoch(run->model, run->opt, run->loader, args.steps,
                                                     args.parallel, run->dp, fl));
      std::printf("  t%d fluxion %.3f s (loss %.4f)", run->threads, run->fluxion_s.back(), fl);
#ifdef FLUXION_BENCH_TORCH
      set_torch_threads(run->threads);
      double tl = 0;
      run->torch_s.push_back(scale *
                             torch_epoch(run->tmodel, run->topt, tx, ty, 128, args.steps, tl));
      std::printf("  libtorch %.3f s (loss %.4f)", run->torch_s.back(), tl);
#endif
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  // One thread count prints plain names; several prefix theirs with tT_. Images per second: the
  // training set over the median epoch time.
  const double images = double(runs[0]->loader.num_samples());
  for (auto& run : runs) {
    std::string pre;
    if (runs.size() > 1) pre.append("t").append(std::to_string(run->threads)).append("_");
    set_threads(run->threads);
    const double f = median(run->fluxion_s);
    std::printf("%sfluxion_epoch_s=%.4f\n", pre.c_str(), f);
    std::printf("%sfluxion_images_per_s=%.0f\n", pre.c_str(), images / f);
    std::printf("%sfluxion_test_accuracy=%.4f\n", pre.c_str(),
                fx::train::accuracy(run->model, test.images, test.labels));
#ifdef FLUXION_BENCH_TORCH
    const double t = median(run->torch_s);
    std::printf("%slibtorch_epoch_s=%.4f\n", pre.c_str(), t);
    std::printf("%slibtorch_images_per_s=%.0f\n", pre.c_str(), images / t);
    std::printf("%slibtorch_test_accuracy=%.4f\n", pre.c_str(),
                torch_accuracy(run->tmodel, tex, tey));
    std::printf("# ratio = fluxion / libtorch epoch time: below 1 means fluxion is faster\n");
    std::printf("%sratio=%.3f\n", pre.c_str(), f / t);
#endif
  }
  if (runs.size() > 1)
    std::printf("# speedup = median over repetitions of (epoch time at t%d) / (epoch time at tT)\n",
                runs[0]->threads);
  for (size_t i = 1; i < runs.size(); ++i) {
    const std::string name = "_speedup_t" + std::to_string(runs[i]->threads) + "_vs_t" +
                             std::to_string(runs[0]->threads);
    std::printf("fluxion%s=%.3f\n", name.c_str(),
                median_speedup(runs[0]->fluxion_s, runs[i]->fluxion_s));
#ifdef FLUXION_BENCH_TORCH
    std::printf("libtorch%s=%.3f\n", name.c_str(),
                median_speedup(runs[0]->torch_s, runs[i]->torch_s));
#endif
  }
  return 0;
}
