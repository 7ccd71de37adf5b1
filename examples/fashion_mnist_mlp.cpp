// Trains a 784-256-128-10 relu MLP on Fashion-MNIST with Adam, the "hello world" of fluxion.
//
//   ./scripts/demo.sh --epochs 5            // installs what is missing, builds, runs this
//   ./build/examples/fashion_mnist_mlp --epochs 1 --threads 2 --data /usr/share/datasets/fashion-mnist
//
// Prints a progress bar with the running training loss, one line per epoch
// `epoch=N train_loss=... test_accuracy=...`, and finally `test_accuracy=0.XXXX` (the line
// scripts and CI read). Training runs through fx::train::fit; --save, --checkpoint/--resume,
// --opt, --schedule and --plot show save/load, checkpoints and plots:
//
//   fashion_mnist_mlp --epochs 2 --checkpoint run      // run/checkpoint.safetensors per epoch
//   fashion_mnist_mlp --epochs 3 --resume run --save mlp.safetensors --plot curves.png
//   // the resumed epoch 3 prints the same line as an uninterrupted 3-epoch run
#include <omp.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
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
#include <fluxion/io/save.hpp>
#include <fluxion/train/fit.hpp>
#include <fluxion/train/metrics.hpp>
#include <fluxion/train/plot.hpp>
#include <fluxion/train/progress.hpp>

#include <cmath>
#include <numeric>
#include <vector>

// OpenBLAS keeps its own thread pool, which omp_set_num_threads does not reach. Weak, so the
// example still links against a BLAS without this function.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

struct Args {
  int epochs = 1;
  std::string data = fx::data::kFashionMnistDir;
  uint64_t seed = 1;
  int threads = 0;  // 0: leave the OpenMP / OpenBLAS defaults
  std::string save, checkpoint, resume, plot, csv;
  std::string opt = "adam", schedule = "constant";
  int64_t train_subset = 0;  // 0: all training images
};

[[noreturn]] void usage(int code) {
  std::cerr << "usage: fashion_mnist_mlp [--epochs N] [--data DIR] [--seed S] [--threads T]\n"
               "  --epochs N   passes over the 60000 training images (default 1)\n"
               "  --data DIR   directory with the Fashion-MNIST IDX files (default "
            << fx::data::kFashionMnistDir << ")\n"
               "  --seed S     seed for the initial weights and the shuffling (default 1)\n"
               "  --threads T  CPU threads for OpenMP and OpenBLAS (default: all)\n"
               "  --save FILE.safetensors   the trained model\n"
               "  --checkpoint DIR          DIR/checkpoint.safetensors after every epoch\n"
               "  --resume DIR              continue from DIR/checkpoint.safetensors\n"
               "  --opt NAME                adam (default), adamw, momentum, descent\n"
               "  --schedule NAME           constant (default), step (halve each epoch), cosine\n"
               "  --plot FILE.png           training and test curves\n"
               "  --csv FILE.csv            the metrics, one row per value\n"
               "  --train-subset N          train on the first N images only\n";
  std::exit(code);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "-h" || k == "--help") usage(0);
    if (i + 1 >= argc) {
      std::cerr << "fashion_mnist_mlp: " << k << " needs a value\n";
      usage(2);
    }
    std::string v = argv[++i];
    try {
      if (k == "--epochs") a.epochs = std::stoi(v);
      else if (k == "--data") a.data = v;
      else if (k == "--seed") a.seed = std::stoull(v);
      else if (k == "--threads") a.threads = std::stoi(v);
      else if (k == "--save") a.save = v;
      else if (k == "--checkpoint") a.checkpoint = v;
      else if (k == "--resume") a.resume = v;
      else if (k == "--opt") a.opt = v;
      else if (k == "--schedule") a.schedule = v;
      else if (k == "--plot") a.plot = v;
      else if (k == "--csv") a.csv = v;
      else if (k == "--train-subset") a.train_subset = std::stoll(v);
      else {
        std::cerr << "fashion_mnist_mlp: unknown option " << k << "\n";
        usage(2);
      }
    } catch (const std::logic_error&) {  // stoi/stoull on text that is not a number
      std::cerr << "fashion_mnist_mlp: " << k << " needs a number, got '" << v << "'\n";
      usage(2);
    }
  }
  if (a.epochs < 0 || a.threads < 0 || a.train_subset < 0) usage(2);
  return a;
}

// A learning-rate schedule by name, as a function of the step (0-based).
std::function<double(int64_t)> schedule_named(const std::string& name, double lr,
                                              int64_t steps_per_epoch, int64_t epochs) {
  if (name == "constant") return {};
  if (name == "step")
    return [=](int64_t s) { return lr * std::pow(0.5, double(s / steps_per_epoch)); };
  if (name == "cosine") {
    const double total = double(std::max<int64_t>(1, steps_per_epoch * epochs));
    return [=](int64_t s) { return lr * 0.5 * (1 + std::cos(M_PI * std::min(1.0, double(s) / total))); };
  }
  std::cerr << "fashion_mnist_mlp: unknown schedule " << name << " (constant, step, cosine)\n";
  usage(2);
}

// Trains with fx::train::fit and writes what the options ask for; returns the test accuracy.
template <class Model, class Opt>
double train_model(const Args& args, Model& model, Opt opt, const fx::data::Dataset& train,
                   const fx::data::Dataset& test) {
  fx::data::DataLoader loader(train.images, train.labels,
                              {.batch = 128, .shuffle = true, .seed = args.seed});
  double acc = fx::train::accuracy(model, test.images, test.labels);
  auto evaluate = fx::train::evaluate([&] {
    acc = fx::train::accuracy(model, test.images, test.labels);
    return fx::train::Metrics{{"test_accuracy", acc}};
  });
  auto loss = [](const auto& m, const fx::Tensor& x, const fx::Tensor& y) {
    return fx::logitcrossentropy(m(x), y);
  };
  fx::train::History history = fx::train::fit(model, opt, loader, loss, {
      .epochs = args.epochs,
      .callbacks = {evaluate},
      .schedule = schedule_named(args.schedule, *fx::train::learning_rate(opt), loader.size(),
                                 args.epochs),
      .csv = args.csv,
      .checkpoint_dir = args.checkpoint,
      .resume_dir = args.resume});
  if (!args.save.empty()) fx::io::save(args.save, model, {{"epochs", std::to_string(args.epochs)}});
  if (!args.plot.empty() && !history.empty())
    fx::train::plot_history(history, args.plot, {.series = {"loss", "train_loss", "test_accuracy"},
                                                 .title = "fashion-mnist mlp"});
  return acc;
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
  if (args.train_subset > 0 && args.train_subset < train.size()) {
    std::vector<int64_t> rows(size_t(args.train_subset));
    std::iota(rows.begin(), rows.end(), int64_t(0));
    train.images = fx::data::take_rows(train.images, rows);
    train.labels = fx::data::take_rows(train.labels, rows);
  }
  double acc = 0;
  try {
    if (args.opt == "adam") acc = train_model(args, model, fx::optim::setup(fx::optim::Adam(1e-3), model), train, test);
    else if (args.opt == "adamw") acc = train_model(args, model, fx::optim::setup(fx::optim::AdamW{}, model), train, test);
    else if (args.opt == "momentum") acc = train_model(args, model, fx::optim::setup(fx::optim::Momentum{}, model), train, test);
    else if (args.opt == "descent") acc = train_model(args, model, fx::optim::setup(fx::optim::Descent{}, model), train, test);
    else {
      std::cerr << "fashion_mnist_mlp: unknown optimiser " << args.opt
                << " (adam, adamw, momentum, descent)\n";
      usage(2);
    }
  } catch (const fx::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  std::printf("test_accuracy=%.4f\n", acc);
  return 0;
}
