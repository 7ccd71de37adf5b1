// Gradient checkpointing: trade compute for memory. fx::checkpointed(f, args...) returns
// f(args...) but keeps none of f's intermediate values on the tape: the tape holds one node (and
// the arguments); the backward pass runs f again, recording it then, to get the gradients.
//
//   // A 100-step recurrence in 10 checkpointed segments of 10 steps (examples/custom_rules.cpp):
//   // the tape keeps 10 nodes and their inputs instead of every step's nodes; the backward pass
//   // records each segment again, one segment at a time.
//   fx::Tensor w = fx::randn({64, 64}, fx::f64) * (0.9 / 8), h0 = fx::randn({64}, fx::f64);
//   std::vector<fx::Tensor> xs;                      // inputs: constants, so a capture is fine
//   for (int t = 0; t < 100; ++t) xs.push_back(fx::randn({64}, fx::f64));
//   auto segment = [&xs](const fx::Tensor& w, const fx::Tensor& h0, int t0) {
//     fx::Tensor h = h0;
//     for (int t = t0; t < t0 + 10; ++t) h = fx::tanh(fx::matmul(w, h) + xs[t]);
//     return h;
//   };
//   auto loss = [&](const fx::Tensor& w) {
//     fx::Tensor h = h0;
//     for (int s = 0; s < 10; ++s) h = fx::checkpointed(segment, w, h, 10 * s);
//     return fx::sum(h);
//   };
//   fx::Tensor gw = fx::gradient(loss, w);  // equal to the gradient without checkpointing
//
// f must return a Tensor. Arguments may be tensors, numbers or structures (FX_FIELDS layers,
// vectors, tuples), and f may be a layer: fx::checkpointed(block, x) checkpoints a whole block,
// its parameters differentiated as if they were arguments. Everything f depends on
// and is differentiated must be an argument: a tracked tensor reached through a lambda capture is
// an fx::Error (its gradient would be lost). f is called again during the backward pass, so it
// must be deterministic (give random layers a fixed seed) and what it captures must still be
// alive then. Gradients of the recomputation are differentiable again (second order works).
// Under fx::vmap, a gradient taken outside the vmap records one checkpoint of the batched
// function (its recomputation is batched too).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/ad/custom.hpp"
#include "fluxion/ad/tape.hpp"
#include "fluxion/core/fields.hpp"

namespace fx {
namespace ad::detail {

// One checkpointed call: the Primitive recorded for it, the arguments' tensor leaves (the tape's
// node points here, and the tape keeps this object alive), and f applied to given leaves.
struct CheckpointImpl : Primitive {
  std::vector<Tensor> leaves;
  std::vector<uint64_t> versions;  // of the leaves' storage at the call: the recomputation
                                   // must see the same data
  std::function<Tensor(std::span<const Tensor> leaves)> run;
};
std::shared_ptr<CheckpointImpl> new_checkpoint();
Tensor apply_checkpoint(std::shared_ptr<CheckpointImpl> c);

}  // namespace ad::detail

template <class F, class... Args>
Tensor checkpointed(F&& f, const Args&... args) {
  using R = std::invoke_result_t<F&, const Args&...>;
  static_assert(std::is_same_v<std::decay_t<R>, Tensor>,
                "fx::checkpointed: the function must return fx::Tensor");
  if (fx::detail::active_tape_count() == 0) return f(args...);
  auto c = ad::detail::new_checkpoint();
  // f and the arguments without their tensors, which live in c->leaves only. f comes first: a
  // layer passed as f (FX_FIELDS) has its parameters differentiated like an argument's.
  using Skeleton = std::tuple<std::decay_t<F>, Args...>;
  Skeleton skeleton{std::forward<F>(f), args...};
  std::apply(
      [&](auto&... a) {
        (zip_tensors([&](Tensor& t) { c->leaves.push_back(std::exchange(t, Tensor())); }, a), ...);
      },
      skeleton);
  c->run = [skeleton = std::move(skeleton)](std::span<const Tensor> leaves) {
    Skeleton xs = skeleton;
    size_t k = 0;
    std::apply([&](auto&... a) { (zip_tensors([&](Tensor& t) { t = leaves[k++]; }, a), ...); }, xs);
    return Tensor(std::apply([](auto& fn, auto&... a) { return fn(a...); }, xs));
  };
  return ad::detail::apply_checkpoint(std::move(c));
}

}  // namespace fx
