// fx::checkpointed: one node whose pullback runs the function again on a tape of its own.
#include "fluxion/ad/checkpoint.hpp"

#include <algorithm>

#include "fluxion/core/error.hpp"

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

}  // namespace

std::shared_ptr<CheckpointImpl> new_checkpoint() {
  auto c = std::make_shared<CheckpointImpl>();
  c->name = "checkpointed";
  c->forward = rule_forward;
  c->pullback = checkpoint_pullback;
  c->jvp = rule_jvp;
  return c;
}

Tensor apply_checkpoint(std::shared_ptr<CheckpointImpl> c) {
  const size_t n = c->leaves.size();
  for (const Tensor& x : c->leaves) c->versions.push_back(x.defined() ? x.storage()->version : 0);
  // No residuals: the pullback recomputes from the leaves, so every reverse tape is hidden and
  // none keeps the function's intermediate values.
  RuleCall call(c->leaves, false);
  std::vector<Tensor> in(n + 1);
  for (size_t i = 0; i < n; ++i) in[i] = call.hide(c->leaves[i]);
  Tensor y = c->run(std::span<const Tensor>(in.data(), n));
  FX_CHECK(y.defined(), "fx::checkpointed: the function returned an undefined tensor");
  FX_CHECK(call.clean(y),
           "fx::checkpointed: the result depends on a tensor that is being "
           "differentiated but is not one of the arguments (read through a "
           "lambda capture?); pass it as an argument, or its gradient would be "
           "lost");
  std::copy(c->leaves.begin(), c->leaves.end(), in.begin());
  in.back() = std::move(y);
  return bind_rule(*c, in, c, CheckpointAttrs{in.back().shape(), in.back().dtype()});
}

}  // namespace fx::ad::detail
