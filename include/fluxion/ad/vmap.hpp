// Batching: fx::vmap(f) is f applied to every slice of its arguments along an axis, computed as
// one batched program rather than a loop.
//
//   auto f = [](const fx::Tensor& x, const fx::Tensor& w) { return fx::sum(fx::tanh(x * w)); };
//   fx::Tensor xs = fx::randn({8, 3}), w = fx::randn({3});
//   fx::Tensor ys = fx::vmap(f, {0, fx::unmapped})(xs, w);  // (8,): ys[i] = f(xs[i], w)
//   // Per-example gradients: the gradient with respect to w for each row of xs, in one pass.
//   auto grad_w = [&](const fx::Tensor& x) {
//     return fx::gradient([&](const fx::Tensor& v) { return f(x, v); }, w); };
//   fx::Tensor gs = fx::vmap(grad_w)(xs);                   // (8, 3)
//   fx::Tensor zs = fx::vmap(f, {1, fx::unmapped}, {0})(xs.t(), w);  // map axis 1 of the first
//
// Arguments and results may be tensors or any struct the traversal knows (FX_FIELDS, vectors,
// tuples, ...): `in_axes` gives one axis (or fx::unmapped, for an argument the whole batch
// shares) per argument, applied to each of its tensor leaves, and `out_axes` one axis per
// result leaf (one entry: for all). Empty lists mean axis 0 everywhere. Inside f a batched
// tensor has its per-example shape; every op on it is applied to the whole batch by the op's
// batching rule (a primitive without one runs example by example). vmap composes with itself
// and with gradient, jvp and jacobian in any order. Value-dependent C++ control flow on a batched
// value (`item()`, an `if`) is an fx::Error: use fx::where. An in-place write into a batched
// value rebinds that handle; writing a batched value into a shared tensor is an fx::Error.
#pragma once
#include <cstdint>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/core/tensor.hpp"

namespace fx {

struct Unmapped {};
inline constexpr Unmapped unmapped{};

// Which axis of an argument vmap maps over, or none.
struct InAxis {
  constexpr InAxis(int axis) : axis(axis) {}  // NOLINT: implicit, so `{0, fx::unmapped}` reads
  constexpr InAxis(Unmapped) : mapped(false) {}
  int axis = 0;
  bool mapped = true;
};

namespace detail {
class BatchInterpreter;

// Whether x is batched by the fx::vmap on top of the interpreter stack (no tape or trace above
// it): bind hands x's next application straight to that vmap's batching rule.
bool batched_by_top_vmap(const Tensor& x);

// One vmap in progress: the arguments enter (their mapped axis moved to the front and the
// tensors wrapped as batched values), the interpreter is open while f runs, and the results
// leave (unwrapped, or expanded when the whole batch shares them, with the batch moved to its
// output axis).
class VmapScope {
 public:
  VmapScope();
  ~VmapScope();
  VmapScope(const VmapScope&) = delete;
  VmapScope& operator=(const VmapScope&) = delete;
  Tensor enter(const Tensor& x, int axis);
  void open();
  void close();
  Tensor leave(const Tensor& r, int axis) const;

 private:
  std::unique_ptr<BatchInterpreter> it_;
  bool open_ = false;
};
}  // namespace detail

template <class F>
auto vmap(F f, std::vector<InAxis> in_axes = {}, std::vector<int> out_axes = {}) {
  return [f = std::move(f), in_axes = std::move(in_axes),
          out_axes = std::move(out_axes)](const auto&... args) {
    constexpr size_t n = sizeof...(args);
    FX_CHECK(in_axes.empty() || in_axes.size() == n, "fx::vmap: ", in_axes.size(), " in_axes for ",
             n, " arguments");
    detail::VmapScope scope;
    size_t k = 0;
    auto enter = [&](const auto& arg) {
      const InAxis ax = in_axes.empty() ? InAxis(0) : in_axes[k];
      ++k;
      auto m = arg;
      if (ax.mapped)
        zip_tensors(
            [&](Tensor& t) {
              if (t.defined()) t = scope.enter(t, ax.axis);
            },
            m);
      return m;
    };
    std::tuple lifted{enter(args)...};  // braces: entered left to right
    scope.open();
    auto r = std::apply(f, lifted);
    scope.close();
    size_t j = 0;
    zip_tensors(
        [&](Tensor& t) {
          FX_CHECK(out_axes.size() <= 1 || j < out_axes.size(), "fx::vmap: ", out_axes.size(),
                   " out_axes for more tensor results");
          const int axis = out_axes.empty() ? 0 : out_axes[out_axes.size() == 1 ? 0 : j];
          ++j;
          if (t.defined()) t = scope.leave(t, axis);
        },
        r);
    FX_CHECK(out_axes.size() <= 1 || j == out_axes.size(), "fx::vmap: ", out_axes.size(),
             " out_axes for ", j, " tensor results");
    return r;
  };
}

}  // namespace fx
