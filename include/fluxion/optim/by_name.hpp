// Rules by name, for command lines and configuration files: the name is the rule's type name in
// lower case ("adam", "adamw", "rmsprop", ...), the rule has its documented defaults. A rule with
// a torch.optim variant (fluxion/optim/rules.hpp) has a second name with "_pytorch" appended:
// "nadam_pytorch" is NAdam{.variant = NAdam::pytorch}, "amsgrad_pytorch" likewise.
//
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 32, fx::relu), fx::nn::Dense(32, 10));
//   fx::Tensor x = fx::randn({64, 784}), y = fx::zeros({64}, fx::i64);
//   std::string name = "nadam";                             // e.g. from --opt on the command line
//   fx::optim::with_rule_named(name, [&](auto rule) {    // "nadam": rule is an fx::optim::NAdam{}
//     if constexpr (requires { rule.lr; }) rule.lr = 3e-4;   // compiled for every rule: AdaDelta
//                                                            // has no lr
//     auto opt = fx::optim::setup(rule, model);
//     auto [loss, grad] = fx::withgradient(
//         [&](const auto& m) { return fx::logitcrossentropy(m(x), y); }, model);
//     fx::optim::update(opt, model, grad);
//   });
//   std::string names = fx::optim::rule_names();   // "descent, momentum, ..., amsgrad_pytorch"
//
// The state type of an optimiser depends on its rule, so code that picks a rule at run time
// runs inside the callback, instantiated once per rule. An unknown name throws fx::Error
// listing the known ones.
#pragma once
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "fluxion/core/error.hpp"
#include "fluxion/optim/rules.hpp"

namespace fx::optim {

namespace detail {
template <class R>
struct NamedRule {
  using type = R;
  std::string_view name;
  R rule{};  // what the name gives: the defaults, or a variant
};
// Every parameter-writing rule of fluxion/optim/rules.hpp (the gradient transforms are chained
// in code, not named alone).
inline constexpr std::tuple kNamedRules{
    NamedRule<Descent>{"descent"},
    NamedRule<Momentum>{"momentum"},
    NamedRule<Nesterov>{"nesterov"},
    NamedRule<RMSProp>{"rmsprop"},
    NamedRule<Rprop>{"rprop"},
    NamedRule<Adam>{"adam"},
    NamedRule<RAdam>{"radam"},
    NamedRule<AdaMax>{"adamax"},
    NamedRule<OAdam>{"oadam"},
    NamedRule<AdaGrad>{"adagrad"},
    NamedRule<AdaDelta>{"adadelta"},
    NamedRule<AMSGrad>{"amsgrad"},
    NamedRule<NAdam>{"nadam"},
    NamedRule<AdamW>{"adamw"},
    NamedRule<AdaBelief>{"adabelief"},
    NamedRule<Lion>{"lion"},
    NamedRule<NAdam>{"nadam_pytorch", NAdam{.variant = Variant::pytorch}},
    NamedRule<AMSGrad>{"amsgrad_pytorch", AMSGrad{.variant = Variant::pytorch}}};
}  // namespace detail

// The known names, comma-separated, in the order of fluxion/optim/rules.hpp, then the variants.
inline std::string rule_names() {
  std::string out;
  std::apply(
      [&](const auto&... r) { ((out += (out.empty() ? "" : ", ") + std::string(r.name)), ...); },
      detail::kNamedRules);
  return out;
}

// Calls fn with the rule called `name` (a copy: fn may change its hyperparameters).
template <class Fn>
void with_rule_named(std::string_view name, Fn&& fn) {
  const bool found = std::apply(
      [&](const auto&... r) {
        return ((r.name == name &&
                 (fn(typename std::remove_cvref_t<decltype(r)>::type(r.rule)), true)) ||
                ...);
      },
      detail::kNamedRules);
  if (!found)
    fx::detail::fail("fx::optim::with_rule_named: unknown rule '", name, "' (the rules are ",
                     rule_names(), ")");
}

}  // namespace fx::optim
