// The built-in optimisation rules: every rule of Optimisers.jl, with its names, documented
// defaults and update formula.
//
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 32, fx::relu), fx::nn::Dense(32, 10));
//   fx::Tensor x = fx::randn({64, 784}), y = fx::zeros({64}, fx::i64);
//   auto opt = fx::optim::setup(fx::optim::Adam{}, model);                 // lr 1e-3
//   auto sgd = fx::optim::setup(fx::optim::Descent{0.1}, model);
//   auto mom = fx::optim::setup(fx::optim::Momentum{.lr = 0.01, .rho = 0.9}, model);
//   auto aw = fx::optim::setup(fx::optim::AdamW{.lr = 3e-4, .weight_decay = 0.05}, model);
//   auto rms = fx::optim::setup(fx::optim::RMSProp{.lr = 1e-3, .centred = true}, model);
//   auto [loss, grad] = fx::withgradient(
//       [&](const auto& m) { return fx::logitcrossentropy(m(x), y); }, model);
//   fx::optim::update(opt, model, grad);
//
// Each rule is plain data plus init/apply (the concept is described in fluxion/optim/update.hpp);
// a user's rule is written the same way and needs nothing registered. apply runs one fused,
// vectorised pass per parameter (src/optim/rules.cpp) and allocates nothing unless the gradient
// is a strided view that has to be made contiguous first. Gradient transforms (WeightDecay,
// ClipGrad, ...) and OptimiserChain are in fluxion/optim/transforms.hpp.
//
// Below, x is a parameter, dx its gradient, t the leaf's step count (1 at the first update) and
// every formula is per element. Defaults and formulas are Optimisers.jl's; where PyTorch's
// torch.optim differs, the comment says how its hyperparameters map onto these, or (NAdam,
// AMSGrad) which `variant` reproduces it (the oracle test tests/oracle/optim_oracle_test.cpp runs
// both for 100 steps).
#pragma once
#include <cstdint>

#include "fluxion/core/fields.hpp"
#include "fluxion/ops/create.hpp"

namespace fx::optim {

// Which published algorithm a rule follows where Optimisers.jl and torch.optim differ (NAdam,
// AMSGrad): Optimisers.jl's by default; `pytorch` reproduces torch.optim's trajectory.
enum class Variant { optimisers_jl, pytorch };

// x -= lr * dx                                                         (torch SGD, same lr)
struct Descent {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 0.1;
  struct State {};
  State init(const Tensor&) const { return {}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// v = rho v + lr dx;  x -= v
// Flux's form: lr scales the velocity, so changing lr mid-run affects only new contributions.
// torch SGD(momentum = rho) keeps b = rho b + dx and takes x -= lr b: the same trajectory while
// lr is constant (v = lr b).
struct Momentum {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 0.01;
  double rho = 0.9;
  struct State {
    Tensor velocity;
    FX_FIELDS(velocity)
  };
  State init(const Tensor& p) const { return {zeros_like(p)}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// x += rho^2 v - (1 + rho) lr dx;  v = rho v - lr dx
// torch SGD(momentum = rho, nesterov = true) is the same algorithm with v = -lr b while lr is
// constant.
struct Nesterov {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 1e-3;
  double rho = 0.9;
  struct State {
    Tensor velocity;
    FX_FIELDS(velocity)
  };
  State init(const Tensor& p) const { return {zeros_like(p)}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// quad = rho quad + (1 - rho) dx^2;  centred: lin = rho lin + (1 - rho) dx (else lin = 0)
// x -= lr dx / (sqrt(quad - lin^2) + eps)
// torch RMSprop(alpha = rho, centered) is the same formula; its defaults differ (lr 0.01,
// alpha 0.99). `centred` cannot change after setup: the two variants keep different state.
struct RMSProp {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 1e-3;
  double rho = 0.9;
  double eps = 1e-8;
  bool centred = false;
  struct State {
    Tensor quad, lin;  // lin is undefined unless centred
    FX_FIELDS(quad, lin)
  };
  State init(const Tensor& p) const { return {zeros_like(p), centred ? zeros_like(p) : Tensor()}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// Resilient backprop: each element has its own step, grown by eta_plus while the gradient keeps
// its sign and shrunk by eta_minus when it flips (that step then moves nothing and forgets the
// gradient), clamped to [step_min, step_max]; x -= step * sign(dx). The first step is lr.
// torch Rprop(lr, etas = (eta_minus, eta_plus), step_sizes = (step_min, step_max)) is the same.
struct Rprop {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 1e-3;
  double eta_minus = 0.5;
  double eta_plus = 1.2;
  double step_min = 1e-6;
  double step_max = 50;
  struct State {
    Tensor prev, step;  // the last gradient applied (0 after a flip), each element's step
    FX_FIELDS(prev, step)
  };
  State init(const Tensor& p) const { return {zeros_like(p), full_like(p, lr)}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// m = b1 m + (1 - b1) dx;  v = b2 v + (1 - b2) dx^2;
// x -= lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps)      (Kingma & Ba; as torch Adam)
struct Adam {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  struct State {
    Tensor m, v;
    int64_t step = 0;  // per leaf, as in Optimisers.jl: a leaf without gradients does not age
    FX_FIELDS(m, v)
    FX_STATE(step)  // not trained, but saved: a resumed run needs the same bias corrections
  };
  State init(const Tensor& p) const { return {zeros_like(p), zeros_like(p), 0}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// Adam with weight decay. couple = true (the default, Optimisers.jl 0.4 and torch AdamW):
// x -= lr (adam_step + weight_decay x), i.e. x *= 1 - lr weight_decay, then Adam's step.
// couple = false (the paper's form): x -= lr adam_step + weight_decay x.
// The default weight_decay is Optimisers.jl's 0 (then AdamW is Adam); torch AdamW's is 1e-2.
struct AdamW {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool couple = true;
  using State = Adam::State;
  State init(const Tensor& p) const { return {zeros_like(p), zeros_like(p), 0}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// Rectified Adam (Liu et al.): with rho_inf = 2 / (1 - b2) - 1 and
// rho_t = rho_inf - 2 t b2^t / (1 - b2^t), while rho_t <= threshold the step is momentum only,
// x -= lr m / (1 - b1^t); after, Adam's step times
// r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)).
// Optimisers.jl rectifies from rho_t > 4 (the default threshold); torch RAdam from rho_t > 5 and
// adds eps to sqrt(v) before the bias correction: threshold = 5 and eps = 0 give its trajectory.
struct RAdam {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double threshold = 4;
  using State = Adam::State;
  State init(const Tensor& p) const { return {zeros_like(p), zeros_like(p), 0}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// Adam with the infinity norm: m = b1 m + (1 - b1) dx;  u = max(b2 u, |dx|);
// x -= lr / (1 - b1^t) * m / (u + eps)
// torch Adamax puts eps inside the max (u = max(b2 u, |dx| + eps)): eps = 0 maps one onto the
// other.
struct AdaMax {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  struct State {
    Tensor m, u;
    int64_t step = 0;
    FX_FIELDS(m, u)
    FX_STATE(step)
  };
  State init(const Tensor& p) const { return {zeros_like(p), zeros_like(p), 0}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// Optimistic Adam (Daskalakis et al.): term = Adam's step at t; x -= 2 term - previous term.
// Note the defaults b1 = 0.5, b2 = 0.9 (Optimisers.jl's). No torch counterpart.
struct OAdam {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 1e-3;
  double beta1 = 0.5;
  double beta2 = 0.9;
  double eps = 1e-8;
  struct State {
    Tensor m, v, term;
    int64_t step = 0;
    FX_FIELDS(m, v, term)
    FX_STATE(step)
  };
  State init(const Tensor& p) const { return {zeros_like(p), zeros_like(p), zeros_like(p), 0}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// acc += dx^2 (acc starts at eps);  x -= lr dx / (sqrt(acc) + eps)
// torch Adagrad(lr, lr_decay = 0, initial_accumulator_value = eps, eps) is the same.
struct AdaGrad {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 0.1;
  double eps = 1e-8;
  struct State {
    Tensor acc;
    FX_FIELDS(acc)
  };
  State init(const Tensor& p) const { return {full_like(p, eps)}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// acc = rho acc + (1 - rho) dx^2;  d = dx sqrt(dacc + eps) / sqrt(acc + eps);
// dacc = rho dacc + (1 - rho) d^2;  x -= d
// No learning rate (fx::optim::adjust(opt, lr) leaves it alone). torch Adadelta(lr = 1, rho,
// eps) is the same; its default eps is 1e-6.
struct AdaDelta {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double rho = 0.9;
  double eps = 1e-8;
  struct State {
    Tensor acc, delta_acc;
    FX_FIELDS(acc, delta_acc)
  };
  State init(const Tensor& p) const { return {zeros_like(p), zeros_like(p)}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// m = b1 m + (1 - b1) dx;  v = b2 v + (1 - b2) dx^2;  vmax = max(vmax, v);
// x -= lr m / (sqrt(vmax) + eps), with m, v, vmax starting at eps.
// This is Optimisers.jl's AMSGrad (the default, variant = optimisers_jl): no bias correction.
// variant = pytorch is torch Adam(amsgrad = true) instead: m, v, vmax start at 0, the maximum is
// taken of v before its bias correction, and
// x -= lr / (1 - b1^t) * m / (sqrt(vmax) / sqrt(1 - b2^t) + eps).
// The state is the same for both; `variant` chooses the formula at each step.
struct AMSGrad {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  using enum Variant;                       // AMSGrad{.variant = AMSGrad::pytorch}
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  Variant variant = optimisers_jl;
  struct State {
    Tensor m, v, vmax;
    int64_t step = 0;  // only the pytorch variant's bias corrections read it
    FX_FIELDS(m, v, vmax)
    FX_STATE(step)
  };
  State init(const Tensor& p) const {
    const double start = variant == pytorch ? 0.0 : eps;
    return {full_like(p, start), full_like(p, start), full_like(p, start), 0};
  }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// Nesterov Adam, Optimisers.jl's form (the default, variant = optimisers_jl): m and v as Adam;
// x -= lr (b1 m / (1 - b1^(t+1)) + (1 - b1) dx / (1 - b1^t)) / (sqrt(b2 v / (1 - b2^t)) + eps)
// variant = pytorch is torch NAdam (Dozat's schedule): with psi = momentum_decay,
// mu_t = b1 (1 - 0.96^(t psi) / 2) and P_t = mu_1 ... mu_t,
// x -= lr (mu_(t+1) m / (1 - P_t mu_(t+1)) + (1 - mu_t) dx / (1 - P_t))
//         / (sqrt(v / (1 - b2^t)) + eps).
// momentum_decay is read by the pytorch variant only; torch's default lr is 2e-3, not 1e-3.
// The pytorch variant keeps P_t in its state, so `variant` cannot change after setup.
struct NAdam {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  using enum Variant;                       // NAdam{.variant = NAdam::pytorch}
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  Variant variant = optimisers_jl;
  double momentum_decay = 4e-3;
  struct State {
    Tensor m, v;
    int64_t step = 0;
    Tensor mu_product;  // P_t as a 0-d f64 tensor (saved with the state); pytorch variant only
    FX_FIELDS(m, v)
    FX_STATE(step, mu_product)
  };
  State init(const Tensor& p) const {
    return {zeros_like(p), zeros_like(p), 0, variant == pytorch ? scalar(1.0, f64) : Tensor()};
  }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// AdaBelief (Zhuang et al.): m as Adam; s = b2 s + (1 - b2) (dx - m)^2 + eps;
// x -= lr m / (1 - b1^t) / (sqrt(s / (1 - b2^t)) + eps). No torch counterpart.
struct AdaBelief {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-16;
  using State = Adam::State;  // v holds s
  State init(const Tensor& p) const { return {zeros_like(p), zeros_like(p), 0}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// Lion (Chen et al., "Symbolic discovery of optimization algorithms"):
// x -= lr sign(b1 m + (1 - b1) dx);  m = b2 m + (1 - b2) dx. No torch counterpart.
struct Lion {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  struct State {
    Tensor m;
    FX_FIELDS(m)
  };
  State init(const Tensor& p) const { return {zeros_like(p)}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

}  // namespace fx::optim
