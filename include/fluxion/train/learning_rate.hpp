// The learning-rate hook training code goes through (schedules, plateau reduction, checkpoints),
// on top of fx::optim::adjust and fx::optim::for_each_learning_rate.
//
//   auto model = fx::nn::Dense(4, 2);
//   auto opt = fx::optim::setup(fx::optim::Adam{}, model);
//   std::optional<double> lr = fx::train::learning_rate(opt);   // 0.001
//   fx::train::set_learning_rate(opt, 1e-4);                    // false if no rule has one
//   std::vector<double> all = fx::train::learning_rates(opt);   // one per rule with an lr
//
// An optimiser's rules may hold different rates (fx::optim::adjust on a subtree, a chain):
// learning_rate reads the first, set_learning_rate sets them all (what a schedule does), and
// learning_rates / set_learning_rates keep every one (what a checkpoint does). Rules without a
// rate (AdaDelta) are left out.
#pragma once
#include <optional>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/optim/adjust.hpp"

namespace fx::train {

template <class O>
std::vector<double> learning_rates(const O& opt) {
  std::vector<double> out;
  optim::for_each_learning_rate(opt, [&](double lr) { out.push_back(lr); });
  return out;
}

template <class O>
std::optional<double> learning_rate(const O& opt) {
  std::vector<double> all = learning_rates(opt);
  if (all.empty()) return std::nullopt;
  return all.front();
}

template <class O>
bool set_learning_rate(O& opt, double lr) {
  if (learning_rates(opt).empty()) return false;
  optim::adjust(opt, lr);
  return true;
}

// Sets every rate, in learning_rates' order; `lrs` must have one per rate (else fx::Error,
// and nothing is set).
template <class O>
void set_learning_rates(O& opt, const std::vector<double>& lrs) {
  const size_t n = learning_rates(opt).size();
  FX_CHECK(n == lrs.size(), "fx::train::set_learning_rates: ", lrs.size(),
           " rates given for an optimiser with ", n);
  size_t k = 0;
  optim::for_each_learning_rate(opt, [&](double& lr) { lr = lrs[k++]; });
}

}  // namespace fx::train
