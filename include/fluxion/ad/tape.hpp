// The tape behind reverse mode. Users call fx::pullback / fx::gradient (reverse.hpp); this
// header is what those templates build on.
//
//   fx::Tensor x0 = fx::randn({4});
//   auto rec = fx::ad::Recording::begin();      // a new tape on this thread's stack
//   fx::Tensor x = rec.track(x0);               // a tracked alias of x0 (shares storage)
//   fx::Tensor y = fx::sum(fx::tanh(x));        // each primitive adds one node
//   rec.end();
//   auto grads = rec.backward(y, fx::ones_like(y));   // grads[0] is dy/dx (undefined = zero)
//
// Nodes live in vectors owned by the tape, in program order, so the backward pass is a reverse
// scan with no graph sort. Each nesting level has its own tape; a value carries one tag per tape
// that tracks it, so nested differentiation never confuses perturbations. The backward pass runs
// pullbacks written in public ops: when an outer tape is still recording, they are recorded on
// it, which is what makes gradient-of-gradient work.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "fluxion/ops/primitive.hpp"

namespace fx::ad {

class Tape;

// Counts of what taping did on this thread (an op counter for overhead studies).
struct TapeStats {
  uint64_t nodes_recorded = 0;
  uint64_t pullbacks_run = 0;
};
TapeStats tape_stats();
void reset_tape_stats();

class Recording {
 public:
  // reverse: nodes are recorded for backward(); forward: each value's tangent is computed as it
  // is made (fx::jvp), from the tangents given to track().
  enum class Mode { reverse, forward };
  static Recording begin(Mode mode = Mode::reverse);
  Recording(Recording&&) noexcept;
  Recording& operator=(Recording&&) = delete;
  ~Recording();  // ends recording if end() was not called (e.g. on an exception)

  // A tracked alias of x: shares storage, keeps x's outer tags, adds this tape's.
  // Undefined and non-floating tensors are returned as they are (still counted as leaves, so
  // backward() results stay aligned with the order of track calls).
  Tensor track(const Tensor& x, const Tensor& tangent = Tensor());
  // Forward mode: the tangent of y (undefined when y does not depend on the tracked leaves).
  Tensor tangent(const Tensor& y) const;
  void end();
  // Cotangents of the tracked leaves, in the order they were tracked, given y's cotangent dy.
  // An undefined entry means "no dependence" (a zero).
  std::vector<Tensor> backward(const Tensor& y, const Tensor& dy) const;
  // The same sweep, for a recording that is swept only once (fx::gradient, fx::withgradient):
  // each node's saved tensors are dropped as soon as its pullback has run, so memory falls as
  // the sweep proceeds and freed buffers are reused while still in cache, and a pullback may
  // write its result over a saved input the tape alone holds (PullbackArgs::reusable_input).
  // Sweeping the recording again afterwards is an fx::Error.
  std::vector<Tensor> backward_once(const Tensor& y, const Tensor& dy);
  uint32_t num_leaves() const { return nleaves_; }
  size_t num_nodes() const;
  std::shared_ptr<Tape> tape() const { return tape_; }

 private:
  std::vector<Tensor> sweep(const Tensor& y, const Tensor& dy, bool once) const;
  explicit Recording(std::shared_ptr<Tape> t) : tape_(std::move(t)) {}
  std::shared_ptr<Tape> tape_;
  uint32_t nleaves_ = 0;
  bool active_ = true;
};

// For rules made at run time (fx::custom_rule, fx::checkpointed, fx::hook: ad/custom.hpp).
// The tapes recording on this thread, outermost first: the tag (Tag::tape) a value they track
// carries, and whether the tape runs forward mode.
struct ActiveTape {
  uint32_t tag = 0;
  bool forward = false;
};
int num_active_tapes();
ActiveTape active_tape(int level);
// Keeps `owner` alive as long as every reverse tape that tracks `out`: their nodes point at a
// Primitive inside it.
void keep_alive(const Tensor& out, std::shared_ptr<const void> owner);

}  // namespace fx::ad
