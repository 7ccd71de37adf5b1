// Callbacks for fx::train::fit: evaluation every N steps, early stopping, plateau-based
// learning-rate reduction and throttled logging. Each is an object with a few hooks; a user's
// own callback derives from fx::train::Callback the same way.
//
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 32, fx::relu), fx::nn::Dense(32, 10));
//   fx::Tensor x = fx::randn({256, 784}), y = fx::zeros({256}, fx::i64);
//   auto opt = fx::optim::setup(fx::optim::Adam{}, model);
//   fx::data::DataLoader loader(x, y, {.batch = 64});
//   auto loss = [](const auto& m, const fx::Tensor& x, const fx::Tensor& y) {
//     return fx::logitcrossentropy(m(x), y);
//   };
//   auto eval = fx::train::evaluate([&] {
//     return fx::train::Metrics{{"val_loss", loss(model, x, y).item()},
//                               {"val_accuracy", fx::train::accuracy(model, x, y)}};
//   }, {.every_steps = 200});                                    // 0: at every epoch's end
//   auto stop = fx::train::early_stopping({.monitor = "val_loss", .patience = 3});
//   auto plateau = fx::train::reduce_lr_on_plateau({.monitor = "val_loss", .factor = 0.5});
//   auto log = fx::train::log_every({.seconds = 10});           // "step=... loss=... lr=..."
//   fx::train::fit(model, opt, loader, loss, {.epochs = 20, .callbacks = {eval, stop, plateau, log}});
//
// Metrics reach callbacks through on_metric as they are recorded, so early stopping and plateau
// reduction react to an evaluation whatever the order of the list. Callback state (patience
// counters, best values) is not part of a checkpoint: after a resume they count afresh.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fluxion/train/history.hpp"

namespace fx::train {

using Metrics = std::vector<std::pair<std::string, double>>;

// What a callback sees of a running fit, and what it may change.
struct FitContext {
  int64_t epoch = 0;      // the current epoch, 1-based
  int64_t epochs = 0;     // the last epoch fit will run
  int64_t step = 0;       // optimiser steps taken so far
  int64_t batch = 0;      // batches of this epoch done
  int64_t batches = 0;    // batches per epoch
  double loss = 0;        // the latest step's loss
  double epoch_loss = 0;  // mean loss over this epoch so far (weighted by batch size)
  const History* history = nullptr;
  std::ostream* out = nullptr;
  bool stop = false;  // set to end training after this step
  std::string stop_reason;

  // Records a metric at the current step: history, CSV log, every callback's on_metric.
  void record(const std::string& name, double value) { recorder(name, value); }
  // The optimiser's learning rate (through fluxion/train/learning_rate.hpp).
  std::optional<double> learning_rate() const { return get_lr(); }
  bool set_learning_rate(double lr) { return set_lr(lr); }

  // Wired up by fit.
  std::function<void(const std::string&, double)> recorder;
  std::function<std::optional<double>()> get_lr;
  std::function<bool(double)> set_lr;
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_step(FitContext&) {}                   // after each optimiser step
  virtual void on_epoch_end(FitContext&) {}              // after an epoch's last step
  virtual void on_metric(FitContext&, const Record&) {}  // whenever a metric is recorded
};
using CallbackPtr = std::shared_ptr<Callback>;

struct EvaluateOptions {
  int64_t every_steps = 0;  // 0: at the end of every epoch
};
CallbackPtr evaluate(std::function<Metrics()> fn, EvaluateOptions options = {});

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  int patience = 3;       // evaluations without improvement before stopping
  double min_delta = 0;   // an improvement must beat the best by more than this
  bool maximize = false;  // true for accuracies
};
CallbackPtr early_stopping(EarlyStoppingOptions options = {});

struct PlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;  // new lr = factor * lr
  int patience = 2;     // evaluations without improvement before reducing
  double min_delta = 0;
  double min_lr = 0;
  int cooldown = 0;  // evaluations to wait after a reduction
  bool maximize = false;
};
CallbackPtr reduce_lr_on_plateau(PlateauOptions options = {});

struct LogOptions {
  double seconds = 10;          // at most one line per this many seconds...
  int64_t every_steps = 0;      // ...or, when positive, one every this many steps instead
  std::ostream* out = nullptr;  // the fit's stream when null
};
CallbackPtr log_every(LogOptions options = {});

// Tracks whether a monitored value improved; shared by early stopping and plateau reduction.
struct Improvement {
  bool maximize = false;
  double min_delta = 0;
  std::optional<double> best;
  int bad = 0;                // evaluations since the last improvement
  bool update(double value);  // true when value improves on the best
};

}  // namespace fx::train
