// Trains a 784-256-128-10 relu MLP on Fashion-MNIST with Adam, the "hello world" of fluxion.
//
//   ./scripts/demo.sh --epochs 5            // installs what is missing, builds, runs this
//   ./build/examples/fashion_mnist_mlp --epochs 1 --threads 2 --data /usr/share/datasets/fashion-mnist
//
// Prints a progress bar with the running training loss, the test accuracy after every epoch,
// and finally `test_accuracy=0.XXXX` (the line scripts and CI read).
#include <omp.h>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>

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
#include <fluxion/train/progress.hpp>

#include "cli.hpp"

// OpenBLAS keeps its own thread pool, which omp_set_num_threads does not reach. Weak, so the
// example still links against a BLAS without this function.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

struct Args {
  int epochs = 1;
  std::string data = fx::data::kFashionMnistDir;
  uint64_t seed = 1;
  int threads = 0;  // 0: leave the OpenMP / OpenBLAS defaults
};

Args parse(int argc, char** argv) {
  Args a;
  fx::examples::Cli cli("fashion_mnist_mlp",
                        "Trains a 784-256-128-10 relu MLP on Fashion-MNIST with Adam and prints "
                        "the test accuracy.");
  cli.option("--epochs", "N", "passes over the 60000 training images", a.epochs, {.min = 0});
  cli.option("--data", "DIR", "directory with the Fashion-MNIST IDX files", a.data);
  cli.option("--seed", "S", "seed for the initial weights and the shuffling", a.seed);
  cli.option("--threads", "T", "CPU threads for OpenMP and OpenBLAS", a.threads,
             {.min = 0, .shown_default = "all"});
  cli.parse_or_exit(argc, argv);
  return a;
}

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
  std::cout << "Fashion-MNIST: " << train.size() << " training and " << test.size()
            << " test images from " << args.data << "\n";

  fx::Generator gen(args.seed);
  auto model = fx::nn::Chain(fx::nn::Dense(784, 256, fx::relu, gen),
                             fx::nn::Dense(256, 128, fx::relu, gen),
                             fx::nn::Dense(128, 10, fx::identity, gen));
  auto opt = fx::optim::setup(fx::optim::Adam(1e-3), model);
  fx::data::DataLoader loader(train.images, train.labels,
                              {.batch = 128, .shuffle = true, .seed = args.seed});

  double acc = fx::train::accuracy(model, test.images, test.labels);
  for (int epoch = 1; epoch <= args.epochs; ++epoch) {
    char label[48];
    std::snprintf(label, sizeof label, "epoch %d/%d", epoch, args.epochs);
    fx::train::ProgressBar bar(loader.size(), {.label = label});
    fx::train::RunningMean loss;
    for (auto [x, y] : loader) {
      auto [l, grad] = fx::withgradient(
          [&](const auto& m) { return fx::logitcrossentropy(m(x), y); }, model);
      fx::optim::update(opt, model, grad);
      loss.add(l.item(), double(x.size(0)));
      bar.update({{"loss", loss.value()}});
    }
    bar.finish();
    acc = fx::train::accuracy(model, test.images, test.labels);
    std::printf("epoch %d: train_loss=%.4f test_accuracy=%.4f (%.1f s)\n", epoch, loss.value(),
                acc, bar.elapsed_s());
    std::fflush(stdout);
  }
  std::printf("test_accuracy=%.4f\n", acc);
  return 0;
}
