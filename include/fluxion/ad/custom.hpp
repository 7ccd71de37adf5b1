// Custom gradient rules: give your own function a pullback without touching the library. A rule
// is a Primitive like the built-in ones, so it is one node on the tape, and its pullback, written
// in fluxion ops, is differentiated again for second order. Also here: fx::non_differentiable
// (outputs are constants) and fx::hook (identity forward, your function on the cotangent).
//
//   // log(1 + exp(x)) without overflow; its derivative is sigmoid(x).
//   fx::Tensor x = fx::randn({8});
//   auto log1pexp = fx::custom_rule(
//       "log1pexp",
//       [](const fx::Tensor& x) { return fx::relu(x) + fx::log1p(fx::exp(-fx::abs(x))); },
//       [](const fx::Tensor& x, const fx::Tensor& y, const fx::Tensor& dy) {
//         return dy * fx::sigmoid(x); });
//   fx::Tensor g = fx::gradient([&](const fx::Tensor& x) { return fx::sum(log1pexp(x)); }, x);
//
// The forward takes the inputs (const fx::Tensor&, one per input) and returns the output, or a
// std::tuple / std::pair of the output and residuals (tensors the pullback needs: statistics, a
// factorisation, a solution). The pullback takes (inputs..., output, residuals..., dy) and returns
// one cotangent per input: a Tensor for one input, else a std::tuple, std::array or std::vector
// of them; an undefined Tensor means zero. Each cotangent must have its input's shape and dtype.
// Either function may itself call fx::pullback / fx::gradient (calling back into AD): here the
// implicit-function rule for a fixed point x* = g(x*, theta) solves the adjoint equation
// u = dy + (dg/dx)^T u by iteration with the pullback of g, and returns (dg/dtheta)^T u:
//
//   auto g = [](const fx::Tensor& x, const fx::Tensor& th) { return 0.5 * fx::tanh(x) + th; };
//   auto fixed_point = fx::custom_rule(
//       "fixed_point",
//       [g](const fx::Tensor& th) {
//         fx::Tensor x = fx::zeros_like(th);
//         for (int k = 0; k < 200; ++k) x = g(x, th);
//         return x;
//       },
//       [g](const fx::Tensor& th, const fx::Tensor& x, const fx::Tensor& dy) {
//         auto [gx, back] = fx::pullback(g, x, th);
//         fx::Tensor u = dy;
//         for (int k = 0; k < 200; ++k) u = dy + std::get<0>(back(u));
//         return std::get<1>(back(u));
//       });
//
// How it behaves: a rule's forward runs hidden from the tape that records the rule, so that tape
// holds one node (saving the inputs, output and residuals), not the forward's inner ops. Tensors
// a rule depends on must be its arguments: a tensor that a differentiation tracks but that the
// forward reads through a lambda capture would lose its gradient, so it is an fx::Error naming
// the rule (untracked captures, such as constants, are fine). In nested differentiation, tapes
// outside the innermost one still record how residuals depend on the inputs, so second order is
// right even when the pullback reads residuals (a rule without residuals is hidden from every
// reverse tape). Forward mode (fx::jvp) through a rule differentiates its forward code. The rule
// keeps its closures alive while a tape holds one of its nodes, so it may be a local of the
// differentiated function. A call costs a few small allocations more than a built-in op.
#pragma once
#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/ad/tape.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/ops/primitive.hpp"

namespace fx {
namespace ad::detail {

// One application of a rule made at run time (custom_rule, checkpointed, hook). Decides which
// tapes the rule's own forward is hidden from (their tags are removed from the inputs it sees)
// and afterwards checks that what the forward made carries no tag it could not have got from the
// inputs: such a tag comes from a tracked tensor captured by the rule's closure.
class RuleCall {
 public:
  // innermost_only: hide only the innermost reverse tape that tracks an input, so outer tapes
  // record how residuals depend on the inputs (second order). Otherwise hide every reverse tape
  // inside the innermost forward-mode one (forward mode always differentiates the forward code).
  RuleCall(std::span<const Tensor> inputs, bool innermost_only);
  Tensor hide(const Tensor& x) const;  // x with the hidden tapes' tags removed (shares storage)
  // False if t carries the tag of an active tape that it cannot have got from the inputs.
  bool clean(const Tensor& t) const;

 private:
  uint32_t hidden_[kMaxTags];
  uint32_t allowed_[kMaxTags];
  uint32_t active_[kMaxTags];
  int nhidden_ = 0, nallowed_ = 0, nactive_ = 0;
};

// A new handle on x with no AD tags (undefined stays undefined).
Tensor detach(const Tensor& x);

// Forward of every run-time rule: its last input, which the rule computed, as a fresh untagged
// handle (bind then tags it as the rule's output). Pushforward: that input's tangent.
Tensor rule_forward(const Primitive& p, std::span<const Tensor> in, Attrs attrs);
Tensor rule_jvp(const JvpArgs& args, const Tensor* dx);

// bind(p, in) and, if a tape recorded the node, keeps `owner` (which p lives in) alive with it.
Tensor bind_rule(const Primitive& p, std::span<const Tensor> in,
                 const std::shared_ptr<const void>& owner, Attrs attrs = {});

// The type-erased rule: a Primitive whose pullback trampoline finds these closures by casting the
// `const Primitive&` it receives back to this object.
struct CustomRuleImpl : Primitive {
  std::string label;  // owns `name`
  int nin = 0, nres = 0;
  // x -> output; fills residuals with exactly nres tensors.
  std::function<Tensor(std::span<const Tensor> x, std::vector<Tensor>& residuals)> forward_fn;
  // (x..., y, residuals...), dy -> one cotangent per input.
  std::function<void(std::span<const Tensor> saved, const Tensor& dy, std::vector<Tensor>& dx)>
      pullback_fn;
};
std::shared_ptr<CustomRuleImpl> new_custom_rule(std::string name, int nin, int nres);
Tensor apply_custom_rule(const std::shared_ptr<const CustomRuleImpl>& rule,
                         std::span<const Tensor> x);

struct HookImpl : Primitive {
  std::function<Tensor(const Tensor& dy)> fn;  // dy -> the cotangent passed on (undefined: zero)
};
Tensor apply_hook(std::shared_ptr<HookImpl> h, const Tensor& x);

// ---- compile-time plumbing of custom_rule's signatures

template <class C, class R, class... A>
constexpr size_t arity_of(R (C::*)(A...) const) {
  return sizeof...(A);
}
template <class C, class R, class... A>
constexpr size_t arity_of(R (C::*)(A...)) {
  return sizeof...(A);
}
template <class R, class... A>
constexpr size_t arity_of(R (*)(A...)) {
  return sizeof...(A);
}

// Number of parameters of a non-generic callable; 0 when it cannot be known (generic lambda).
template <class F>
constexpr size_t deduced_arity() {
  using D = std::decay_t<F>;
  if constexpr (requires { &D::operator(); }) return arity_of(&D::operator());
  else if constexpr (std::is_pointer_v<D>) return arity_of(D{});
  else return 0;
}

template <size_t I>
using tensor_ref = const Tensor&;

template <class R>
struct forward_result {
  static_assert(std::is_same_v<R, Tensor>,
                "fx::custom_rule: the forward must return fx::Tensor, or a std::tuple/std::pair "
                "of the output and residual tensors");
  static constexpr size_t residuals = 0;
};
template <class... T>
struct forward_result<std::tuple<Tensor, T...>> {
  static_assert((std::is_same_v<T, Tensor> && ...),
                "fx::custom_rule: residuals must be fx::Tensor");
  static constexpr size_t residuals = sizeof...(T);
};
template <class T>
struct forward_result<std::pair<Tensor, T>> : forward_result<std::tuple<Tensor, T>> {};

// Moves the pullback's result (Tensor, tuple, pair, array or vector) into dx.
template <size_t N, class R>
void store_cotangents(R&& r, std::vector<Tensor>& dx) {
  using D = std::decay_t<R>;
  if constexpr (std::is_same_v<D, std::vector<Tensor>>) {
    dx = std::forward<R>(r);  // its length is checked by the caller
  } else if constexpr (std::is_convertible_v<D, Tensor>) {
    static_assert(N == 1,
                  "fx::custom_rule: a rule of several inputs returns one cotangent per "
                  "input (a std::tuple, std::array or std::vector of tensors)");
    dx.assign(1, Tensor(std::forward<R>(r)));
  } else {
    static_assert(
        requires { std::tuple_size<D>::value; },
        "fx::custom_rule: the pullback must return fx::Tensor, or a std::tuple, "
        "std::pair, std::array or std::vector of them");
    static_assert(std::tuple_size_v<D> == N,
                  "fx::custom_rule: the pullback must return one cotangent per input");
    dx.resize(N);
    [&]<size_t... I>(std::index_sequence<I...>) {
      ((dx[I] = Tensor(std::get<I>(std::forward<R>(r)))), ...);
    }
    (std::make_index_sequence<N>{});
  }
}

}  // namespace ad::detail

// A rule made by fx::custom_rule: call it with N tensors to get its output. Copies share one rule.
template <size_t N>
class CustomRule {
 public:
  explicit CustomRule(std::shared_ptr<const ad::detail::CustomRuleImpl> impl)
      : impl_(std::move(impl)) {}

  template <class... T>
    requires(sizeof...(T) == N && (std::is_same_v<T, Tensor> && ...))
  Tensor operator()(const T&... x) const {
    const Tensor in[] = {x...};
    return ad::detail::apply_custom_rule(impl_, in);
  }
  const char* name() const { return impl_->name; }
  const Primitive& primitive() const { return *impl_; }

 private:
  std::shared_ptr<const ad::detail::CustomRuleImpl> impl_;
};

namespace ad::detail {
template <size_t M, size_t K, class P, size_t... J>
auto make_pullback_fn(P pullback, std::index_sequence<J...>) {
  static_assert(std::is_invocable_v<const P&, tensor_ref<J>..., const Tensor&>,
                "fx::custom_rule: the pullback must take (inputs..., output, residuals..., dy) "
                "as const fx::Tensor&");
  return [p = std::move(pullback)](std::span<const Tensor> s, const Tensor& dy,
                                   std::vector<Tensor>& dx) {
    store_cotangents<M>(p(s[J]..., dy), dx);
  };
}

template <size_t M, class F, class P, size_t... I>
auto make_custom_rule(std::string name, F forward, P pullback, std::index_sequence<I...>) {
  static_assert(std::is_invocable_v<const F&, tensor_ref<I>...>,
                "fx::custom_rule: the forward must take its inputs as const fx::Tensor&");
  using R = std::decay_t<std::invoke_result_t<const F&, tensor_ref<I>...>>;
  constexpr size_t K = forward_result<R>::residuals;
  static_assert(M + K <= 31, "fx::custom_rule: at most 31 inputs and residuals together");
  auto impl = new_custom_rule(std::move(name), int(M), int(K));
  impl->forward_fn = [f = std::move(forward)](std::span<const Tensor> x,
                                              std::vector<Tensor>& res) -> Tensor {
    R r = f(x[I]...);
    if constexpr (K == 0) {
      return r;
    } else {
      res.clear();
      std::apply([&](const Tensor&, const auto&... rest) { (res.push_back(rest), ...); }, r);
      return std::get<0>(std::move(r));
    }
  };
  impl->pullback_fn =
      make_pullback_fn<M, K>(std::move(pullback), std::make_index_sequence<M + 1 + K>{});
  return CustomRule<M>(std::move(impl));
}
}  // namespace ad::detail

// Makes a rule named `name` (errors mention it) from a forward and a pullback; see the top of this
// file for their signatures. N, the number of inputs, is read from the forward's parameter list;
// give it for a generic forward: fx::custom_rule<2>("name", [](const auto& a, const auto& b)...).
template <size_t N = 0, class F, class P>
auto custom_rule(std::string name, F forward, P pullback) {
  constexpr size_t M = N ? N : ad::detail::deduced_arity<F>();
  static_assert(M > 0,
                "fx::custom_rule: cannot tell how many inputs a generic forward takes; "
                "give it, as in fx::custom_rule<2>(...)");
  return ad::detail::make_custom_rule<M>(std::move(name), std::move(forward), std::move(pullback),
                                         std::make_index_sequence<M>{});
}
template <size_t N = 0, class F, class P>
  requires(!std::is_convertible_v<F, std::string>)
auto custom_rule(F forward, P pullback) {
  return custom_rule<N>("custom_rule", std::move(forward), std::move(pullback));
}

// f with every tensor it receives and returns cut from differentiation: its outputs are
// constants, so gradients through it are zero (arguments and results may be structures).
//   auto argmax_onehot = fx::non_differentiable([](const fx::Tensor& x) { ... });
template <class F>
auto non_differentiable(F f) {
  auto cut = []<class T>(const T& x) {
    if constexpr (std::is_same_v<T, Tensor>) {
      return ad::detail::detach(x);
    } else {
      T y = x;
      zip_tensors([](Tensor& t) { t = ad::detail::detach(t); }, y);
      return y;
    }
  };
  return [f = std::move(f), cut](const auto&... args) {
    using R = decltype(f(cut(args)...));
    if constexpr (std::is_void_v<R>) f(cut(args)...);
    else return cut(f(cut(args)...));
  };
}

// x unchanged; on the way back, the cotangent dy of x is replaced by f(dy) (gradient clipping,
// rescaling), or passed on unchanged when f returns void (printing, logging). In nested
// differentiation every cotangent of x, at every order, passes through f, and f written in
// fluxion ops is itself differentiated (tests/ad/custom_test.cpp, Hook.IsDifferentiatedAgain).
//   y = fx::hook([](const fx::Tensor& dy) { return fx::clamp(dy, -1, 1); }, y);
template <class F>
Tensor hook(F f, const Tensor& x) {
  FX_CHECK(x.defined(), "fx::hook: undefined tensor");
  if (fx::detail::active_tape_count() == 0 || x.impl()->ntags == 0) return x;  // nothing to watch
  auto h = std::make_shared<ad::detail::HookImpl>();
  if constexpr (std::is_void_v<std::invoke_result_t<F&, const Tensor&>>) {
    h->fn = [f = std::move(f)](const Tensor& dy) mutable {
      f(dy);
      return dy;
    };
  } else {
    h->fn = [f = std::move(f)](const Tensor& dy) mutable { return Tensor(f(dy)); };
  }
  return ad::detail::apply_hook(std::move(h), x);
}

}  // namespace fx
