// fx::train::fit: the training loop -- epochs over a DataLoader, a loss, an optimiser step per
// batch, a progress bar, metrics to a History and a CSV file, checkpoints, callbacks.
//
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 32, fx::relu), fx::nn::Dense(32, 10));
//   auto train = fx::data::fashion_mnist();
//   auto test = fx::data::fashion_mnist(fx::data::kFashionMnistDir, "test");
//   const fx::Tensor &tx = test.images, &ty = test.labels;
//   auto opt = fx::optim::setup(fx::optim::Adam{}, model);
//   fx::data::DataLoader loader(train.images, train.labels, {.batch = 128, .shuffle = true});
//   auto loss = [](const auto& m, const fx::Tensor& x, const fx::Tensor& y) {
//     return fx::logitcrossentropy(m(x), y);
//   };
//   fx::train::History h = fx::train::fit(model, opt, loader, loss, {
//       .epochs = 5,
//       .callbacks = {fx::train::evaluate([&] {
//         return fx::train::Metrics{{"test_accuracy", fx::train::accuracy(model, tx, ty)}};
//       })},
//       .csv = "run/metrics.csv",
//       .checkpoint_dir = "run"});            // run/checkpoint.safetensors after every epoch
//   // epoch=1 train_loss=0.512345 test_accuracy=0.834000      (one line per epoch)
//   fx::train::plot_history(h, "run/curves.png");   // fluxion/train/plot.hpp
//
// Resuming: {.resume_dir = "run"} loads run/checkpoint.safetensors (model, optimiser, step,
// learning rate, loader position, the listed generators) and continues with the next epoch;
// the remaining epochs repeat the uninterrupted run's bit for bit (single-threaded, or any
// deterministic thread count), and with .csv set the log is read back, so the History and
// the file cover the whole run.
//
// Recorded metrics: "loss" (mean over the last record_every steps), "train_loss" (each epoch's
// mean, weighted by batch size), "lr" when a schedule or plateau changes it, and whatever the
// callbacks record. A NaN or infinite loss stops training with an fx::Error naming the step; by
// default the model is first restored to the parameters of the last step whose loss was finite
// (one copy of the trainable tensors per step buys this; the optimiser state is not restored).
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fluxion/ad/reverse.hpp"
#include "fluxion/data/dataloader.hpp"
#include "fluxion/nn/functors.hpp"
#include "fluxion/optim/update.hpp"
#include "fluxion/train/callbacks.hpp"
#include "fluxion/train/checkpoint.hpp"
#include "fluxion/train/history.hpp"
#include "fluxion/train/learning_rate.hpp"

namespace fx::train {

struct FitOptions {
  int64_t epochs = 1;  // the last epoch to run (a resumed run continues up to it)
  std::vector<CallbackPtr> callbacks = {};
  std::function<double(int64_t step)> schedule = {};  // lr for each step, set before it
  int64_t record_every = 10;                          // steps per "loss" record; 0: none
  std::string csv = {};             // metrics log, appended to as they are recorded
  std::string checkpoint_dir = {};  // a checkpoint after every epoch
  std::string resume_dir = {};      // continue from its checkpoint (which must exist)
  std::map<std::string, Generator*> generators = {};  // random streams the checkpoints keep
  bool restore_on_nonfinite = true;  // restore the last finite-loss parameters first
  bool progress = true;              // a progress bar per epoch
  bool epoch_summary = true;         // "epoch=N train_loss=... <metrics>" after each epoch
  std::ostream* out = nullptr;       // std::cout when null
};

// "<dir>/checkpoint.safetensors"
std::string checkpoint_path(const std::string& dir);

namespace detail {

// The loop's bookkeeping, independent of the model's type (src/train/fit.cpp).
class FitDriver {
 public:
  FitDriver(const FitOptions& options, int64_t batches_per_epoch);
  ~FitDriver();
  FitContext& context() { return ctx_; }
  void resumed(const Checkpoint& ck);  // continue after ck.epoch / ck.step
  int64_t first_epoch() const { return first_epoch_; }
  void begin_epoch(int64_t epoch);
  void before_step(const std::function<bool(double)>& set_lr);  // the schedule
  [[noreturn]] void nonfinite(double loss, bool restored);
  void end_step(double loss, int64_t samples);
  void end_epoch();
  Checkpoint checkpoint_of(data::DataLoader& loader) const;
  History finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  FitContext ctx_;
  int64_t first_epoch_ = 1;
};

// The trainable leaves of a model (handles sharing its storage).
template <class M>
std::vector<Tensor> trainable_leaves(M& model) {
  std::vector<Tensor> out;
  for_each_tensor(model, [&](Tensor& t) {
    if (nn::is_trainable(t)) out.push_back(t);
  });
  return out;
}
// dst[i] := src[i], bit for bit; the shapes match by construction.
void copy_leaves(const std::vector<Tensor>& dst, const std::vector<Tensor>& src);
std::vector<Tensor> clone_leaves(const std::vector<Tensor>& src);

}  // namespace detail

// loss(model, x, y) returns a 0-d loss tensor; model and opt are updated in place.
template <class M, class O, class Loss>
History fit(M& model, O& opt, data::DataLoader& loader, Loss&& loss,
            const FitOptions& options = {}) {
  detail::FitDriver d(options, loader.size());
  FitContext& ctx = d.context();
  std::function<bool(double)> set_lr = [&](double lr) { return set_learning_rate(opt, lr); };
  ctx.get_lr = [&] { return learning_rate(opt); };
  ctx.set_lr = set_lr;
  if (!options.resume_dir.empty()) {
    Checkpoint ck = d.checkpoint_of(loader);
    load_checkpoint(checkpoint_path(options.resume_dir), model, opt, ck);
    d.resumed(ck);
  }
  std::vector<Tensor> params = detail::trainable_leaves(model);
  std::vector<Tensor> last_good;  // the parameters before the latest update
  bool have_last_good = false;
  if (options.restore_on_nonfinite) last_good = detail::clone_leaves(params);

  for (int64_t epoch = d.first_epoch(); epoch <= options.epochs && !ctx.stop; ++epoch) {
    d.begin_epoch(epoch);
    for (auto [x, y] : loader) {
      d.before_step(set_lr);
      auto [l, grad] = withgradient([&](const auto& m) { return loss(m, x, y); }, model);
      const double value = l.item();
      if (!std::isfinite(value)) {
        // The current parameters gave a non-finite loss: the ones before the last update
        // did not (their loss was checked a step ago).
        bool restore = options.restore_on_nonfinite && have_last_good;
        if (restore) detail::copy_leaves(params, last_good);
        d.nonfinite(value, restore);
      }
      if (options.restore_on_nonfinite) {
        detail::copy_leaves(last_good, params);
        have_last_good = true;
      }
      optim::update(opt, model, grad);
      d.end_step(value, x.ndim() > 0 ? x.size(0) : 1);
      if (ctx.stop) break;
    }
    d.end_epoch();
    if (!options.checkpoint_dir.empty()) {
      Checkpoint ck = d.checkpoint_of(loader);
      save_checkpoint(checkpoint_path(options.checkpoint_dir), model, opt, ck);
    }
  }
  return d.finish();
}

}  // namespace fx::train
