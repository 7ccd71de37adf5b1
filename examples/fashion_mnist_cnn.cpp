// Trains a LeNet-style convolutional network on Fashion-MNIST with Adam: convolution, max
// pooling, batch normalisation, dropout and dense layers, the layer library's CNN example.
//
//   ./build/examples/fashion_mnist_cnn                       // 3 epochs, all threads
//   ./build/examples/fashion_mnist_cnn --epochs 1 --threads 1 --train-subset 6000
//
//   (N, 784) -> (N, 1, 28, 28)
//   Conv 5x5 1 => 16, same padding, no bias; BatchNorm(16, relu); MaxPool 2x2   -> (N, 16, 14, 14)
//   Conv 5x5 16 => 32, valid, no bias;      BatchNorm(32, relu); MaxPool 2x2   -> (N, 32, 5, 5)
//   flatten; Dropout(0.25); Dense 800 => 128 relu; Dense 128 => 10            -> logits
//
// The convolutions carry no bias because the batch norm right after them would subtract it
// again. Training runs through fx::train::fit (batch 64, shuffled, Adam with its rate decaying
// from 2e-3 to 0 along a cosine over the whole run);
// after each epoch it prints `epoch=N train_loss=... test_accuracy=...` and the epoch's wall
// time, and at the end `test_accuracy=0.XXXX`, the line scripts and ctest read. BatchNorm and
// Dropout train inside the gradient and switch to their test behaviour (running statistics, no
// dropout) when accuracy evaluates the model outside it.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

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
#include <fluxion/optim/schedules.hpp>
#include <fluxion/optim/update.hpp>
#include <fluxion/train/fit.hpp>
#include <fluxion/train/metrics.hpp>

#include "cli.hpp"

// OpenBLAS keeps its own thread pool, which omp_set_num_threads does not reach (the dense
// layers' matmuls run there). Weak, so the example still links against a BLAS without it.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

struct Args {
  int epochs = 3;
  std::string data = fx::data::kFashionMnistDir;
  uint64_t seed = 1;
  int threads = 0;  // 0: leave the OpenMP / OpenBLAS defaults
  int64_t batch = 64;
  double lr = 2e-3;
  bool constant_lr = false;
  int64_t train_subset = 0, test_subset = 0;  // 0: all images
};

Args parse(int argc, char** argv) {
  Args a;
  fx::examples::Cli cli("fashion_mnist_cnn",
                        "Trains a LeNet-style CNN (conv, pool, batch norm, dropout, dense) on "
                        "Fashion-MNIST and prints the test accuracy after every epoch.");
  cli.option("--epochs", "N", "passes over the training images", a.epochs, {.min = 0});
  cli.option("--data", "DIR", "directory with the Fashion-MNIST IDX files", a.data);
  cli.option("--seed", "S", "seed for the initial weights, the shuffling and dropout", a.seed);
  cli.option("--threads", "T", "CPU threads for OpenMP, oneDNN and OpenBLAS", a.threads,
             {.min = 0, .shown_default = "all"});
  cli.option("--batch", "B", "images per training step", a.batch, {.min = int64_t(1)});
  cli.option("--lr", "RATE", "Adam's peak learning rate", a.lr, {.min = 0.0});
  cli.flag("--constant-lr", "keep the rate constant instead of a cosine decay to 0 over the run",
           a.constant_lr);
  cli.option("--train-subset", "N", "train on the first N images only", a.train_subset,
             {.min = int64_t(0), .shown_default = "all"});
  cli.option("--test-subset", "N", "evaluate on the first N test images only", a.test_subset,
             {.min = int64_t(0), .shown_default = "all"});
  cli.parse_or_exit(argc, argv);
  return a;
}

// The first n rows of a dataset (all of it when n is 0 or larger than it).
void keep_first(fx::data::Dataset& d, int64_t n) {
  if (n <= 0 || n >= d.size()) return;
  std::vector<int64_t> rows(static_cast<size_t>(n));
  std::iota(rows.begin(), rows.end(), int64_t(0));
  d.images = fx::data::take_rows(d.images, rows);
  d.labels = fx::data::take_rows(d.labels, rows);
}

// The loader's flat (N, 784) rows as one-channel 28x28 images.
fx::Tensor as_images(const fx::Tensor& x) { return fx::reshape(x, {x.shape()[0], 1, 28, 28}); }

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  if (args.threads > 0) {
    omp_set_num_threads(args.threads);
    if (openblas_set_num_threads) openblas_set_num_threads(args.threads);
  }

  fx::data::Dataset train, test;
  try {
    train = fx::data::fashion_mnist(args.data, "train");
    test = fx::data::fashion_mnist(args.data, "test");
  } catch (const fx::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  keep_first(train, args.train_subset);
  keep_first(test, args.test_subset);
  std::cout << "Fashion-MNIST: " << train.size() << " training and " << test.size()
            << " test images from " << args.data << "\n";

  using namespace fx::nn;
  fx::Generator gen(args.seed);
  fx::Generator dropout_gen(args.seed + 1);  // outlives the model, which points at it
  auto model =
      Chain(as_images, Conv({5, 5}, 1, 16, fx::identity, gen, {.same = true, .bias = false}),
            BatchNorm(16, fx::relu), MaxPool({2, 2}),
            Conv({5, 5}, 16, 32, fx::identity, gen, {.bias = false}), BatchNorm(32, fx::relu),
            MaxPool({2, 2}), flatten, Dropout(0.25, {}, &dropout_gen),
            Dense(32 * 5 * 5, 128, fx::relu, gen), Dense(128, 10, fx::identity, gen));

  auto opt = fx::optim::setup(fx::optim::Adam(args.lr), model);
  fx::data::DataLoader loader(train.images, train.labels,
                              {.batch = args.batch, .shuffle = true, .seed = args.seed});
  double acc = 0;
  auto epoch_start = std::chrono::steady_clock::now();
  auto evaluate = fx::train::evaluate([&] {
    const double train_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
    acc = fx::train::accuracy(model, test.images, test.labels);
    epoch_start = std::chrono::steady_clock::now();
    return fx::train::Metrics{{"test_accuracy", acc}, {"epoch_train_s", train_s}};
  });
  auto loss = [](const auto& m, const fx::Tensor& x, const fx::Tensor& y) {
    return fx::logitcrossentropy(m(x), y);
  };
  // A cosine decay over all the run's steps: the last epoch takes small steps, which is what
  // lifts the test accuracy of a short run (about a point over a constant rate here).
  std::function<double(int64_t)> schedule;
  if (!args.constant_lr)
    schedule = fx::optim::Cosine{.max = args.lr,
                                 .min = 0,
                                 .period = std::max<int64_t>(1, loader.size() * args.epochs),
                                 .restart = false};
  const auto t0 = std::chrono::steady_clock::now();
  try {
    fx::train::fit(model, opt, loader, loss,
                   {.epochs = args.epochs, .callbacks = {evaluate}, .schedule = schedule});
    if (args.epochs == 0) acc = fx::train::accuracy(model, test.images, test.labels);
  } catch (const fx::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wall_s=%.1f\n", total_s);
  std::printf("test_accuracy=%.4f\n", acc);
  return 0;
}
