// Optimisers.jl's interface: a rule is plain data, `setup` builds per-parameter state for a
// model, `update` applies one step to the model's parameters in place.
//
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 256, fx::relu), fx::nn::Dense(256, 10));
//   fx::Tensor x = fx::randn({64, 784}), y = fx::zeros({64}, fx::i64);   // labels: i64 (N,)
//   auto opt = fx::optim::setup(fx::optim::Adam{.lr = 1e-3}, model);
//   auto [loss, grad] = fx::withgradient(
//       [&](const auto& m) { return fx::logitcrossentropy(m(x), y); }, model);
//   fx::optim::update(opt, model, grad);      // grad has the model's structure
//   fx::optim::adjust(opt, 1e-4);             // new learning rate (fluxion/optim/adjust.hpp)
//
// A rule is any copyable type R with
//   S    init(const fx::Tensor& param) const;                                 // state for one leaf
//   void apply(S& state, const fx::Tensor& param, const fx::Tensor& grad) const;  // write param
// where apply writes the parameter in place, usually through fx::optim::foreach_element
// (fluxion/optim/elementwise.hpp), as the built-in rules in fluxion/optim/rules.hpp do:
//
//   struct SignDescent {
//     double lr = 0.01;
//     struct State {};
//     State init(const fx::Tensor&) const { return {}; }
//     void apply(State&, const fx::Tensor& p, const fx::Tensor& g) const {
//       fx::optim::foreach_element("SignDescent", p, g, [lr = lr](auto& x, auto dx) {
//         x -= decltype(dx)(lr) * ((dx > 0) - (dx < 0)); });
//     }
//   };
//
// A rule whose apply does nothing but foreach_element calls (no tensor op reads what its loops
// write) may say so with `static constexpr bool loops_only = true;`, as the built-in rules do:
// update then gathers every leaf's loop and runs them all in one parallel region.
//
// State is kept per trainable leaf (defined floating tensors: FX_STATE fields and integer tensors
// are not trainable) in the order fx::for_each_tensor visits them; a state type that declares
// FX_FIELDS is walked like a model (save/load). Frozen leaves (fx::optim::freeze) are skipped.
// Before anything is written, update checks that the model still has the leaves and shapes it
// had at setup and that each gradient leaf matches its parameter, so a mismatch throws fx::Error
// and leaves the model untouched. An undefined gradient leaf means "no gradient": that leaf and its
// state are left alone (a zero gradient, by contrast, still decays Momentum and Adam state).
#pragma once
#include <concepts>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/core/fields.hpp"
#include "fluxion/core/leaves.hpp"
#include "fluxion/nn/functors.hpp"
#include "fluxion/optim/elementwise.hpp"

namespace fx::optim {

template <class R>
using rule_state_t =
    std::remove_cvref_t<decltype(std::declval<const R&>().init(std::declval<const Tensor&>()))>;

template <class R>
concept Rule = std::copy_constructible<R> &&
    requires(const R& r, rule_state_t<R>& s, const Tensor& p, const Tensor& g) {
  r.apply(s, p, g);
};

// The optimiser state of a model: for each trainable leaf, in the order fx::for_each_tensor
// visits them, its rule's state, its own copy of the rule (fx::optim::adjust may change one
// subtree's), its dotted path in the model (what freeze/thaw/adjust select by), its shape at
// setup and whether it is frozen.
template <Rule R>
struct OptimiserState {
  std::vector<rule_state_t<R>> leaves;
  std::vector<R> rules;
  std::vector<std::string> paths;
  std::vector<Shape> shapes;  // to catch a model that changed since setup
  std::vector<bool> frozen;
  FX_FIELDS(leaves)
};

template <Rule R, class M>
OptimiserState<R> setup(const R& rule, const M& model) {
  // A struct without FX_FIELDS would get no state, and update would never train it.
  require_traversable<M, "fx::optim::setup">();
  OptimiserState<R> s;
  for_each_named_tensor(model, [&](const std::string& path, const Tensor& p) {
    if (!nn::is_trainable(p)) return;
    s.leaves.push_back(rule.init(p));
    s.rules.push_back(rule);
    s.paths.push_back(path.empty() ? std::string("(tensor)") : path);
    s.shapes.push_back(p.shape());
    s.frozen.push_back(false);
  });
  return s;
}

namespace detail {

template <class R, class M, class G>
void check_structure(const OptimiserState<R>& s, const M& model, const G& grad) {
  size_t k = 0;
  zip_tensors(
      [&](const Tensor& p, const Tensor& g) {
        if (!p.defined()) {
          FX_CHECK(!g.defined(), "fx::optim::update: gradient ", g.shape(),
                   " given for an undefined parameter (leaf after trainable #", k, ")");
          return;
        }
        if (!nn::is_trainable(p)) return;  // integer state: its gradient is a zero, never applied
        FX_CHECK(k < s.shapes.size(),
                 "fx::optim::update: the model has more trainable leaves than ", "the ",
                 s.shapes.size(), " it had at setup");
        FX_CHECK(p.shape() == s.shapes[k], "fx::optim::update: parameter ", s.paths[k], " is ",
                 p.shape(), " but was ", s.shapes[k], " at setup");
        FX_CHECK(!g.defined() || g.shape() == p.shape(), "fx::optim::update: gradient ", g.shape(),
                 " does not match parameter ", s.paths[k], " ", p.shape());
        ++k;
      },
      model, grad);
  FX_CHECK(k == s.shapes.size(), "fx::optim::update: the model has ", k,
           " trainable leaves, but the optimiser was set up for ", s.shapes.size());
}

}  // namespace detail

// One optimisation step: each trainable leaf of `model` is updated in place from the leaf at
// the same place in `grad` (a structure like the model, as fx::gradient returns).
//
// Leaves are updated last to first. A model's first leaves are its first layer's, which the
// next forward pass reads first; written last, they are still in cache when it does. The
// Fashion-MNIST MLP's first weight (784 x 256) and its Adam state are 3.2 MB, more than a
// core's L2: in first-to-last order its update pushed it out again, and 2-thread epochs
// ran 1-2% longer (1-thread epochs the same). Leaves do not depend on each other, so the
// order changes no result (a parameter that appears twice, tied, takes its two steps in the
// other order).
template <class R, class M, class G>
void update(OptimiserState<R>& s, M& model, const G& grad) {
  require_traversable<M, "fx::optim::update">();
  detail::check_structure(s, std::as_const(model), grad);
  std::vector<std::pair<Tensor*, const Tensor*>> leaves;
  leaves.reserve(s.leaves.size());
  zip_tensors(
      [&](Tensor& p, const Tensor& g) {
        if (nn::is_trainable(p)) leaves.emplace_back(&p, &g);
      },
      model, grad);
  auto apply_all = [&] {
    for (size_t k = leaves.size(); k-- > 0;)
      if (leaves[k].second->defined() && !s.frozen[k])
        s.rules[k].apply(s.leaves[k], *leaves[k].first, *leaves[k].second);
  };
  if constexpr (requires { requires R::loops_only; }) {
    detail::LoopBatch batch;  // every leaf's loop in one parallel region
    apply_all();
    batch.run();
  } else {
    apply_all();
  }
}

}  // namespace fx::optim
