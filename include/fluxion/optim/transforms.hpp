// Rules that transform the gradient rather than write the parameter, and OptimiserChain, which
// passes each rule's output gradient to the next, as Optimisers.jl's OptimiserChain does.
//
//   using namespace fx::optim;
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 32, fx::relu), fx::nn::Dense(32, 10));
//   fx::Tensor x = fx::randn({64, 784}), y = fx::zeros({64}, fx::i64);
//   auto opt = setup(OptimiserChain(ClipNorm{1.0}, WeightDecay{1e-4}, Adam{}), model);
//   auto big_batch = setup(OptimiserChain(AccumGrad{4}, Descent{0.1}), model);  // every 4th call
//   auto [loss, grad] = fx::withgradient(
//       [&](const auto& m) { return fx::logitcrossentropy(m(x), y); }, model);
//   update(opt, model, grad);
//
// A gradient transform is a rule with, besides init/apply,
//   fx::Tensor transform(S& state, const fx::Tensor& param, const fx::Tensor& grad) const;
// returning the gradient the next rule sees (an undefined tensor: nothing to apply this step).
// Used alone its apply takes x -= transform(...), as Optimisers.jl's does. In a chain every rule
// but the last must be a gradient transform; the last may be any rule (it writes the parameter).
// Unlike Optimisers.jl, a parameter-writing rule (Adam) cannot sit before a transform
// (OptimiserChain(Adam{}, ClipGrad{}) does not compile): its fused loop writes x directly.
#pragma once
#include <cstdint>
#include <tuple>
#include <utility>

#include "fluxion/core/fields.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/optim/update.hpp"

namespace fx::optim {

template <class R>
concept GradientTransform = Rule<R> &&
    requires(const R& r, rule_state_t<R>& s, const Tensor& p, const Tensor& g) {
  { r.transform(s, p, g) } -> std::same_as<Tensor>;
};

namespace detail {
// x -= dx: what a lone gradient transform's apply does with its output.
void subtract_in_place(const char* rule, const Tensor& param, const Tensor& dx);
}  // namespace detail

// dx + lambda x: L2 regularisation (lambda / 2 * sum(x^2) added to the loss) when it comes first
// in a chain. torch's weight_decay option of SGD/Adam/RMSprop... is this rule before the rule.
struct WeightDecay {
  double lambda = 5e-4;
  struct State {};
  State init(const Tensor&) const { return {}; }
  Tensor transform(State&, const Tensor& param, const Tensor& grad) const;
  void apply(State& s, const Tensor& param, const Tensor& grad) const {
    detail::subtract_in_place("WeightDecay", param, transform(s, param, grad));
  }
};

// dx + lambda sign(x): L1 regularisation (lambda * sum(|x|) added to the loss).
struct SignDecay {
  double lambda = 1e-3;
  struct State {};
  State init(const Tensor&) const { return {}; }
  Tensor transform(State&, const Tensor& param, const Tensor& grad) const;
  void apply(State& s, const Tensor& param, const Tensor& grad) const {
    detail::subtract_in_place("SignDecay", param, transform(s, param, grad));
  }
};

// clamp(dx, -delta, delta), element by element.
struct ClipGrad {
  double delta = 10;
  struct State {};
  State init(const Tensor&) const { return {}; }
  Tensor transform(State&, const Tensor& param, const Tensor& grad) const;
  void apply(State& s, const Tensor& param, const Tensor& grad) const {
    detail::subtract_in_place("ClipGrad", param, transform(s, param, grad));
  }
};

// dx * min(1, omega / norm(dx, p)). Per leaf, as in Optimisers.jl: each parameter's gradient is
// scaled on its own. torch.nn.utils.clip_grad_norm_ instead scales all gradients by their joint
// norm. p may be any positive number or infinity. A non-finite norm throws fx::Error unless
// throw_nonfinite is false (then the gradient passes through unscaled if it is NaN).
struct ClipNorm {
  double omega = 10;
  double p = 2;
  bool throw_nonfinite = true;
  struct State {};
  State init(const Tensor&) const { return {}; }
  Tensor transform(State&, const Tensor& param, const Tensor& grad) const;
  void apply(State& s, const Tensor& param, const Tensor& grad) const {
    detail::subtract_in_place("ClipNorm", param, transform(s, param, grad));
  }
};

// Accumulates n gradients and passes on their mean every n-th call (nothing in between), for an
// effective batch n times the one that fits in memory: OptimiserChain(AccumGrad{n}, Adam{}).
struct AccumGrad {
  int64_t n = 1;
  struct State {
    Tensor mean;        // sum of the gradients so far, each divided by n
    int64_t count = 0;  // how many are in it
    FX_FIELDS(mean)
    FX_STATE(count)
  };
  State init(const Tensor& p) const { return {zeros_like(p), 0}; }
  Tensor transform(State& s, const Tensor& param, const Tensor& grad) const;
  void apply(State& s, const Tensor& param, const Tensor& grad) const {
    Tensor g = transform(s, param, grad);
    if (g.defined()) detail::subtract_in_place("AccumGrad", param, g);
  }
};

// Each rule transforms the gradient in turn; the last applies it. The state of one leaf is the
// tuple of each rule's state. `rules` is plain data: fx::optim::adjust reaches into it.
template <Rule... Rs>
struct OptimiserChain {
  static_assert(sizeof...(Rs) > 0, "fx::optim::OptimiserChain: give at least one rule");
  std::tuple<Rs...> rules;

  OptimiserChain() = default;
  explicit OptimiserChain(Rs... rs) : rules(std::move(rs)...) {}

  struct State {
    std::tuple<rule_state_t<Rs>...> states;
    FX_FIELDS(states)
  };
  State init(const Tensor& p) const {
    return std::apply([&](const auto&... r) { return State{{r.init(p)...}}; }, rules);
  }
  void apply(State& s, const Tensor& param, const Tensor& grad) const { step<0>(s, param, grad); }
  // A chain of transforms is itself a transform (it can be nested in another chain).
  Tensor transform(State& s, const Tensor& param, const Tensor& grad) const
      requires(GradientTransform<Rs>&&...) {
    Tensor g = grad;
    transform_from<0>(s, param, g);
    return g;
  }

 private:
  template <size_t I>
  void step(State& s, const Tensor& param, const Tensor& grad) const {
    const auto& rule = std::get<I>(rules);
    auto& state = std::get<I>(s.states);
    if constexpr (I + 1 == sizeof...(Rs)) {
      rule.apply(state, param, grad);
    } else {
      static_assert(GradientTransform<std::remove_cvref_t<decltype(rule)>>,
                    "fx::optim::OptimiserChain: every rule but the last must transform the "
                    "gradient (WeightDecay, SignDecay, ClipGrad, ClipNorm, AccumGrad or a user's "
                    "rule with a transform member); a rule that writes the parameter goes last");
      Tensor g = rule.transform(state, param, grad);
      if (g.defined()) step<I + 1>(s, param, g);  // undefined: AccumGrad is still gathering
    }
  }
  template <size_t I>
  void transform_from(State& s, const Tensor& param, Tensor& g) const {
    if constexpr (I < sizeof...(Rs)) {
      g = std::get<I>(rules).transform(std::get<I>(s.states), param, g);
      if (g.defined()) transform_from<I + 1>(s, param, g);
    }
  }
};

}  // namespace fx::optim
