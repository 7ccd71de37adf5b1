// Training speed of examples/fashion_mnist_cnn's network (conv 5x5 1=>16 same, BatchNorm, relu,
// max pool 2, conv 5x5 16=>32, BatchNorm, relu, max pool 2, flatten, dropout 0.25, Dense
// 800=>128 relu, Dense 128=>10; cross-entropy, Adam 1e-3) in fluxion beside libtorch
// (torch::nn::Conv2d, BatchNorm2d, MaxPool2d, Dropout, Linear, torch::optim::Adam) in the same
// process, from the same initial weights, on the same batches of Fashion-MNIST.
//
//   ./build/bench/train_cnn                          // threads 1 and 2, 5 rounds of 20 steps
//   ./build/bench/train_cnn --threads 1 --rounds 3 --steps 10
//   cnn_images_per_s_fx_t1=...  cnn_images_per_s_torch_t1=...
//   cnn_epoch_s_fx_t1=...  cnn_epoch_s_torch_t1=...  cnn_ratio_t1=...   (fluxion / libtorch)
//
// Each round times --steps training steps of fluxion, then the same steps of libtorch, for each
// thread count in turn, so that noise from other processes lands on both; one untimed warm-up
// round comes first. A figure is the median over rounds; the epoch time is that per-step time
// times the 469 steps of a 60000-image epoch at batch 128 (the batches are cut before timing,
// so data loading is in neither). With one thread everything runs on the calling thread and
// the clock is that thread's CPU time, which a busy shared machine disturbs far less than wall
// time; with more it is wall time (the *_wall_* lines give the wall time at one thread too).
// On a machine busier than its cores (the shared 2-core VM at load 5-9), OpenMP's default of
// spinning at each barrier makes the 2-thread wall time a matter of scheduling: a thread spins
// while its partner waits for a core, at every parallel region of the step, and the epoch took
// 5-10 times the 1-thread one, for either library. OMP_WAIT_POLICY=passive (threads sleep at
// barriers; it applies to both libraries, which share the runtime) gives figures that mean
// something there. Each side reads the loss every step, as a progress bar would. The losses after the last
// round are printed too: from the same start on the same batches they stay close (dropout
// draws differ), a check that both train the same network. Without libtorch (CMake found no
// Torch), or with --fluxion-only (for a profile of fluxion alone), only the fluxion lines are
// printed.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/data/dataloader.hpp>
#include <fluxion/data/idx.hpp>
#include <fluxion/nn/activations.hpp>
#include <fluxion/nn/batchnorm.hpp>
#include <fluxion/nn/chain.hpp>
#include <fluxion/nn/conv.hpp>
#include <fluxion/nn/dense.hpp>
#include <fluxion/nn/dropout.hpp>
#include <fluxion/nn/losses.hpp>
#include <fluxion/nn/pad.hpp>
#include <fluxion/nn/pool.hpp>
#include <fluxion/ops/view.hpp>
#include <fluxion/optim/rules.hpp>
#include <fluxion/optim/update.hpp>

#ifdef FLUXION_BENCH_TORCH
#include <torch/torch.h>
#endif

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

struct Args {
  std::vector<int> threads{1, 2};
  int64_t steps = 20, rounds = 5, batch = 128;
  uint64_t seed = 1;
  std::string data = fx::data::kFashionMnistDir;
  bool torch = true;  // --fluxion-only: skip libtorch (for profiling fluxion alone)
};

std::vector<int> parse_counts(const std::string& list) {
  std::vector<int> out;
  for (size_t at = 0; at <= list.size();) {
    const size_t comma = std::min(list.find(',', at), list.size());
    out.push_back(std::max(1, std::atoi(list.substr(at, comma - at).c_str())));
    at = comma + 1;
  }
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    if (std::string(argv[i]) == "--fluxion-only") {
      a.torch = false;
      --i;
      continue;
    }
    if (i + 1 == argc) {
      std::cerr << "train_cnn: " << argv[i] << " needs a value\n";
      std::exit(2);
    }
    const std::string k = argv[i], v = argv[i + 1];
    auto num = [&] { return std::max<int64_t>(1, std::atoll(v.c_str())); };
    if (k == "--threads") a.threads = parse_counts(v);
    else if (k == "--steps") a.steps = num();
    else if (k == "--rounds") a.rounds = num();
    else if (k == "--batch") a.batch = num();
    else if (k == "--seed") a.seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--data") a.data = v;
    else {
      std::cerr << "usage: train_cnn [--threads T[,T...]] [--steps K] [--rounds R] [--batch N] "
                   "[--seed S] [--data DIR] [--fluxion-only]\n";
      std::exit(2);
    }
  }
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Seconds on the clock that suits the thread count (see the header comment); 0: the wall.
double now_s(int threads) {
  if (threads == 1) {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

fx::Tensor as_images(const fx::Tensor& x) { return fx::reshape(x, {x.shape()[0], 1, 28, 28}); }

// examples/fashion_mnist_cnn's model.
auto make_model(fx::Generator& gen, fx::Generator& dropout_gen) {
  using namespace fx::nn;
  return Chain(as_images, Conv({5, 5}, 1, 16, fx::identity, gen, {.same = true, .bias = false}),
               BatchNorm(16, fx::relu), MaxPool({2, 2}),
               Conv({5, 5}, 16, 32, fx::identity, gen, {.bias = false}), BatchNorm(32, fx::relu),
               MaxPool({2, 2}), flatten, Dropout(0.25, {}, &dropout_gen),
               Dense(32 * 5 * 5, 128, fx::relu, gen), Dense(128, 10, fx::identity, gen));
}
using Model = decltype(make_model(std::declval<fx::Generator&>(), std::declval<fx::Generator&>()));

#ifdef FLUXION_BENCH_TORCH
struct TorchCnnImpl : torch::nn::Module {
  torch::nn::Conv2d c1{torch::nn::Conv2dOptions(1, 16, 5).padding(2).bias(false)};
  torch::nn::BatchNorm2d b1{16};
  torch::nn::Conv2d c2{torch::nn::Conv2dOptions(16, 32, 5).bias(false)};
  torch::nn::BatchNorm2d b2{32};
  torch::nn::Dropout drop{0.25};
  torch::nn::Linear l1{32 * 5 * 5, 128}, l2{128, 10};
  TorchCnnImpl() {
    register_module("c1", c1);
    register_module("b1", b1);
    register_module("c2", c2);
    register_module("b2", b2);
    register_module("drop", drop);
    register_module("l1", l1);
    register_module("l2", l2);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    namespace F = torch::nn::functional;
    torch::Tensor h = x.view({x.size(0), 1, 28, 28});
    h = F::max_pool2d(torch::relu(b1(c1(h))), F::MaxPool2dFuncOptions(2));
    h = F::max_pool2d(torch::relu(b2(c2(h))), F::MaxPool2dFuncOptions(2));
    h = drop(h.flatten(1));
    return l2(torch::relu(l1(h)));
  }
};
TORCH_MODULE(TorchCnn);

torch::Tensor to_torch(const fx::Tensor& t) {
  fx::Tensor c = t.contiguous();
  std::vector<int64_t> sizes(c.shape().begin(), c.shape().end());
  auto type = c.dtype() == fx::i64 ? torch::kLong : torch::kFloat;
  return torch::from_blob(c.raw_data(), sizes, type).clone();
}

// libtorch starts from fluxion's initial weights (same layouts: OIHW convolutions, (out, in)
// dense weights).
void copy_weights(TorchCnn& tm, const Model& fm) {
  torch::NoGradGuard no_grad;
  tm->c1->weight.copy_(to_torch(std::get<1>(fm.layers).weight));
  tm->c2->weight.copy_(to_torch(std::get<4>(fm.layers).weight));
  tm->l1->weight.copy_(to_torch(std::get<9>(fm.layers).weight));
  tm->l1->bias.copy_(to_torch(std::get<9>(fm.layers).bias));
  tm->l2->weight.copy_(to_torch(std::get<10>(fm.layers).weight));
  tm->l2->bias.copy_(to_torch(std::get<10>(fm.layers).bias));
}

// torch::set_num_threads rebuilds libtorch's thread pool, whose new worker spins for a while
// before it sleeps (bench/train_mlp.cpp measured it); the pause keeps that out of the timing.
void set_torch_threads(int threads) {
  torch::set_num_threads(threads);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}
#endif

void set_threads(int threads) {
  omp_set_num_threads(threads);
  if (openblas_set_num_threads) openblas_set_num_threads(threads);
}

// What one thread count trains: its own copy of each model from the same initial weights, and
// the per-step seconds of each timed round.
struct Run {
  int threads;
  fx::Generator gen, dropout_gen;
  Model model;
  decltype(fx::optim::setup(fx::optim::Adam(1e-3), std::declval<Model&>())) opt;
  std::vector<double> fx_s, fx_wall_s, torch_s, torch_wall_s;
  double fx_loss = 0, torch_loss = 0;
#ifdef FLUXION_BENCH_TORCH
  TorchCnn tmodel;
  torch::optim::Adam topt;
#endif
  Run(int threads, uint64_t seed)
      : threads(threads),
        gen(seed),
        dropout_gen(seed + 1),
        model(make_model(gen, dropout_gen)),
        opt(fx::optim::setup(fx::optim::Adam(1e-3), model))
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
};

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  fx::data::Dataset train;
  try {
    train = fx::data::fashion_mnist(args.data, "train");
  } catch (const fx::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  const int64_t epoch_steps = (train.size() + args.batch - 1) / args.batch;

  // The batches of all rounds (warm-up included), cut once from one shuffled pass (wrapping
  // around when the rounds need more): both libraries and every thread count train on them.
  struct Batch {
    fx::Tensor x, y;
#ifdef FLUXION_BENCH_TORCH
    torch::Tensor tx, ty;
#endif
  };
  std::vector<Batch> batches;
  {
    fx::data::DataLoader loader(train.images, train.labels,
                                {.batch = args.batch, .shuffle = true, .seed = args.seed});
    while (int64_t(batches.size()) < (args.rounds + 1) * args.steps)
      for (auto [x, y] : loader) {
        if (int64_t(batches.size()) == (args.rounds + 1) * args.steps) break;
        if (x.shape()[0] != args.batch) continue;  // every step the same size
        Batch b{x.contiguous(), y.contiguous()};
#ifdef FLUXION_BENCH_TORCH
        b.tx = to_torch(b.x);
        b.ty = to_torch(b.y);
#endif
        batches.push_back(std::move(b));
      }
  }

#ifdef FLUXION_BENCH_TORCH
  torch::manual_seed(args.seed);
#endif
  std::vector<std::unique_ptr<Run>> runs;
  for (int t : args.threads) runs.push_back(std::make_unique<Run>(t, args.seed));

  auto fluxion_steps = [&](Run& run, int64_t first) {
    auto loss_fn = [](const Model& m, const fx::Tensor& x, const fx::Tensor& y) {
      return fx::logitcrossentropy(m(x), y);
    };
    for (int64_t k = first; k < first + args.steps; ++k) {
      const Batch& b = batches[size_t(k)];
      auto [loss, grad] =
          fx::withgradient([&](const Model& m) { return loss_fn(m, b.x, b.y); }, run.model);
      fx::optim::update(run.opt, run.model, grad);
      run.fx_loss = loss.item();
    }
  };
#ifdef FLUXION_BENCH_TORCH
  auto torch_steps = [&](Run& run, int64_t first) {
    run.tmodel->train();
    for (int64_t k = first; k < first + args.steps; ++k) {
      const Batch& b = batches[size_t(k)];
      run.topt.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(run.tmodel->forward(b.tx), b.ty);
      loss.backward();
      run.topt.step();
      run.torch_loss = loss.item<double>();
    }
  };
#endif

  std::string counts;
  for (int t : args.threads) counts += (counts.empty() ? "" : ",") + std::to_string(t);
  std::printf(
      "# CNN conv5x5(1=>16,same)+BN+relu, maxpool2, conv5x5(16=>32)+BN+relu, maxpool2, "
      "dropout 0.25, dense 800=>128=>10; Adam(1e-3), batch %lld; threads %s\n",
      (long long)args.batch, counts.c_str());
  std::printf(
      "# %lld rounds of %lld steps after a warm-up round; median per-step time x %lld steps "
      "= epoch (1 thread: thread CPU time; more: wall time)\n",
      (long long)args.rounds, (long long)args.steps, (long long)epoch_steps);
  for (int64_t r = 0; r <= args.rounds; ++r) {  // round 0: the untimed warm-up
    for (auto& run : runs) {
      set_threads(run->threads);
      const bool keep = r > 0;
      auto timed = [&](auto&& steps, std::vector<double>& s, std::vector<double>& wall) {
        const double t0 = now_s(run->threads), w0 = now_s(0);
        steps(*run, r * args.steps);
        if (!keep) return;
        s.push_back((now_s(run->threads) - t0) / double(args.steps));
        wall.push_back((now_s(0) - w0) / double(args.steps));
      };
      timed(fluxion_steps, run->fx_s, run->fx_wall_s);
#ifdef FLUXION_BENCH_TORCH
      if (args.torch) {
        set_torch_threads(run->threads);
        timed(torch_steps, run->torch_s, run->torch_wall_s);
      }
      if (keep && args.torch)
        std::printf(
            "# round %lld t%d: fluxion %.2f ms/step (loss %.4f), libtorch %.2f ms/step "
            "(loss %.4f)\n",
            (long long)r, run->threads, 1e3 * run->fx_s.back(), run->fx_loss,
            1e3 * run->torch_s.back(), run->torch_loss);
#endif
      if (keep && run->torch_s.empty())
        std::printf("# round %lld t%d: fluxion %.2f ms/step (loss %.4f)\n", (long long)r,
                    run->threads, 1e3 * run->fx_s.back(), run->fx_loss);
      std::fflush(stdout);
    }
  }
  const double images = double(epoch_steps * args.batch);
  for (auto& run : runs) {
    const std::string t = "_t" + std::to_string(run->threads);
    const double f = median(run->fx_s) * double(epoch_steps);
    std::printf("cnn_epoch_s_fx%s=%.3f\n", t.c_str(), f);
    std::printf("cnn_images_per_s_fx%s=%.0f\n", t.c_str(), images / f);
    std::printf("cnn_epoch_wall_s_fx%s=%.3f\n", t.c_str(),
                median(run->fx_wall_s) * double(epoch_steps));
    std::printf("cnn_loss_last_fx%s=%.4f\n", t.c_str(), run->fx_loss);
#ifdef FLUXION_BENCH_TORCH
    if (run->torch_s.empty()) continue;
    const double l = median(run->torch_s) * double(epoch_steps);
    std::printf("cnn_epoch_s_torch%s=%.3f\n", t.c_str(), l);
    std::printf("cnn_images_per_s_torch%s=%.0f\n", t.c_str(), images / l);
    std::printf("cnn_epoch_wall_s_torch%s=%.3f\n", t.c_str(),
                median(run->torch_wall_s) * double(epoch_steps));
    std::printf("cnn_loss_last_torch%s=%.4f\n", t.c_str(), run->torch_loss);
    std::printf("# ratio = fluxion / libtorch epoch time: below 1 means fluxion is faster\n");
    std::printf("cnn_ratio%s=%.3f\n", t.c_str(), f / l);
#endif
  }
  return 0;
}
