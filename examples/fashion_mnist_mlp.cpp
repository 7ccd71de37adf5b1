// Trains a 784-256-128-10 relu MLP on Fashion-MNIST with Adam, the "hello world" of fluxion.
//
//   ./scripts/demo.sh --epochs 5            // installs what is missing, builds, runs this
//   ./build/examples/fashion_mnist_mlp --epochs 1 --threads 2 --data /usr/share/datasets/fashion-mnist
//
// Prints a progress bar with the running training loss, one line per epoch
// `epoch=N train_loss=... test_accuracy=...`, and finally `test_accuracy=0.XXXX` (the line
// scripts and CI read). Training runs through fx::train::fit; --save, --checkpoint/--resume,
// --opt, --schedule and --plot show save/load, checkpoints, every optimiser rule and plots:
//
//   fashion_mnist_mlp --epochs 2 --checkpoint run      // run/checkpoint.safetensors per epoch
//   fashion_mnist_mlp --epochs 3 --resume run --save mlp.safetensors --plot curves.png
//   // the resumed epoch 3 prints the same line as an uninterrupted 3-epoch run
//   fashion_mnist_mlp --opt nadam --lr 2e-3 --schedule cosine
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/data/dataloader.hpp>
#include <fluxion/data/idx.hpp>
#include <fluxion/io/save.hpp>
#include <fluxion/nn/activations.hpp>
#include <fluxion/nn/chain.hpp>
#include <fluxion/nn/dense.hpp>
#include <fluxion/nn/losses.hpp>
#include <fluxion/optim/by_name.hpp>
#include <fluxion/optim/schedules.hpp>
#include <fluxion/optim/update.hpp>
#include <fluxion/train/fit.hpp>
#include <fluxion/train/learning_rate.hpp>
#include <fluxion/train/metrics.hpp>
#include <fluxion/train/plot.hpp>

#include "cli.hpp"

// OpenBLAS keeps its own thread pool, which omp_set_num_threads does not reach. Weak, so the
// example still links against a BLAS without this function.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

constexpr const char* kSchedules = "constant, step, cosine, onecycle, warmup";

[[noreturn]] void usage_error(const std::string& why) {
  std::cerr << "fashion_mnist_mlp: " << why << "\nrun 'fashion_mnist_mlp --help' for the options\n";
  std::exit(2);
}

std::function<double(int64_t)> schedule_named(const std::string& name, double lr,
                                              int64_t steps_per_epoch, int64_t epochs);

struct Args {
  int epochs = 1;
  std::string data = fx::data::kFashionMnistDir;
  uint64_t seed = 1;
  int threads = 0;  // 0: leave the OpenMP / OpenBLAS defaults
  std::string save, checkpoint, resume, plot, csv;
  std::string opt = "adam", schedule = "constant";
  double lr = 0;             // 0: the rule's default
  int64_t train_subset = 0;  // 0: all training images
};

Args parse(int argc, char** argv) {
  Args a;
  fx::examples::Cli cli("fashion_mnist_mlp",
                        "Trains a 784-256-128-10 relu MLP on Fashion-MNIST and prints the test "
                        "accuracy after every epoch.");
  cli.option("--epochs", "N", "passes over the 60000 training images", a.epochs, {.min = 0});
  cli.option("--data", "DIR", "directory with the Fashion-MNIST IDX files", a.data);
  cli.option("--seed", "S", "seed for the initial weights and the shuffling", a.seed);
  cli.option("--threads", "T", "CPU threads for OpenMP and OpenBLAS", a.threads,
             {.min = 0, .shown_default = "all"});
  cli.option("--opt", "NAME", "optimiser: " + fx::optim::rule_names(), a.opt);
  cli.option("--lr", "RATE", "learning rate", a.lr, {.min = 0.0, .shown_default = "the rule's"});
  cli.option("--schedule", "NAME",
             std::string("learning rate per step: ") + kSchedules +
                 " (step halves it each epoch; warmup ramps up over the first epoch)",
             a.schedule);
  cli.option("--save", "FILE", "write the trained model (safetensors)", a.save);
  cli.option("--checkpoint", "DIR", "write DIR/checkpoint.safetensors after every epoch",
             a.checkpoint);
  cli.option("--resume", "DIR", "continue from DIR/checkpoint.safetensors", a.resume);
  cli.option("--plot", "FILE", "training and test curves (PNG)", a.plot);
  cli.option("--csv", "FILE", "the metrics, one row per value", a.csv);
  cli.option("--train-subset", "N", "train on the first N images only", a.train_subset,
             {.min = 0, .shown_default = "all"});
  cli.parse_or_exit(argc, argv);
  // Names are checked here, before any data is read, as the parser checks numbers.
  try {
    fx::optim::with_rule_named(a.opt, [&](auto rule) {
      if constexpr (!requires { rule.lr; })
        if (a.lr > 0 || a.schedule != "constant")
          usage_error("--opt " + a.opt + " has no learning rate to set or schedule");
    });
  } catch (const fx::Error&) {
    usage_error("--opt: unknown rule '" + a.opt + "' (" + fx::optim::rule_names() + ")");
  }
  schedule_named(a.schedule, 1, 1, 1);  // exits on an unknown name
  return a;
}

// The --schedule by name, from the rule's learning rate; empty for "constant".
std::function<double(int64_t)> schedule_named(const std::string& name, double lr,
                                              int64_t steps_per_epoch, int64_t epochs) {
  using namespace fx::optim;
  const int64_t total = std::max<int64_t>(1, steps_per_epoch * epochs);
  if (name == "constant") return {};
  if (name == "step") return Step{.start = lr, .decay = 0.5, .step_size = steps_per_epoch};
  if (name == "cosine") return Cosine{.max = lr, .min = 0, .period = total, .restart = false};
  if (name == "onecycle") return OneCycle{.max_lr = lr, .total_steps = total};
  if (name == "warmup") return warmup(steps_per_epoch, Constant{lr});
  usage_error("unknown schedule '" + name + "' (" + kSchedules + ")");
}

// Trains with fx::train::fit and writes what the options ask for; returns the test accuracy.
template <class Model, class Opt>
double train_model(const Args& args, Model& model, Opt& opt, const fx::data::Dataset& train,
                   const fx::data::Dataset& test) {
  fx::data::DataLoader loader(train.images, train.labels,
                              {.batch = 128, .shuffle = true, .seed = args.seed});
  std::function<double(int64_t)> schedule;
  if (args.schedule != "constant") {
    const double lr = *fx::train::learning_rate(opt);  // parse() made sure there is one
    schedule = schedule_named(args.schedule, lr, loader.size(), args.epochs);
  }
  double acc = fx::train::accuracy(model, test.images, test.labels);
  auto evaluate = fx::train::evaluate([&] {
    acc = fx::train::accuracy(model, test.images, test.labels);
    return fx::train::Metrics{{"test_accuracy", acc}};
  });
  auto loss = [](const auto& m, const fx::Tensor& x, const fx::Tensor& y) {
    return fx::logitcrossentropy(m(x), y);
  };
  fx::train::History history = fx::train::fit(model, opt, loader, loss,
                                              {.epochs = args.epochs,
                                               .callbacks = {evaluate},
                                               .schedule = schedule,
                                               .csv = args.csv,
                                               .checkpoint_dir = args.checkpoint,
                                               .resume_dir = args.resume});
  if (!args.save.empty()) fx::io::save(args.save, model, {{"epochs", std::to_string(args.epochs)}});
  if (!args.plot.empty() && !history.empty())
    fx::train::plot_history(
        history, args.plot,
        {.series = {"loss", "train_loss", "test_accuracy"}, .title = "fashion-mnist mlp"});
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
  auto model =
      fx::nn::Chain(fx::nn::Dense(784, 256, fx::relu, gen), fx::nn::Dense(256, 128, fx::relu, gen),
                    fx::nn::Dense(128, 10, fx::identity, gen));
  if (args.train_subset > 0 && args.train_subset < train.size()) {
    std::vector<int64_t> rows(size_t(args.train_subset));
    std::iota(rows.begin(), rows.end(), int64_t(0));
    train.images = fx::data::take_rows(train.images, rows);
    train.labels = fx::data::take_rows(train.labels, rows);
  }
  double acc = 0;
  try {
    fx::optim::with_rule_named(args.opt, [&](auto rule) {
      auto opt = fx::optim::setup(rule, model);
      if (args.lr > 0) fx::train::set_learning_rate(opt, args.lr);
      acc = train_model(args, model, opt, train, test);
    });
  } catch (const fx::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  std::printf("test_accuracy=%.4f\n", acc);
  return 0;
}
