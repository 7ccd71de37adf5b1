// Control flow that fx::trace can record: a branch on a tensor's value, and a loop over axis 0.
//
//   fx::Tensor x = fx::randn({3});
//   // y = x * 2 when sum(x) > 0, else x - 1; differentiable in x, traceable
//   fx::Tensor y = fx::cond(fx::sum(x) > fx::scalar(0.0),
//                           [](const fx::Tensor& v) { return v * 2; },
//                           [](const fx::Tensor& v) { return v - 1; }, x);
//   // a running sum over the rows of xs: carry (F,), outputs stacked (T, F)
//   auto [total, partial] = fx::scan(
//       [](const fx::Tensor& c, const fx::Tensor& row) {
//         fx::Tensor next = c + row;
//         return std::pair{next, next};
//       }, fx::zeros({3}), fx::randn({4, 3}));
//
// Eagerly, cond runs one branch, and scan is a plain loop. Under fx::trace and fx::vmap (where the
// predicate has no value yet, or one per example) cond runs both branches and selects between
// their results elementwise with `where`, so both must return the same structure of tensors
// with the same shapes and dtypes; scan unrolls its loop, whose length the traced shape of xs fixes. Both are differentiable,
// being made of differentiable primitives.
#pragma once
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/core/storage.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/view.hpp"

namespace fx {

// on_true(operands...) where pred (one element; non-zero is true) holds, else on_false(...).
template <class T, class F, class... Ops>
auto cond(const Tensor& pred, T&& on_true, F&& on_false, const Ops&... operands) {
  using R = std::decay_t<decltype(on_true(operands...))>;
  static_assert(std::is_same_v<R, std::decay_t<decltype(on_false(operands...))>>,
                "fx::cond: both branches must return the same type");
  FX_CHECK(pred.defined() && pred.numel() == 1,
           "fx::cond: the predicate must have one element, "
           "it has shape ",
           pred.defined() ? pred.shape() : Shape{});
  // A predicate without a value (traced, or batched by fx::vmap: one value per example) runs both
  // branches and selects elementwise.
  if (pred.device().has_data() && pred.storage()->data)
    return pred.item() != 0 ? on_true(operands...) : on_false(operands...);
  R a = on_true(operands...);
  const R b = on_false(operands...);
  const Tensor p = pred.dtype() == boolean ? pred : ne(pred, zeros_like(pred));
  zip_tensors(
      [&](Tensor& x, const Tensor& y) {
        FX_CHECK(x.shape() == y.shape() && x.dtype() == y.dtype(), "fx::cond: the branches return ",
                 dtype_name(x.dtype()), " ", x.shape(), " and ", dtype_name(y.dtype()), " ",
                 y.shape());
        x = where(p, x, y);
      },
      a, b);
  return a;
}

// Applies f(carry, xs[i]) -> {carry, y} for i along axis 0 of xs; returns the last carry and the
// ys stacked along a new axis 0 (undefined when xs has no rows).
template <class F, class C>
std::pair<C, Tensor> scan(F&& f, const C& init, const Tensor& xs) {
  FX_CHECK(xs.defined() && xs.ndim() >= 1, "fx::scan: xs must have an axis to scan over, it has ",
           "shape ", xs.defined() ? xs.shape() : Shape{});
  C carry = init;
  std::vector<Tensor> ys;
  ys.reserve(size_t(xs.size(0)));
  for (int64_t i = 0; i < xs.size(0); ++i) {
    auto [next, y] = f(std::as_const(carry), select(xs, 0, i));
    carry = std::move(next);
    ys.push_back(std::move(y));
  }
  return {std::move(carry), ys.empty() ? Tensor() : stack(ys, 0)};
}

}  // namespace fx
