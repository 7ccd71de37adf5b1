// Learning-rate schedules: value types called with a step number t = 0, 1, 2, ... (the number of
// updates taken so far) that return a learning rate, applied through fx::optim::adjust.
//
//   using namespace fx::optim;
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 32, fx::relu), fx::nn::Dense(32, 10));
//   fx::Tensor x = fx::randn({64, 784}), y = fx::zeros({64}, fx::i64);
//   auto loss = [&](const auto& m) { return fx::logitcrossentropy(m(x), y); };
//   Schedule sched = warmup(500, Cosine{.max = 1e-3, .min = 1e-5, .period = 10000});
//   auto opt = setup(Adam{}, model);
//   for (int64_t t = 0; t < 20000; ++t) {
//     adjust(opt, sched(t));
//     update(opt, model, fx::gradient(loss, model));
//   }
//   auto cyc = Triangle{.min = 1e-4, .max = 1e-2, .half_period = 200};
//   auto seq = Sequence({{Constant{1e-3}, 100}, {Exp{.start = 1e-3, .decay = 0.99}, 0}});
//
// Each formula names the PyTorch scheduler (torch.optim.lr_scheduler) and ParameterSchedulers.jl
// schedule it equals. Steps count from 0, as PyTorch's last_epoch does (ParameterSchedulers.jl
// counts from 1: its s(t + 1) is s(t) here). A bad argument (a negative step, a zero period)
// throws fx::Error naming the schedule.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

namespace fx::optim {

// value
struct Constant {
  double value = 0;
  double operator()(int64_t t) const;
};

// start * decay^floor(t / step_size)                       (torch StepLR, PS.jl Step)
struct Step {
  double start = 0;
  double decay = 0.5;
  int64_t step_size = 1;
  double operator()(int64_t t) const;
};

// start * decay^t                                           (torch ExponentialLR, PS.jl Exp)
struct Exp {
  double start = 0;
  double decay = 1;
  double operator()(int64_t t) const;
};

// end + (start - end) (1 - min(t, steps) / steps)^degree    (torch PolynomialLR for end = 0,
// PS.jl Poly)
struct Poly {
  double start = 0;
  double degree = 1;
  int64_t steps = 1;
  double end = 0;
  double operator()(int64_t t) const;
};

// start / (1 + decay t)^degree                              (PS.jl Inv)
struct Inv {
  double start = 0;
  double decay = 1;
  double degree = 1;
  double operator()(int64_t t) const;
};

// min + (max - min) (1 + cos(pi t_i / period_i)) / 2: cosine annealing from max to min over a
// period, then a restart at max (SGDR; torch CosineAnnealingWarmRestarts(T_0 = period, T_mult =
// period_mult, eta_min = min); PS.jl CosAnneal). Each period is period_mult times the one before
// (a whole number >= 1). restart = false: no restarts, t_i = t: the cosine turns back up after a
// period (torch CosineAnnealingLR(T_max = period)).
struct Cosine {
  double max = 0;
  double min = 0;
  int64_t period = 1;
  int64_t period_mult = 1;
  bool restart = true;
  double operator()(int64_t t) const;
};

// A triangle wave from min up to max and back over 2 half_period steps, its height multiplied
// by amplitude_decay each cycle (torch CyclicLR(base_lr = min, max_lr = max, step_size_up =
// half_period): mode "triangular" for amplitude_decay = 1, "triangular2" for 0.5; PS.jl
// Triangle, TriangleDecay2).
struct Triangle {
  double min = 0;
  double max = 0;
  int64_t half_period = 1;
  double amplitude_decay = 1;
  double operator()(int64_t t) const;
};

// One cycle (Smith): cosine from max_lr / div_factor up to max_lr over the first pct_start of
// total_steps, then cosine down to max_lr / (div_factor * final_div_factor) at the last step
// (torch OneCycleLR with anneal_strategy "cos", three_phase false; same defaults). Holds the
// final value after total_steps.
struct OneCycle {
  double max_lr = 0;
  int64_t total_steps = 1;
  double pct_start = 0.3;
  double div_factor = 25;
  double final_div_factor = 1e4;
  double operator()(int64_t t) const;
};

// start + (end - start) min(t, steps) / steps: a linear ramp, then end. A linear warm-up is
// Linear{0, lr, n} (torch LinearLR with start/end factors times the base lr).
struct Linear {
  double start = 0;
  double end = 0;
  int64_t steps = 1;
  double operator()(int64_t t) const;
};

// Any schedule (any callable double(int64_t)), type-erased so schedules of different types can
// be sequenced and stored.
class Schedule {
 public:
  template <class F>
    requires std::is_invocable_r_v<double, const F&, int64_t> &&
        (!std::is_same_v<std::remove_cvref_t<F>, Schedule>)Schedule(F f)
        : f_(std::move(f)) {}  // NOLINT: implicit, so any schedule converts
    double operator()(int64_t t) const { return f_(t); }

   private:
    std::function<double(int64_t)> f_;
};

// Schedules one after another: each part runs for its steps, counting its own steps from 0; the
// last part runs on forever (its steps are ignored). (PS.jl Sequence; torch SequentialLR.)
class Sequence {
 public:
  struct Part {
    Schedule schedule;
    int64_t steps;
  };
  Sequence(std::initializer_list<Part> parts);
  explicit Sequence(std::vector<Part> parts);
  double operator()(int64_t t) const;

 private:
  std::vector<Part> parts_;
};

// A linear warm-up from `from` to after(0) over `steps` steps, then `after` (counted from 0).
Schedule warmup(int64_t steps, Schedule after, double from = 0);

}  // namespace fx::optim
