// Walking a model's structure: the parameters as a list, their count, and a copy with every
// tensor transformed. All of it comes from the FX_FIELDS each layer declares; printing a model
// (fx::nn::summary, operator<<) is in fluxion/nn/show.hpp.
//
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 256, fx::relu), fx::nn::Dense(256, 10));
//   std::vector<fx::Tensor> ps = fx::nn::trainables(model);     // weight, bias, weight, bias
//   int64_t n = fx::nn::parameter_count(model);                  // 203530
//   auto m64 = fx::nn::fmap([](const fx::Tensor& t) { return t.astype(fx::f64); }, model);
//   auto grad = fx::nn::fmap([](const fx::Tensor& t) { return fx::ones_like(t); }, model);
//   auto step = fx::nn::fmap([](const fx::Tensor& p, const fx::Tensor& g) { return p - 0.1 * g; },
//                            model, grad);                       // several models in lockstep
//
// trainables returns handles that share storage with the model, in the order every walker
// (gradients, optimiser state, save/load) visits the leaves. Undefined leaves (a Dense without
// bias) are skipped everywhere; integer and bool tensors are state, not parameters, so
// trainables and parameter_count leave them out, as they leave out FX_STATE fields (which only
// fx::for_each_leaf and fx::for_each_state_tensor visit). fx::trainables is fx::nn::trainables.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fluxion/core/fields.hpp"
#include "fluxion/core/leaves.hpp"

namespace fx::nn {

inline bool is_trainable(const Tensor& t) { return t.defined() && is_floating(t.dtype()); }

template <class M>
std::vector<Tensor> trainables(const M& model) {
  std::vector<Tensor> out;
  for_each_tensor(model, [&](const Tensor& t) {
    if (is_trainable(t)) out.push_back(t);
  });
  return out;
}

template <class M>
int64_t parameter_count(const M& model) {
  int64_t n = 0;
  for_each_tensor(model, [&](const Tensor& t) {
    if (is_trainable(t)) n += t.numel();
  });
  return n;
}

// A copy of x whose defined tensor leaves are replaced by f(leaf, leaves of ys at that place).
// The ys must have x's structure (fx::Error otherwise); non-tensor members are copied from x.
template <class F, class M, class... Ms>
M fmap(F&& f, const M& x, const Ms&... ys) {
  M out = x;
  zip_tensors(
      [&](Tensor& t, const auto&... u) {
        if (t.defined()) t = f(t, u...);
      },
      out, ys...);
  return out;
}

}  // namespace fx::nn

namespace fx {
using nn::trainables;
}  // namespace fx
