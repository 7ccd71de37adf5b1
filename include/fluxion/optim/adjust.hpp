// Changing an optimiser after setup: freeze and thaw subtrees, adjust hyperparameters.
//
//   using fx::optim::OptimiserChain, fx::optim::ClipGrad, fx::optim::Adam;
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 32, fx::relu), fx::nn::Dense(32, 10));
//   auto opt = fx::optim::setup(OptimiserChain(ClipGrad{1}, Adam{}), model);
//   fx::optim::freeze(opt, "layers.0");          // layer 0 (paths as fx::for_each_named_tensor)
//   fx::optim::thaw(opt, "layers.0.bias");       // ... except its bias
//   fx::optim::adjust(opt, 1e-4);                // lr of every rule that has one, whole tree
//   fx::optim::adjust(opt, 1e-5, "layers.1");    // ... or of layer 1 only
//   fx::optim::adjust(opt, &fx::optim::Adam::beta2, 0.99);          // a named hyperparameter
//   fx::optim::adjust(opt, [](fx::optim::ClipGrad& c) { c.delta = 5; });  // anything else
//   fx::optim::Schedule sched = fx::optim::Cosine{.max = 1e-3, .min = 1e-5, .period = 1000};
//   int64_t step = 10;                           // updates taken so far
//   fx::optim::adjust(opt, sched(step));         // a schedule (fluxion/optim/schedules.hpp)
//   fx::optim::for_each_learning_rate(opt, [](double& lr) { lr *= 0.5; });  // read or rewrite
//
// A subtree is a dotted path prefix: "" is the whole model, "layers.0" selects "layers.0.weight"
// and "layers.0.bias" (not "layers.01.weight"), "layers.0.weight" one leaf. A path that selects
// no trainable leaf throws fx::Error naming it. Each leaf holds its own copy of the rule, so
// adjusting a subtree leaves the rest alone (Optimisers.jl's adjust! on a subtree). Inside an
// OptimiserChain every member rule is reached; a rule without the field (AdaDelta has no lr) is
// left as it is. A frozen leaf is skipped by update: its parameter and state stay as they are
// until it is thawed.
#pragma once
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "fluxion/optim/update.hpp"

namespace fx::optim {

namespace detail {

inline bool in_subtree(std::string_view path, std::string_view subtree) {
  if (subtree.empty() || path == subtree) return true;
  return path.size() > subtree.size() && path.substr(0, subtree.size()) == subtree &&
         path[subtree.size()] == '.';
}

// Calls fn(k) for each leaf in the subtree; throws if there is none.
template <class R, class Fn>
void for_each_in_subtree(const OptimiserState<R>& s, std::string_view subtree, const char* op,
                         Fn&& fn) {
  bool any = false;
  for (size_t k = 0; k < s.paths.size(); ++k)
    if (in_subtree(s.paths[k], subtree)) {
      fn(k);
      any = true;
    }
  if (any) return;
  std::string known;
  for (size_t k = 0; k < s.paths.size() && k < 8; ++k) known += (k ? ", " : "") + s.paths[k];
  if (s.paths.size() > 8) known += ", ...";
  fx::detail::fail("fx::optim::", op, ": \"", subtree,
                   "\" selects no trainable leaf (the leaves are ", known, ")");
}

// fn(rule) on the rule and, for a chain (a rule with a tuple `rules`), on each member, at any
// depth, wherever fn accepts that rule type.
template <class R, class Fn>
void visit_rules(R& rule, Fn& fn) {
  if constexpr (std::is_invocable_v<Fn&, R&>) fn(rule);
  if constexpr (requires { std::tuple_size<decltype(rule.rules)>::value; })
    std::apply([&](auto&... r) { (visit_rules(r, fn), ...); }, rule.rules);
}

struct SetLearningRate {
  double lr;
  template <class R>
    requires requires(R& r) { r.lr = 1.0; }
  void operator()(R& r) const { r.lr = lr; }
};

}  // namespace detail

// Stops updating the leaves of a subtree (their state is kept).
template <class R>
void freeze(OptimiserState<R>& s, std::string_view subtree = "") {
  detail::for_each_in_subtree(s, subtree, "freeze", [&](size_t k) { s.frozen[k] = true; });
}

// Resumes updating the leaves of a subtree.
template <class R>
void thaw(OptimiserState<R>& s, std::string_view subtree = "") {
  detail::for_each_in_subtree(s, subtree, "thaw", [&](size_t k) { s.frozen[k] = false; });
}

// Calls fn on every rule of the subtree's leaves (and every member of their chains) whose type
// fn accepts: fx::optim::adjust(opt, [](fx::optim::Adam& a) { a.beta1 = 0.8; }).
template <class R, class Fn>
  requires(!std::is_arithmetic_v<std::remove_cvref_t<Fn>>)
void adjust(OptimiserState<R>& s, Fn&& fn, std::string_view subtree = "") {
  detail::for_each_in_subtree(s, subtree, "adjust",
                              [&](size_t k) { detail::visit_rules(s.rules[k], fn); });
}

// Sets the learning rate `lr` of every rule in the subtree that has one.
template <class R>
void adjust(OptimiserState<R>& s, double lr, std::string_view subtree = "") {
  adjust(s, detail::SetLearningRate{lr}, subtree);
}

// Calls fn(lr) with the learning rate of every rule that has one (a double& to rewrite, or a
// const double& for a const state), leaf by leaf and, in a chain, member by member: how
// training code reads the rates, and what a checkpoint saves.
template <class S, class Fn>
  requires requires(S& s) { s.rules.size(); }
void for_each_learning_rate(S& s, Fn&& fn) {
  auto on_rule = [&]<class Q>(Q & q) requires requires { q.lr + 0.0; }
  { fn(q.lr); };
  for (auto& rule : s.rules) detail::visit_rules(rule, on_rule);
}

// Sets one named hyperparameter of every rule of type Q in the subtree:
// fx::optim::adjust(opt, &fx::optim::RMSProp::rho, 0.95).
template <class R, class Q, class V>
void adjust(OptimiserState<R>& s, V Q::*field, std::type_identity_t<V> value,
            std::string_view subtree = "") {
  adjust(
      s, [&](Q& q) { q.*field = value; }, subtree);
}

}  // namespace fx::optim
