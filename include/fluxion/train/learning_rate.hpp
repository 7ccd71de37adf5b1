// The learning-rate hook training code goes through (schedules, plateau reduction, checkpoints),
// so that how a rate is read and set is decided in one place.
//
//   auto opt = fx::optim::setup(fx::optim::Adam{}, model);
//   std::optional<double> lr = fx::train::learning_rate(opt);   // 0.001
//   fx::train::set_learning_rate(opt, 1e-4);                    // false if the rule has none
//
// Today it reads and writes the rule's `lr` field (every built-in rule has one). A rule without
// one reports std::nullopt and ignores the set. When the optimiser library grows an `adjust`
// function covering rule trees, these two bodies are the only code to change.
#pragma once
#include <optional>

namespace fx::train {

template <class O>
std::optional<double> learning_rate(const O& opt) {
  if constexpr (requires { double(opt.rule.lr); }) return double(opt.rule.lr);
  else return std::nullopt;
}

template <class O>
bool set_learning_rate(O& opt, double lr) {
  if constexpr (requires { opt.rule.lr = lr; }) {
    opt.rule.lr = lr;
    return true;
  } else {
    return false;
  }
}

}  // namespace fx::train
