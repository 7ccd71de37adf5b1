// The built-in fit callbacks.
#include "fluxion/train/callbacks.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace fx::train {
namespace {

class Evaluate : public Callback {
 public:
  Evaluate(std::function<Metrics()> fn, EvaluateOptions o) : fn_(std::move(fn)), opt_(o) {}
  void on_step(FitContext& c) override {
    if (opt_.every_steps > 0 && c.step % opt_.every_steps == 0) run(c);
  }
  void on_epoch_end(FitContext& c) override {
    if (opt_.every_steps <= 0) run(c);
  }

 private:
  void run(FitContext& c) {
    for (const auto& [name, value] : fn_()) c.record(name, value);
  }
  std::function<Metrics()> fn_;
  EvaluateOptions opt_;
};

class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions o) : opt_(std::move(o)) {
    track_.maximize = opt_.maximize;
    track_.min_delta = opt_.min_delta;
  }
  void on_metric(FitContext& c, const Record& r) override {
    if (r.name != opt_.monitor || track_.update(r.value) || track_.bad < opt_.patience) return;
    c.stop = true;
    c.stop_reason = "early stopping: " + opt_.monitor + " has not improved on " +
                    std::to_string(*track_.best) + " for " + std::to_string(track_.bad) +
                    " evaluations";
  }

 private:
  EarlyStoppingOptions opt_;
  Improvement track_;
};

class ReduceOnPlateau : public Callback {
 public:
  explicit ReduceOnPlateau(PlateauOptions o) : opt_(std::move(o)) {
    track_.maximize = opt_.maximize;
    track_.min_delta = opt_.min_delta;
  }
  void on_metric(FitContext& c, const Record& r) override {
    if (r.name != opt_.monitor) return;
    bool improved = track_.update(r.value);
    if (cooldown_ > 0) {
      --cooldown_;
      track_.bad = 0;
      return;
    }
    if (improved || track_.bad < opt_.patience) return;
    std::optional<double> lr = c.learning_rate();
    if (!lr) return;  // a rule without a learning rate: nothing to reduce
    double next = std::max(opt_.min_lr, *lr * opt_.factor);
    if (next < *lr && c.set_learning_rate(next)) c.record("lr", next);
    track_.bad = 0;
    cooldown_ = opt_.cooldown;
  }

 private:
  PlateauOptions opt_;
  Improvement track_;
  int cooldown_ = 0;
};

class LogEvery : public Callback {
 public:
  explicit LogEvery(LogOptions o) : opt_(o), last_(Clock::now()) {}
  void on_step(FitContext& c) override {
    if (opt_.every_steps > 0) {
      if (c.step % opt_.every_steps == 0) print(c);
      return;
    }
    auto now = Clock::now();
    if (std::chrono::duration<double>(now - last_).count() < opt_.seconds) return;
    last_ = now;
    print(c);
  }

 private:
  using Clock = std::chrono::steady_clock;
  void print(const FitContext& c) {
    std::ostream& os = opt_.out ? *opt_.out : c.out ? *c.out : std::cout;
    char line[160];
    std::snprintf(line, sizeof line, "step=%lld epoch=%lld loss=%.6g epoch_loss=%.6g",
                  (long long)c.step, (long long)c.epoch, c.loss, c.epoch_loss);
    os << line;
    if (auto lr = c.learning_rate()) os << " lr=" << *lr;
    os << "\n" << std::flush;
  }
  LogOptions opt_;
  Clock::time_point last_;
};

}  // namespace

bool Improvement::update(double value) {
  bool better = !best || (maximize ? value > *best + min_delta : value < *best - min_delta);
  if (std::isnan(value)) better = false;
  if (better) {
    best = value;
    bad = 0;
  } else {
    ++bad;
  }
  return better;
}

CallbackPtr evaluate(std::function<Metrics()> fn, EvaluateOptions options) {
  return std::make_shared<Evaluate>(std::move(fn), options);
}
CallbackPtr early_stopping(EarlyStoppingOptions options) {
  return std::make_shared<EarlyStopping>(std::move(options));
}
CallbackPtr reduce_lr_on_plateau(PlateauOptions options) {
  return std::make_shared<ReduceOnPlateau>(std::move(options));
}
CallbackPtr log_every(LogOptions options) { return std::make_shared<LogEvery>(options); }

}  // namespace fx::train
