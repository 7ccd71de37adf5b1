// The loop every optimisation rule runs: one fused pass over a parameter, its gradient and any
// per-parameter state tensors, writing the parameter in place.
//
//   // What a rule's apply runs (see fluxion/optim/update.hpp for the whole rule concept):
//   fx::Tensor param = fx::randn({256}), grad = fx::randn({256});
//   double lr = 0.01, rho = 0.9;
//   fx::optim::foreach_element("SignDescent", param, grad, [lr](auto& x, auto dx) {
//     x -= decltype(dx)(lr) * ((dx > 0) - (dx < 0));
//   });
//   fx::Tensor velocity = fx::zeros_like(param);            // Momentum's state for this parameter
//   fx::optim::foreach_element("Momentum", param, grad, [lr, rho](auto& x, auto dx, auto& v) {
//     v = decltype(dx)(rho) * v + decltype(dx)(lr) * dx;  x -= v;
//   }, velocity);
//
// fn(x, dx, s...) is called once per element with x and s... as references into the parameter
// and state tensors and dx by value, all of the parameter's type (float or double). It must
// touch only its own element: the loop runs vectorised, and across threads for large tensors.
// The gradient may be any view: a contiguous one is read in place, a broadcast scalar (the
// allocation-free zero a gradient holds where nothing flowed) is read through stride 0, anything
// else is copied once. State values left below the smallest normal number are stored as zero
// (see flush_subnormal). Parameters and state must be contiguous CPU tensors of the parameter's
// dtype; the parameter's storage version is bumped so a tape holding it notices the write.
// Inside fx::optim::update for a rule that declares loops_only, the loop is checked and queued
// here and runs when update has queued every leaf's (detail::LoopBatch).
#pragma once
#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>
#if defined(_OPENMP)
#include <omp.h>
#endif

#include "fluxion/core/tensor.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::optim {
namespace detail {

// ~40 us of Adam work on one core (it streams four arrays, ~1.2 ns per element): waking a warm
// team costs a microsecond or two. The threshold matches the CPU backend's, so every step of a
// model runs at one thread count; a higher one left the bulk of a small MLP's update (a 784x256
// weight) on one thread, the largest piece of a training step that did not scale.
inline constexpr int64_t kParallelMin = int64_t(1) << 15;

// State below the smallest normal number is stored as zero. Why: state that decays
// geometrically where the gradient is zero (Adam's moments shrink by beta1 = 0.9 a step, so
// within ~700 steps for a dead unit or an always-black pixel) otherwise sinks into the subnormal
// range, where x86 arithmetic takes a microcode assist per operation. Adam's update of the
// Fashion-MNIST MLP ran 2.5x slower from the second epoch on for that alone. Values that small
// have no effect on any update (Adam adds eps = 1e-8 to the denominator); XLA and TensorFlow
// flush subnormals in all CPU arithmetic for the same reason.
template <class T>
inline T flush_subnormal(T v) {
  return std::abs(v) < std::numeric_limits<T>::min() ? T(0) : v;
}

template <bool Broadcast, class T, class Fn, class... S>
void run_range(int64_t lo, int64_t hi, Fn& fn, T* x, const T* dx, S*... s) {
#if defined(_OPENMP)
#pragma omp simd
#endif
  for (int64_t i = lo; i < hi; ++i) {
    fn(x[i], Broadcast ? dx[0] : dx[i], s[i]...);
    ((s[i] = flush_subnormal(s[i])), ...);
  }
}

// A small leaf branches around the parallel region rather than giving it an if clause: libgomp
// starts and ends a team of one for a false if clause (a futex call, ~0.5 us per leaf).
template <bool Broadcast, class T, class Fn, class... S>
void run_elements(int64_t n, Fn& fn, T* x, const T* dx, S*... s) {
#if defined(_OPENMP)
  if (n >= kParallelMin && !omp_in_parallel()) {
#pragma omp parallel
    {
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      run_range<Broadcast>(n * t / nt, n * (t + 1) / nt, fn, x, dx, s...);
    }
    return;
  }
#endif
  run_range<Broadcast>(0, n, fn, x, dx, s...);
}

// The loops of one optimisation step, gathered while a LoopBatch is open on this thread and run
// together, in one parallel region, by run(). fx::optim::update opens one for a rule that
// declares `static constexpr bool loops_only = true` (its apply does nothing but
// foreach_element calls, so deferring them changes no result). A step of the Fashion-MNIST MLP
// had six Adam leaves: two regions, four small loops on the calling thread, and the gaps
// between them; batched, the small loops run beside the large ones' shares.
class LoopBatch {
 public:
  using Loop = std::function<void(int64_t lo, int64_t hi)>;
  LoopBatch();
  ~LoopBatch();  // closes it; loops not yet run are dropped (an exception left the step)
  LoopBatch(const LoopBatch&) = delete;
  LoopBatch& operator=(const LoopBatch&) = delete;
  // The batch open on this thread, or null.
  static LoopBatch* current();
  // A loop over n elements of the parameter at `param`: run(lo, hi) updates [lo, hi).
  void add(int64_t n, const void* param, Loop run);
  // Runs every loop gathered: those of kParallelMin elements or more split evenly across the
  // team (the split an immediate loop takes), each smaller one whole on the thread with the
  // fewest elements so far, a parameter's loops on one thread and in the order given.
  void run();

 private:
  struct Entry {
    int64_t n;
    const void* param;
    Loop run;
  };
  std::vector<Entry> loops_;
  LoopBatch* outer_;
};

inline bool is_broadcast_scalar(const Tensor& g) {
  for (int d = 0; d < g.ndim(); ++d)
    if (g.stride(d) != 0 && g.shape()[d] != 1) return false;
  return true;
}

inline void check_operand(const char* rule, const Tensor& param, const Tensor& t,
                          const char* what) {
  FX_CHECK(t.defined() && t.shape() == param.shape() && t.dtype() == param.dtype() &&
               t.device() == param.device() && t.is_contiguous(),
           "fx::optim::", rule, ": ", what, " ",
           t.defined() ? std::string(dtype_name(t.dtype())) + " " + t.shape().to_string()
                       : std::string("undefined"),
           " must be a contiguous tensor like the parameter ", dtype_name(param.dtype()), " ",
           param.shape());
}

}  // namespace detail

template <class Fn, std::same_as<Tensor>... S>
void foreach_element(const char* rule, const Tensor& param, const Tensor& grad, Fn&& fn,
                     const S&... state) {
  FX_CHECK(param.defined() && is_floating(param.dtype()), "fx::optim::", rule,
           ": parameters must be floating tensors, got ",
           param.defined() ? std::string(dtype_name(param.dtype())) : std::string("undefined"));
  FX_CHECK(param.device() == Device::cpu, "fx::optim::", rule, ": parameter ", param.shape(),
           " on ", device_name(param.device()), ": only CPU parameters are supported");
  // Writing through data<T>() is only right when the parameter's elements are dense.
  FX_CHECK(param.is_contiguous(), "fx::optim::", rule, ": parameter ", param.shape(),
           " is a strided view; parameters must be contiguous");
  FX_CHECK(grad.defined() && grad.shape() == param.shape(), "fx::optim::", rule, ": gradient ",
           grad.defined() ? grad.shape().to_string() : std::string("undefined"),
           " does not match parameter ", param.shape());
  (detail::check_operand(rule, param, state, "state"), ...);
  Tensor g = grad.dtype() == param.dtype() ? grad : astype(grad, param.dtype());
  const bool broadcast = detail::is_broadcast_scalar(g);
  if (!broadcast && !g.is_contiguous()) g = contiguous(g);
  const int64_t n = param.numel();
  if (n == 0) return;
  ++param.storage()->version;
  visit_floating(param.dtype(), rule, [&]<class T>() {
    T* x = param.data<T>();
    const T* dx = g.data<T>();
    if (detail::LoopBatch* batch = detail::LoopBatch::current()) {
      // The loop holds its tensors: g may be a converted or contiguous copy that nothing else
      // holds, and a state tensor may be a temporary of the rule's apply.
      batch->add(n, x, [fn, g, param, broadcast, ... s = state](int64_t lo, int64_t hi) mutable {
        T* p = param.data<T>();
        const T* d = g.data<T>();
        if (broadcast) detail::run_range<true>(lo, hi, fn, p, d, s.template data<T>()...);
        else detail::run_range<false>(lo, hi, fn, p, d, s.template data<T>()...);
      });
      return;
    }
    if (broadcast) detail::run_elements<true>(n, fn, x, dx, state.template data<T>()...);
    else detail::run_elements<false>(n, fn, x, dx, state.template data<T>()...);
  });
}

}  // namespace fx::optim
