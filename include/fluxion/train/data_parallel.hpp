// Data-parallel gradients on one machine: the batch is split along its first axis across the
// OpenMP threads, each thread differentiates its share on a tape of its own, and the shares'
// losses and gradients are combined, weighted by their sizes.
//
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 32, fx::relu), fx::nn::Dense(32, 10));
//   fx::Tensor x = fx::randn({256, 784}), y = fx::zeros({256}, fx::i64);
//   auto opt = fx::optim::setup(fx::optim::Adam{}, model);
//   auto loss_fn = [](const auto& m, const fx::Tensor& x, const fx::Tensor& y) {
//     return fx::logitcrossentropy(m(x), y);           // a mean over the batch
//   };
//   auto [loss, grad] = fx::train::data_parallel_withgradient(loss_fn, model, x, y);
//   fx::optim::update(opt, model, grad);
//
//   fx::train::DataParallel dp;                        // shares sized by each thread's speed
//   for (auto [x, y] : loader) {
//     auto [loss, grad] = dp.withgradient(loss_fn, model, x, y);
//     fx::optim::update(opt, model, grad);
//   }
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
//
// data_parallel_withgradient splits evenly, so a run is reproducible to the bit. A step still
// waits for its slowest share, and on a shared machine one core is often slower than the other
// for seconds at a time (on the 2-core benchmark machine, one thread's share of the MLP step
// took 1.1-1.4x as long as the other's, averaged over 1000 steps). DataParallel remembers how
// long each thread took per row and gives the faster threads more rows; the split, and so the
// rounding of the sums, then varies from run to run. In five alternating pairs of 1500-step
// runs there, its gradient steps took 1196-1300 us (median 1289) against 998-1597 us (median
// 1444) for the even split: faster whenever it had moved to 48:80 or 80:48, slower in the two
// pairs where the even split was fastest.
#pragma once
#include <algorithm>
#include <chrono>
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
// leaf that is an allocation-free zero in every share stays one; out[i] is leaves[0][i] itself,
// written over, when that is the only handle on a dense buffer), the sum split across the
// same threads; then each thread clears leaves[share] and calls release(share). The first
// exception a share throws is rethrown after the others finish.
void run_shares(int shares, const std::function<void(int)>& body,
                std::vector<std::vector<Tensor>>& leaves, const std::vector<double>& weights,
                std::vector<Tensor>& out, const std::function<void(int)>& release);
void check_batch_rows(const char* op, int64_t n, const Tensor& t);
// n rows in `shares` equal shares (sizes differ by at most one): shares + 1 bounds.
std::vector<int64_t> even_bounds(int64_t n, int shares);

// Rows of the batch, after checking that every argument has them along its first axis.
template <class... Batch>
int64_t batch_rows(const char* op, const Batch&... batch) {
  static_assert(sizeof...(Batch) >= 1, "fx::train: pass the batch to split");
  const Tensor& first = std::get<0>(std::tie(batch...));
  FX_CHECK(first.defined() && first.ndim() >= 1, op, ": the batch needs a first axis to split");
  const int64_t n = first.shape()[0];
  (check_batch_rows(op, n, batch), ...);
  return n;
}

// withgradient of f over the shares bounds[s] .. bounds[s + 1] of the batch's rows, one per
// OpenMP thread (bounds.size() - 1 >= 2 shares), combined by size. seconds, when given, gets
// how long each share's forward and backward pass took.
template <class F, class Model, class... Batch>
auto split_withgradient(const std::vector<int64_t>& bounds, std::vector<double>* seconds, F& f,
                        const Model& model, const Batch&... batch) {
  auto whole = [&](const Model& m) { return f(m, batch...); };
  using Result = decltype(withgradient(whole, model));
  static_assert(std::is_same_v<decltype(std::declval<Result>().val), Tensor>,
                "fx::train: the loss must return one tensor");
  const int shares = int(bounds.size()) - 1;
  const int64_t n = bounds.back();
  const size_t ns = size_t(shares);
  std::vector<std::optional<Result>> parts(ns);
  std::vector<std::vector<Tensor>> leaves(ns);
  std::vector<double> weights(ns), losses(ns);
  if (seconds) seconds->assign(ns, 0.0);
  std::vector<Tensor> combined;
  auto body = [&](int s) {
    const auto start = std::chrono::steady_clock::now();
    const int64_t lo = bounds[size_t(s)], hi = bounds[size_t(s) + 1];
    weights[size_t(s)] = double(hi - lo) / double(n);
    auto share = [&](const Model& m) { return f(m, fx::slice(batch, 0, lo, hi)...); };
    parts[size_t(s)].emplace(withgradient(share, model));
    // Moved, not copied: a leaf that is then its buffer's only handle can take the sum in place.
    for_each_tensor(parts[size_t(s)]->grad,
                    [&](Tensor& t) { leaves[size_t(s)].push_back(std::move(t)); });
    if (seconds)
      (*seconds)[size_t(s)] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto release = [&](int s) {  // runs on share s's thread: its tensors go back to its cache
    if (parts[size_t(s)]) losses[size_t(s)] = parts[size_t(s)]->val.item();
    if (s != 0) parts[size_t(s)].reset();
  };
  run_shares(shares, body, leaves, weights, combined, release);

  Result r = std::move(*parts[0]);
  double loss = 0;
  for (int s = 0; s < shares; ++s) loss += weights[size_t(s)] * losses[size_t(s)];
  r.val = fx::full_like(r.val, loss);
  size_t i = 0;
  for_each_tensor(r.grad, [&](Tensor& t) { t = std::move(combined[i++]); });
  return r;
}

}  // namespace detail

template <class F, class Model, class... Batch>
auto data_parallel_withgradient(F&& f, const Model& model, const Batch&... batch) {
  const int64_t n = detail::batch_rows("fx::train::data_parallel_withgradient", batch...);
  const int shares = detail::data_parallel_shares(n);
  if (shares <= 1) return withgradient([&](const Model& m) { return f(m, batch...); }, model);
  return detail::split_withgradient(detail::even_bounds(n, shares), nullptr, f, model, batch...);
}

// Data parallelism whose shares follow the threads' speeds (see the top of this file). Keep one
// per training loop: it learns from every step it runs.
class DataParallel {
 public:
  template <class F, class Model, class... Batch>
  auto withgradient(F&& f, const Model& model, const Batch&... batch) {
    const int64_t n = detail::batch_rows("fx::train::DataParallel::withgradient", batch...);
    const int shares = detail::data_parallel_shares(n);
    if (shares <= 1) return fx::withgradient([&](const Model& m) { return f(m, batch...); }, model);
    const std::vector<int64_t> b = bounds(n, shares);
    std::vector<double> seconds;
    auto r = detail::split_withgradient(b, &seconds, f, model, batch...);
    observe(b, seconds);
    return r;
  }

  // Where the next step of n rows in `shares` shares splits: share s is rows b[s] .. b[s + 1].
  // Even until each thread has been timed (and for batches under 16 rows a share), then in
  // proportion to each thread's rows per second, rounded to multiples of 8 rows; every share
  // keeps at least one row.
  std::vector<int64_t> bounds(int64_t n, int shares) const;
  // Folds one step's timings into each thread's running seconds per row (share s ran on thread
  // s): a moving average over about the last 4 steps, so the split follows a core that slows
  // down or recovers within a few steps without chasing every noisy one. bounds must have one
  // entry more than seconds (an fx::Error otherwise).
  void observe(const std::vector<int64_t>& bounds, const std::vector<double>& seconds);

 private:
  std::vector<double> seconds_per_row_;  // by thread; 0 where not yet timed
};

}  // namespace fx::train
