// fx::checkpointed: one node whose pullback runs the function again on a tape of its own.
#include "fluxion/ad/checkpoint.hpp"

#include <algorithm>

#include "fluxion/ad/vmap.hpp"
#include "fluxion/core/error.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/batching.hpp"

namespace fx::ad::detail {
namespace {

// What the first run gave: the recomputation must give the same shape and dtype.
struct CheckpointAttrs {
  Shape shape;
  DType dtype = DType::f32;
  FX_ATTRS(CheckpointAttrs, shape, dtype)
};

void checkpoint_pullback(const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
  const auto& c = static_cast<const CheckpointImpl&>(a.primitive());
  for (size_t i = 0; i < c.leaves.size(); ++i) {
    const Tensor& x = c.leaves[i];
    FX_CHECK(!x.defined() || x.storage()->version == c.versions[i],
             "fx::checkpointed: argument tensor ", i, " ", x.shape(),
             " was overwritten in place after the call, so running the function again would "
             "give other values; clone it before writing");
  }
  // The leaves keep the tags of outer tapes, so when one is still recording (second order) it
  // records this recomputation and its backward pass too.
  Recording rec = Recording::begin();
  std::vector<Tensor> xs(c.leaves.size());
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = rec.track(c.leaves[i]);
  Tensor y = c.run(xs);
  rec.end();
  const CheckpointAttrs& first = a.attrs<CheckpointAttrs>();
  FX_CHECK(y.defined() && y.shape() == first.shape && y.dtype() == first.dtype,
           "fx::checkpointed: running the function again gave ",
           y.defined() ? std::string(dtype_name(y.dtype())) + " " + y.shape().to_string()
                       : std::string("an undefined tensor"),
           " where the first run gave ", dtype_name(first.dtype), " ", first.shape,
           "; the function must be deterministic");
  std::vector<Tensor> g = rec.backward_once(y, dy);  // a fresh recording, swept once
  for (size_t i = 0; i < g.size(); ++i)
    if (a.wants(int(i))) dx[i] = std::move(g[i]);
}

constexpr const char* kCapturedMessage =
    "fx::checkpointed: the result depends on a tensor that is being differentiated but is not one "
    "of the arguments (read through a lambda capture?); pass it as an argument, or its gradient "
    "would be lost";

// The rule's inputs: the leaves, then the first run's result.
std::vector<Tensor> with_result(const std::vector<Tensor>& leaves, const Tensor& y) {
  std::vector<Tensor> in(leaves);
  in.push_back(y);
  return in;
}

// Whether the first run is left to the batching rule: when a leaf is batched by the fx::vmap on
// top of the stack (its ops would reach the tapes below that vmap through the stored values,
// which the handles' tags do not show, so those tapes would record the whole function) and no
// forward-mode tape needs the run's ops for the result's tangent. Nothing above the vmap records
// the application, so nothing keeps the attributes, unknown until the rule has run.
bool first_run_in_batch_rule(const std::vector<Tensor>& leaves) {
  for (int l = 0; l < num_active_tapes(); ++l)
    if (active_tape(l).forward) return false;
  return std::any_of(leaves.begin(), leaves.end(),
                     [](const Tensor& x) { return fx::detail::batched_by_top_vmap(x); });
}

// Under fx::vmap: one checkpoint of the batched function on the stored values (batch on axis 0),
// which the tapes below the vmap record as one node. The node's recomputation is that function
// vmapped again, so it reads the stored values, which outlive the vmap (the leaves of the
// per-example call are its handles, which do not).
Tensor checkpoint_batch(const Primitive& p, const BatchArgs& a) {
  const auto& c = static_cast<const CheckpointImpl&>(p);
  const size_t n = c.leaves.size();
  uint64_t mapped = 0;
  for (size_t i = 0; i < n; ++i)
    if (a.is_batched(i)) mapped |= uint64_t(1) << i;
  auto b = new_checkpoint();
  b->leaves.assign(a.in.begin(), a.in.begin() + std::ptrdiff_t(n));
  for (const Tensor& x : b->leaves) b->versions.push_back(x.defined() ? x.storage()->version : 0);
  b->run = [run = c.run, mapped](std::span<const Tensor> xs) {
    fx::detail::VmapScope scope;
    std::vector<Tensor> in(xs.begin(), xs.end());
    for (size_t i = 0; i < in.size(); ++i)
      if (((mapped >> i) & 1u) && in[i].defined()) in[i] = scope.enter(in[i], 0);
    scope.open();
    Tensor y = run(in);
    scope.close();
    return scope.leave(y, 0);
  };
  Tensor y = a.in[n];
  if (!y.defined()) {
    // The first run, left to this rule by apply_checkpoint: hidden from the tapes below the vmap,
    // which tag the stored values (leaving the vmap puts the batch on axis 0).
    RuleCall call(b->leaves, false);
    std::vector<Tensor> hidden(n);
    for (size_t i = 0; i < n; ++i) hidden[i] = call.hide(b->leaves[i]);
    y = b->run(hidden);
    FX_CHECK(call.clean(y), kCapturedMessage);
  } else if (!a.is_batched(n)) {
    // The first run's result did not depend on the batch: give it the batch axis.
    y = contiguous(expand(unsqueeze(y, 0), fx::detail::with_batch(a.size, y.shape())));
  }
  return bind_rule(*b, with_result(b->leaves, y), b, CheckpointAttrs{y.shape(), y.dtype()});
}

}  // namespace

std::shared_ptr<CheckpointImpl> new_checkpoint() {
  auto c = std::make_shared<CheckpointImpl>();
  c->name = "checkpointed";
  c->forward = rule_forward;
  c->pullback = checkpoint_pullback;
  c->jvp = rule_jvp;
  c->batch = checkpoint_batch;
  return c;
}

Tensor apply_checkpoint(std::shared_ptr<CheckpointImpl> c) {
  const size_t n = c->leaves.size();
  for (const Tensor& x : c->leaves) c->versions.push_back(x.defined() ? x.storage()->version : 0);
  // No residuals: the pullback recomputes from the leaves, so every reverse tape is hidden and
  // none keeps the function's intermediate values.
  if (first_run_in_batch_rule(c->leaves))
    return bind_rule(*c, with_result(c->leaves, Tensor()), c, CheckpointAttrs{});
  RuleCall call(c->leaves, false);
  std::vector<Tensor> in(n + 1);
  for (size_t i = 0; i < n; ++i) in[i] = call.hide(c->leaves[i]);
  Tensor y = c->run(std::span<const Tensor>(in.data(), n));
  FX_CHECK(y.defined(), "fx::checkpointed: the function returned an undefined tensor");
  FX_CHECK(call.clean(y), kCapturedMessage);
  std::copy(c->leaves.begin(), c->leaves.end(), in.begin());
  in.back() = std::move(y);
  return bind_rule(*c, in, c, CheckpointAttrs{in.back().shape(), in.back().dtype()});
}

}  // namespace fx::ad::detail
