// The built-in optimisation rules, with Flux/Optimisers.jl names and PyTorch's update formulas.
//
//   auto opt = fx::optim::setup(fx::optim::Adam{}, model);                 // lr 1e-3
//   auto sgd = fx::optim::setup(fx::optim::Descent{0.1}, model);
//   auto mom = fx::optim::setup(fx::optim::Momentum{.lr = 0.01, .rho = 0.9}, model);
//   auto aw = fx::optim::setup(fx::optim::AdamW{.lr = 3e-4, .weight_decay = 0.05}, model);
//   fx::optim::update(opt, model, grad);
//
// Each rule is plain data plus init/apply (the concept is described in fluxion/optim/update.hpp);
// a user's rule is written the same way and needs nothing registered. apply runs one fused,
// vectorised pass per parameter (src/optim/rules.cpp) and allocates nothing unless the gradient
// is a strided view that has to be made contiguous first.
#pragma once
#include <cstdint>

#include "fluxion/core/fields.hpp"
#include "fluxion/ops/create.hpp"

namespace fx::optim {

// x -= lr * dx
struct Descent {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 0.1;
  struct State {};
  State init(const Tensor&) const { return {}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// v = rho * v + lr * dx;  x -= v   (Flux's form: lr scales the velocity, so changing lr mid-run
// affects only new contributions)
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

// m = b1 m + (1 - b1) dx;  v = b2 v + (1 - b2) dx^2;
// x -= lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps)      (Kingma & Ba; as torch.optim.Adam)
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
  };
  State init(const Tensor& p) const { return {zeros_like(p), zeros_like(p), 0}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

// Adam with decoupled weight decay (Loshchilov & Hutter): x *= 1 - lr * weight_decay, then the
// Adam step. Defaults as torch.optim.AdamW.
struct AdamW {
  static constexpr bool loops_only = true;  // see fluxion/optim/update.hpp
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  using State = Adam::State;
  State init(const Tensor& p) const { return {zeros_like(p), zeros_like(p), 0}; }
  void apply(State& s, const Tensor& param, const Tensor& grad) const;
};

}  // namespace fx::optim
