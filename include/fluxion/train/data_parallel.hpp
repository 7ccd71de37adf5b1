// Data-parallel gradients on one machine: the batch is split along its first axis across the
// OpenMP threads, each thread differentiates its share on a tape of its own, and the shares'
// losses and gradients are combined, weighted by their sizes.
//
//   auto loss_fn = [](const auto& m, const fx::Tensor& x, const fx::Tensor& y) {
//     return fx::logitcrossentropy(m(x), y);           // a mean over the batch
//   };
//   auto [loss, grad] = fx::train::data_parallel_withgradient(loss_fn, model, x, y);
//   fx::optim::update(opt, model, grad);
//
// The loss must be a mean over the samples of its batch (Flux's losses are, by default): then
// the weighted combination is exactly withgradient on the whole batch, up to rounding. Every
// batch argument is split at the same rows; the model (and any state it holds) is shared,
// read-only. With one thread, or inside an OpenMP parallel region, it is plain withgradient.
//
// Why: intra-op threading forks and joins a team for every large op and runs the small ops and
// the per-op bookkeeping on one thread; a 2-thread MLP step scaled 1.5x that way. Here each
// thread runs a whole forward and backward pass with nothing to wait for until the combine
// (the same split as multi-device data parallelism). Ops inside a share run single-threaded.
#pragma once
#include <algorithm>
#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/ad/reverse.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::train {

namespace detail {
// How many shares a batch of n rows is split into: the OpenMP team size, at most n, and 1
// inside a parallel region.
int data_parallel_shares(int64_t n);
// Runs body(share) for share = 0 .. shares-1, one per OpenMP thread; after all have finished,
// sets every out[i] = sum_s weights[s] * leaves[s][i] (leaves[s][i] of one shape and dtype; a
// leaf that is an allocation-free zero in every share stays one), the sum split across the
// same threads; then each thread clears leaves[share] and calls release(share). The first
// exception a share throws is rethrown after the others finish.
void run_shares(int shares, const std::function<void(int)>& body,
                std::vector<std::vector<Tensor>>& leaves, const std::vector<double>& weights,
                std::vector<Tensor>& out, const std::function<void(int)>& release);
void check_batch_rows(int64_t n, const Tensor& t);
}  // namespace detail

template <class F, class Model, class... Batch>
auto data_parallel_withgradient(F&& f, const Model& model, const Batch&... batch) {
  static_assert(sizeof...(Batch) >= 1, "fx::train::data_parallel_withgradient: pass the batch");
  const Tensor& first = std::get<0>(std::tie(batch...));
  FX_CHECK(first.defined() && first.ndim() >= 1,
           "fx::train::data_parallel_withgradient: the batch needs a first axis to split");
  const int64_t n = first.shape()[0];
  (detail::check_batch_rows(n, batch), ...);
  auto whole = [&](const Model& m) { return f(m, batch...); };
  using Result = decltype(withgradient(whole, model));
  static_assert(std::is_same_v<decltype(std::declval<Result>().val), Tensor>,
                "fx::train::data_parallel_withgradient: the loss must return one tensor");
  const int shares = detail::data_parallel_shares(n);
  if (shares <= 1) return withgradient(whole, model);

  const size_t ns = size_t(shares);
  std::vector<std::optional<Result>> parts(ns);
  std::vector<std::vector<Tensor>> leaves(ns);
  std::vector<double> weights(ns), losses(ns);
  std::vector<Tensor> combined;
  auto body = [&](int s) {
    const int64_t lo = n * s / shares, hi = n * (s + 1) / shares;
    weights[size_t(s)] = double(hi - lo) / double(n);
    auto share = [&](const Model& m) { return f(m, fx::slice(batch, 0, lo, hi)...); };
    parts[size_t(s)].emplace(withgradient(share, model));
    for_each_tensor(parts[size_t(s)]->grad, [&](Tensor& t) { leaves[size_t(s)].push_back(t); });
  };
  auto release = [&](int s) {  // runs on share s's thread: its tensors go back to its cache
    if (parts[size_t(s)]) losses[size_t(s)] = parts[size_t(s)]->val.item();
    if (s != 0) parts[size_t(s)].reset();
  };
  detail::run_shares(shares, body, leaves, weights, combined, release);

  Result r = std::move(*parts[0]);
  double loss = 0;
  for (int s = 0; s < shares; ++s) loss += weights[size_t(s)] * losses[size_t(s)];
  r.val = fx::full_like(r.val, loss);
  size_t i = 0;
  for_each_tensor(r.grad, [&](Tensor& t) { t = std::move(combined[i++]); });
  return r;
}

}  // namespace fx::train
