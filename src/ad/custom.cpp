// Rules made at run time: custom_rule, hook, and the machinery checkpointed shares with them.
//
// Every such rule binds one Primitive whose inputs are the rule's arguments, then its residuals,
// then the output its own forward computed (hidden from the recording tape). The Primitive's
// forward just hands that last input back as a fresh handle, so the tape records one node that
// saves the arguments, residuals and output through the ordinary mechanism, and frees them with
// the tape. Residuals carry the tags of outer tapes, so an outer tape differentiates them.
#include "fluxion/ad/custom.hpp"

#include <algorithm>

#include "fluxion/ad/trace.hpp"
#include "fluxion/core/error.hpp"

namespace fx::ad::detail {
namespace {

bool has_tag(const Tensor& x, uint32_t tag) {
  const TensorImpl* p = x.impl();
  for (int k = 0; k < p->ntags; ++k)
    if (p->tags[k].tape == tag) return true;
  return false;
}

bool contains(const uint32_t* tags, int n, uint32_t tag) {
  for (int k = 0; k < n; ++k)
    if (tags[k] == tag) return true;
  return false;
}

const char* const kCaptured =
    " depends on a tensor that is being differentiated but is not one of its arguments (read "
    "through a lambda capture?); pass it as an argument, or its gradient would be lost";

void custom_pullback(const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
  const auto& r = static_cast<const CustomRuleImpl&>(a.primitive());
  std::vector<Tensor> saved;
  saved.reserve(size_t(r.nin + 1 + r.nres));
  for (int i = 0; i < r.nin; ++i) saved.push_back(a.input(i));
  saved.push_back(a.output());
  for (int k = 0; k < r.nres; ++k) saved.push_back(a.input(r.nin + k));
  std::vector<Tensor> g;
  r.pullback_fn(saved, dy, g);
  FX_CHECK(g.size() == size_t(r.nin), "fx::custom_rule '", r.name, "': the pullback returned ",
           g.size(), " cotangents for ", r.nin, " inputs");
  for (int i = 0; i < r.nin; ++i) {
    if (!a.wants(i) || !g[i].defined()) continue;
    const Tensor& x = saved[size_t(i)];
    FX_CHECK(g[i].shape() == x.shape() && g[i].dtype() == x.dtype(), "fx::custom_rule '", r.name,
             "': the pullback's cotangent for input ", i, " is ", dtype_name(g[i].dtype()), " ",
             g[i].shape(), " but the input is ", dtype_name(x.dtype()), " ", x.shape());
    dx[i] = std::move(g[i]);
  }
}

void hook_pullback(const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
  const auto& h = static_cast<const HookImpl&>(a.primitive());
  Tensor g = h.fn(dy);
  FX_CHECK(!g.defined() || (g.shape() == dy.shape() && g.dtype() == dy.dtype()),
           "fx::hook: the hook returned a ", dtype_name(g.dtype()), " ", g.shape(),
           " cotangent for a ", dtype_name(dy.dtype()), " ", dy.shape(), " value");
  dx[0] = std::move(g);
}

}  // namespace

RuleCall::RuleCall(std::span<const Tensor> inputs, bool innermost_only) {
  ActiveTape tapes[kMaxTags];
  bool tracks[kMaxTags] = {};
  int deepest_forward = -1;
  const int depth = num_active_tapes();
  for (int l = 0; l < depth; ++l) {
    tapes[l] = active_tape(l);
    active_[nactive_++] = tapes[l].tag;
    if (tapes[l].forward) deepest_forward = l;
    for (const Tensor& x : inputs)
      if (x.defined() && has_tag(x, tapes[l].tag)) tracks[l] = true;
  }
  // Only reverse tapes inside every forward-mode one may be hidden: a forward-mode tape needs
  // the forward's ops to compute the output's tangent, and a tape outside it to differentiate
  // that tangent.
  bool hide[kMaxTags] = {};
  for (int l = depth - 1; l > deepest_forward; --l) {
    if (!innermost_only) {
      hide[l] = true;
    } else if (tracks[l]) {
      hide[l] = true;
      break;
    }
  }
  for (int l = 0; l < depth; ++l) {
    if (hide[l]) hidden_[nhidden_++] = tapes[l].tag;
    else if (tracks[l]) allowed_[nallowed_++] = tapes[l].tag;
  }
}

Tensor RuleCall::hide(const Tensor& x) const {
  if (!x.defined() || nhidden_ == 0) return x;
  const TensorImpl* src = x.impl();
  bool any = false;
  for (int k = 0; k < src->ntags; ++k) any |= contains(hidden_, nhidden_, src->tags[k].tape);
  if (!any) return x;
  Tensor y = detach(x);
  TensorImpl* p = y.impl();
  for (int k = 0; k < src->ntags; ++k)
    if (!contains(hidden_, nhidden_, src->tags[k].tape)) p->tags[p->ntags++] = src->tags[k];
  return y;
}

bool RuleCall::clean(const Tensor& t) const {
  if (!t.defined()) return true;
  const TensorImpl* p = t.impl();
  for (int k = 0; k < p->ntags; ++k) {
    uint32_t tag = p->tags[k].tape;
    if (contains(active_, nactive_, tag) && !contains(allowed_, nallowed_, tag)) return false;
  }
  return true;
}

Tensor detach(const Tensor& x) { return x.defined() ? untagged_view(x) : x; }

Tensor rule_forward(const Primitive&, std::span<const Tensor> in, Attrs) {
  return detach(in.back());
}

Tensor rule_jvp(const JvpArgs& args, const Tensor* dx) { return dx[args.num_inputs() - 1]; }

Tensor bind_rule(const Primitive& p, std::span<const Tensor> in,
                 const std::shared_ptr<const void>& owner, Attrs attrs) {
  Tensor out = bind(p, in, attrs);
  if (out.impl()->ntags != 0) keep_alive(out, owner);
  if (fx::detail::tracing_active()) fx::detail::keep_alive_in_trace(owner);
  return out;
}

std::shared_ptr<CustomRuleImpl> new_custom_rule(std::string name, int nin, int nres) {
  auto r = std::make_shared<CustomRuleImpl>();
  r->label = std::move(name);
  r->name = r->label.c_str();
  r->nin = nin;
  r->nres = nres;
  r->forward = rule_forward;
  r->pullback = custom_pullback;
  r->jvp = rule_jvp;
  r->saves = saves::output;
  for (int i = 0; i < nin + nres; ++i) r->saves |= saves::input(i);
  return r;
}

Tensor apply_custom_rule(const std::shared_ptr<const CustomRuleImpl>& r,
                         std::span<const Tensor> x) {
  for (size_t i = 0; i < x.size(); ++i)
    FX_CHECK(x[i].defined(), "fx::custom_rule '", r->name, "': input ", i, " is undefined");
  std::vector<Tensor> res;
  if (fx::detail::active_tape_count() == 0) {
    Tensor y = r->forward_fn(x, res);
    FX_CHECK(y.defined(), "fx::custom_rule '", r->name,
             "': the forward returned an undefined "
             "tensor");
    return y;
  }
  // Residuals are only read by the pullback, so without them every reverse tape can be hidden.
  RuleCall call(x, r->nres > 0);
  std::vector<Tensor> in(x.size() + size_t(r->nres) + 1);
  for (size_t i = 0; i < x.size(); ++i) in[i] = call.hide(x[i]);
  Tensor y = r->forward_fn(std::span<const Tensor>(in.data(), x.size()), res);
  FX_CHECK(y.defined(), "fx::custom_rule '", r->name,
           "': the forward returned an undefined "
           "tensor");
  FX_CHECK(call.clean(y), "fx::custom_rule '", r->name, "': the output", kCaptured);
  for (size_t k = 0; k < res.size(); ++k) {
    FX_CHECK(res[k].defined(), "fx::custom_rule '", r->name, "': residual ", k, " is undefined");
    FX_CHECK(call.clean(res[k]), "fx::custom_rule '", r->name, "': residual ", k, kCaptured);
  }
  std::copy(x.begin(), x.end(), in.begin());
  std::move(res.begin(), res.end(), in.begin() + std::ptrdiff_t(x.size()));
  in.back() = std::move(y);
  return bind_rule(*r, in, r);
}

Tensor apply_hook(std::shared_ptr<HookImpl> h, const Tensor& x) {
  h->name = "hook";
  h->forward = rule_forward;
  h->pullback = hook_pullback;
  h->jvp = rule_jvp;
  const Tensor in[] = {x};
  return bind_rule(*h, in, h);
}

}  // namespace fx::ad::detail
