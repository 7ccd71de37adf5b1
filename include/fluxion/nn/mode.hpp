// Train/test mode of the layers whose behaviour differs between the two (BatchNorm, Dropout,
// AlphaDropout, ...): automatic by default, as in Flux, and forced per model when asked.
//
//   auto model = fx::nn::Chain(fx::nn::Dense(4, 4), fx::nn::Dropout(0.5));
//   fx::Tensor x = fx::randn({8, 4});
//   auto y = model(x);                 // automatic, outside a gradient: test mode (no dropout)
//   auto g = fx::gradient([&](const auto& m) { return fx::sum(m(x)); }, model);  // training
//   fx::nn::trainmode(model);          // always training (dropout applied even outside gradient)
//   fx::nn::testmode(model);           // never training (dropout off even inside a gradient)
//   fx::nn::automode(model);           // back to automatic
//
// Automatic means training exactly while a reverse-mode recording is active on this thread
// (inside fx::gradient, withgradient, pullback): forward-mode derivatives alone do not count,
// so a jvp of a model evaluates it as at test time. A layer keeps its fx::nn::Mode as a field
// listed in FX_FIELDS (an enum leaf: walked, never differentiated, never saved), which is how
// testmode/trainmode reach every layer of a nested model.
#pragma once
#include <type_traits>

#include "fluxion/ad/tape.hpp"
#include "fluxion/core/fields.hpp"

namespace fx::nn {

enum class Mode { automatic, train, test };

// Whether a layer in mode `m` behaves as in training now.
inline bool is_training(Mode m) {
  if (m != Mode::automatic) return m == Mode::train;
  for (int level = 0; level < ad::num_active_tapes(); ++level)
    if (!ad::active_tape(level).forward) return true;
  return false;
}

// Sets the mode of every layer inside model (anything that walks: structs with FX_FIELDS,
// Chains, containers). Returns the model for chaining.
template <class M>
M& setmode(M& model, Mode m) {
  zip_leaves(
      [m](auto& leaf) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(leaf)>, Mode>) leaf = m;
      },
      model);
  return model;
}
template <class M>
M& testmode(M& model) {
  return setmode(model, Mode::test);
}
template <class M>
M& trainmode(M& model) {
  return setmode(model, Mode::train);
}
template <class M>
M& automode(M& model) {
  return setmode(model, Mode::automatic);
}

}  // namespace fx::nn
