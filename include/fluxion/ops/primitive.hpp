// The primitive table: every differentiable operation is one `Primitive` value holding its
// forward (shape rule + kernel dispatch, or a view), what its pullback needs saved, and the
// pullback itself, written with fluxion's public ops so that it is differentiable again.
//
//   // y = tanh(x); dx = dy * (1 - y^2). Reads only y, so the tape keeps y and drops x. Static: a
//   // tape refers to its primitives. (The built-in tanh_p is this; its kernels, which
//   // elementwise_forward dispatches to, come from each backend's fx::register_kernel calls.)
//   static fx::Primitive tanh_p = {
//       .name = "tanh", .forward = fx::elementwise_forward, .saves = fx::saves::output,
//       .pullback = [](const fx::PullbackArgs& a, const fx::Tensor& dy, fx::Tensor* dx) {
//         dx[0] = dy * (1 - a.output() * a.output()); },
//       .jvp = [](const fx::JvpArgs& a, const fx::Tensor* dx) {
//         return dx[0] * (1 - a.output() * a.output()); }};
//   auto my_tanh = [](const fx::Tensor& x) { return fx::bind(tanh_p, {x}); };
//
// `bind` runs the forward and, when a differentiation is recording and an input is tracked, adds
// one node to the tape; under fx::trace or fx::vmap their interpreter takes the application. Transformations never look at which primitive they run: they only call
// the entry's fields. User-defined rules are made the same way (see fluxion/ad/custom.hpp).
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <span>

#include "fluxion/core/tensor.hpp"
#include "fluxion/ops/attrs.hpp"

namespace fx {

class PullbackArgs;
class JvpArgs;
using ForwardFn = Tensor (*)(const struct Primitive& p, std::span<const Tensor> in, Attrs attrs);
// Writes the cotangent of input i into dx[i] for each i with args.wants(i); leaving dx[i]
// undefined means a zero cotangent.
using PullbackFn = void (*)(const PullbackArgs& args, const Tensor& dy, Tensor* dx);

// Returns the output's tangent given the inputs' tangents dx (undefined = zero); written in public
// ops so forward mode nests with reverse mode (Hessian-vector products).
using JvpFn = Tensor (*)(const JvpArgs& args, const Tensor* dx);

// What a batching rule (fx::vmap) reads: the inputs as they are stored, each either batched
// (the batch is its axis 0, of length `size`, before the logical axes) or shared by the whole
// batch (its logical value), and the attributes of the unbatched application.
struct BatchArgs {
  std::span<const Tensor> in;
  uint64_t batched;  // bit i: in[i] carries the batch on axis 0
  int64_t size;
  Attrs attrs;
  bool is_batched(size_t i) const { return i < 64 && ((batched >> i) & 1u); }
};
// Applies the primitive to a whole batch at once, with public ops or bind on the stored values;
// returns the output with the batch on axis 0. Null: fx::vmap applies the primitive example by
// example and stacks the results (always right, slower).
using BatchFn = Tensor (*)(const struct Primitive& p, const BatchArgs& args);

// Arguments of one kernel call: inputs and the already allocated output; for a primitive with
// several outputs, `outputs` holds them all (`out` is the first).
struct KernelCall {
  const struct Primitive& prim;
  std::span<const Tensor> in;
  const Tensor& out;
  Attrs attrs;
  std::span<const Tensor> outputs = {};
};
// Returns false to decline (the next backend on the device's list is tried).
using KernelFn = bool (*)(const KernelCall& call);

// A primitive with several outputs (num_outputs > 1: a factorisation's factors, a value and the
// residual its rule reads) fills these in place of forward, pullback, jvp and batch. Outputs,
// their cotangents and their tangents are arrays of num_outputs tensors; an undefined cotangent
// or tangent is a zero. An output that is not floating (indices, a workspace) is never tracked:
// it is a residual, read by the rules through PullbackArgs::output(k).
using ForwardNFn = void (*)(const struct Primitive& p, std::span<const Tensor> in, Attrs attrs,
                            Tensor* out);
using PullbackNFn = void (*)(const PullbackArgs& args, const Tensor* dy, Tensor* dx);
using JvpNFn = void (*)(const JvpArgs& args, const Tensor* dx, Tensor* dy);
using BatchNFn = void (*)(const struct Primitive& p, const BatchArgs& args, Tensor* out);
inline constexpr int kMaxOutputs = 8;

inline constexpr int kMaxBackends = 3;
inline constexpr int kNumDevices = kNumDeviceKinds;  // kernel tables are per device kind

namespace saves {
inline constexpr uint32_t nothing = 0;
inline constexpr uint32_t output = 1u << 31;
constexpr uint32_t input(int i) { return 1u << i; }
inline constexpr uint32_t inputs = 0xffu;  // every input (up to 8)
}  // namespace saves

struct Primitive {
  const char* name = "?";
  ForwardFn forward = nullptr;
  uint32_t saves = saves::nothing;
  PullbackFn pullback = nullptr;  // null: not differentiable (outputs are never tracked)
  JvpFn jvp = nullptr;            // forward mode; null makes fx::jvp through it an fx::Error
  BatchFn batch = nullptr;        // fx::vmap; null: example by example
  // Several outputs: bind_n applies the primitive, and the _n rules replace the ones above
  // (saves::output then saves every output).
  int num_outputs = 1;
  ForwardNFn forward_n = nullptr;
  PullbackNFn pullback_n = nullptr;
  JvpNFn jvp_n = nullptr;
  BatchNFn batch_n = nullptr;
  bool differentiable() const { return pullback != nullptr || pullback_n != nullptr; }
  // Kernels per device, in the order backends are tried; filled by backend registration.
  KernelFn kernels[kNumDevices][kMaxBackends] = {};  // by DeviceKind
};

// What a pullback may read: the saved tensors, the attributes, and which inputs need cotangents.
class PullbackArgs {
 public:
  PullbackArgs(const Primitive& p, const Tensor* saved, const Tensor& out, Attrs attrs,
               uint64_t wants_mask)
      : prim_(p), saved_(saved), out_(&out), attrs_(attrs), wants_(wants_mask) {}
  const Tensor& input(int i) const;  // throws if the primitive does not save input i
  // Output k (several outputs are saved side by side); throws if the primitive does not save
  // its outputs.
  const Tensor& output(int k = 0) const;
  template <class A>
  const A& attrs() const {
    return attrs_.get<A>();
  }
  Attrs attrs() const { return attrs_; }
  // The entry being differentiated: rules made at run time (fx::custom_rule) embed Primitive in
  // a larger object and find their closures through it.
  const Primitive& primitive() const { return prim_; }
  bool wants(int i) const { return i >= 64 || ((wants_ >> i) & 1u); }
  // The cotangent of input i summed so far, when a pullback may add into it in place instead of
  // returning dx[i] (then left undefined): only in a first-order backward pass (nothing
  // records), and only when the tape holds the one handle on a dense buffer of its own, of the
  // input's shape and dtype. Null otherwise; using it is optional. Slice's pullback adds dy into
  // the slice of the running sum rather than padding dy to the whole input and adding that.
  Tensor* accumulator(int i) const;
  void set_accumulators(Tensor* grads, const uint32_t* slots) {
    grads_ = grads;
    slots_ = slots;
  }
  // Saved input i when the pullback may write its result over it: only in a backward pass that
  // runs once (Recording::backward_once) and records nothing, and only when the tape holds the
  // one handle on a dense buffer of its own (nothing else can read the value again). Null
  // otherwise; using it is optional. sum_squares' pullback writes dy * 2x over x this way.
  Tensor* reusable_input(int i) const;
  void set_reusable(Tensor* saved) { reusable_ = saved; }

 private:
  const Primitive& prim_;
  const Tensor* saved_;
  const Tensor* out_;  // num_outputs tensors
  Attrs attrs_;
  uint64_t wants_;
  Tensor* grads_ = nullptr;          // the tape's cotangents, by slot
  const uint32_t* slots_ = nullptr;  // the slot of each input
  Tensor* reusable_ = nullptr;       // saved_, writable: set by a sweep that runs once
};

// What a pushforward may read: every input, the outputs and the attributes.
class JvpArgs {
 public:
  JvpArgs(const Primitive& p, std::span<const Tensor> in, const Tensor& out, Attrs attrs)
      : prim_(p), in_(in), out_(&out), attrs_(attrs) {}
  const Tensor& input(int i) const { return in_[size_t(i)]; }
  size_t num_inputs() const { return in_.size(); }
  // Output k: several outputs lie side by side, from `out` given to the constructor.
  const Tensor& output(int k = 0) const { return out_[k]; }
  template <class A>
  const A& attrs() const {
    return attrs_.get<A>();
  }
  Attrs attrs() const { return attrs_; }
  const Primitive& primitive() const { return prim_; }

 private:
  const Primitive& prim_;
  std::span<const Tensor> in_;
  const Tensor* out_;
  Attrs attrs_;
};

// The pushforward of a primitive linear in its floating inputs (views, sums, indexing with fixed
// indices, where with a fixed condition): the primitive itself applied to the tangents.
Tensor linear_jvp(const JvpArgs& args, const Tensor* dx);

namespace detail {
// An interpreter that takes over bind: the tapes of reverse and forward mode (ad/tape.hpp),
// fx::vmap and fx::trace. They stack, the innermost on top; evaluation is what lies under the
// last one. process() handles an application, usually by binding it (or the primitive's rule)
// again with the stack cut below itself (CutInterpreters), so that it reaches the interpreters
// under it and finally evaluation, and then doing its own part with the result: a tape records
// the application, a batching level wraps the batched result.
class Interpreter {
 public:
  explicit Interpreter(bool is_tape = false) : is_tape(is_tape) {}
  virtual ~Interpreter() = default;
  virtual Tensor process(const Primitive& p, std::span<const Tensor> in, Attrs attrs) = 0;
  // The same for a primitive with several outputs, written to out[0 .. p.num_outputs).
  virtual void process_n(const Primitive& p, std::span<const Tensor> in, Attrs attrs,
                         Tensor* out) = 0;
  const bool is_tape;
  Interpreter* below = nullptr;
  int tapes = 0;   // tapes at or below this entry: how many differentiations watch
  int others = 0;  // interpreters that are not tapes at or below it
};
extern thread_local constinit Interpreter* top_interpreter;
// Puts `it` on top of this thread's stack; pop checks that it is the top (RAII nesting), naming
// `what` in the error otherwise.
void push_interpreter(Interpreter* it);
void pop_interpreter(Interpreter* it, const char* what);
// The number of tapes recording what bind applies now (those under a cut do not count).
inline int active_tape_count() { return top_interpreter ? top_interpreter->tapes : 0; }
// True while vmap or trace takes over bind: values may be handles without data, so ops must not
// touch the data of their inputs.
inline bool intercepted() { return top_interpreter && top_interpreter->others != 0; }
// While alive, bind goes to the interpreters under `it` (or evaluates, under the last one).
class CutInterpreters {
 public:
  explicit CutInterpreters(const Interpreter* it) : saved_top_(top_interpreter) {
    top_interpreter = it->below;
  }
  ~CutInterpreters() { top_interpreter = saved_top_; }
  CutInterpreters(const CutInterpreters&) = delete;
  CutInterpreters& operator=(const CutInterpreters&) = delete;

 private:
  Interpreter* saved_top_;
};
// While alive, nothing takes over bind and nothing is traced: ops evaluate (a trace copying a
// captured tensor, abstract evaluation running a shape rule).
class PauseInterpreters {
 public:
  PauseInterpreters() : saved_top_(top_interpreter), saved_tracing_(tracing_depth) {
    top_interpreter = nullptr;
    tracing_depth = 0;
  }
  ~PauseInterpreters() {
    top_interpreter = saved_top_;
    tracing_depth = saved_tracing_;
  }
  PauseInterpreters(const PauseInterpreters&) = delete;
  PauseInterpreters& operator=(const PauseInterpreters&) = delete;

 private:
  Interpreter* saved_top_;
  int saved_tracing_;
};
// The tapes in the stack under `from` (exclusive) record an application whose outputs an
// interpreter computed without binding below itself (fx::trace's meta forward).
void record_below(const Interpreter* from, const Primitive& p, std::span<const Tensor> in,
                  Tensor* out, int nout, Attrs attrs);
// True inside fx::detect_anomaly (fluxion/ad/anomaly.hpp) on this thread. constinit: read
// directly, without the call to a thread-local initialiser an extern thread_local may need.
extern thread_local constinit bool anomaly_checks;
// Under fx::trace, names t (a meta tensor fx::full just made) as the constant full(value).
void trace_fill(const Tensor& t, double value);
// Under fx::trace, makes `alias` (a new handle on the same data) the same graph value as `of`.
void trace_alias(const Tensor& of, const Tensor& alias);
// True when ops must compose through bind (a tape records, or vmap or trace takes over): the
// first-order shortcuts that call kernels directly or write in place are then off.
inline bool must_compose() { return top_interpreter != nullptr; }
// Throws fx::Error naming p, its inputs and its output when out holds a NaN or an infinity.
void check_forward_anomaly(const Primitive& p, std::span<const Tensor> in, const Tensor& out);
// The same for the cotangent dy of p's output before its pullback runs (the seed, or a sum of
// cotangents that overflowed), and for the cotangents dx[0..nin) the pullback gave.
void check_cotangent_anomaly(const Primitive& p, const Tensor& dy);
void check_pullback_anomaly(const Primitive& p, const Tensor* dx, size_t nin);
}  // namespace detail

// A new handle on x's storage with the given layout and no AD tags (views are built from it).
Tensor make_view(const Tensor& x, const Shape& shape, const int64_t* strides, int64_t offset);
// x's data and layout under a new handle with no AD tags (stop_gradient, detach); under fx::trace
// it is the same graph value as x.
Tensor untagged_view(const Tensor& x);

// Applies a primitive: the top interpreter takes it over, or with none it is evaluated. Anomaly
// mode costs one predictable branch here when it is off.
inline Tensor bind(const Primitive& p, std::span<const Tensor> in, Attrs attrs = {}) {
  if (detail::top_interpreter) return detail::top_interpreter->process(p, in, attrs);
  Tensor out = p.forward(p, in, attrs);
  if (detail::anomaly_checks) [[unlikely]]
    detail::check_forward_anomaly(p, in, out);
  return out;
}
namespace detail {
// One argument of `bind(p, {a, b})`: refers to the caller's tensor (a temporary lives until the
// end of the call's full expression) instead of copying its handle.
class TensorRef {
 public:
  TensorRef(const Tensor& t) : p_(t.impl()) {}  // NOLINT: implicit, so `{a, b}` reads naturally
  TensorImpl* impl() const { return p_; }

 private:
  TensorImpl* p_;
};

// Handles that share the caller's references without owning one: copying a handle is an atomic
// increment and later decrement, and those were the largest single cost of a small op. Every
// consumer of the span (forwards, kernels, the tape) copies what it keeps, so no reference
// escapes the call. The destructor deliberately never releases.
struct BorrowedTensors {
  static constexpr size_t kMax = 8;
  union {
    Tensor t[kMax];
  };
  size_t n;
  explicit BorrowedTensors(std::initializer_list<TensorRef> in) : n(in.size()) {
    for (size_t i = 0; i < n; ++i) new (&t[i]) Tensor(in.begin()[i].impl());
  }
  BorrowedTensors(const BorrowedTensors&) = delete;
  BorrowedTensors& operator=(const BorrowedTensors&) = delete;
  ~BorrowedTensors() {}
  std::span<const Tensor> span() const { return {t, n}; }
};
Tensor bind_owned(const Primitive& p, std::initializer_list<TensorRef> in, Attrs attrs);
// bind for a primitive with several outputs (fx::bind_n): out[0 .. p.num_outputs).
void bind_n(const Primitive& p, std::span<const Tensor> in, Attrs attrs, Tensor* out);
void bind_n_list(const Primitive& p, std::initializer_list<TensorRef> in, Attrs attrs, Tensor* out);
}  // namespace detail

inline Tensor bind(const Primitive& p, std::initializer_list<detail::TensorRef> in,
                   Attrs attrs = {}) {
  if (in.size() > detail::BorrowedTensors::kMax) return detail::bind_owned(p, in, attrs);
  detail::BorrowedTensors b(in);
  return bind(p, b.span(), attrs);
}

// Applies a primitive with N outputs (N == p.num_outputs, else an fx::Error):
//   auto [u, s, v] = fx::bind_n<3>(fx::linalg::svd_p, {a}, attrs);
template <int N>
std::array<Tensor, N> bind_n(const Primitive& p, std::span<const Tensor> in, Attrs attrs = {}) {
  FX_CHECK(p.num_outputs == N, "fx::bind_n: '", p.name, "' has ", p.num_outputs, " outputs, not ",
           N);
  std::array<Tensor, N> out;
  detail::bind_n(p, in, attrs, out.data());
  return out;
}
template <int N>
std::array<Tensor, N> bind_n(const Primitive& p, std::initializer_list<detail::TensorRef> in,
                             Attrs attrs = {}) {
  FX_CHECK(p.num_outputs == N, "fx::bind_n: '", p.name, "' has ", p.num_outputs, " outputs, not ",
           N);
  std::array<Tensor, N> out;
  detail::bind_n_list(p, in, attrs, out.data());
  return out;
}

// Abstract evaluation: the type of each of p's outputs for inputs of in's types, from the
// primitive's shape rule alone. No kernel runs, no data is made, and no tape, vmap or trace sees
// the application; a bad input gives the error evaluation would. What a compiler asks of an
// equation: for x (8, 3) and w (3, 4), abstract_eval(matmul_p, {x, w}) is {f32 (8, 4), cpu}.
struct AbstractValue {
  Shape shape;
  DType dtype;
  Device device;
};
std::vector<AbstractValue> abstract_eval(const Primitive& p, std::span<const Tensor> in,
                                         Attrs attrs = {});
inline std::vector<AbstractValue> abstract_eval(const Primitive& p,
                                                std::initializer_list<Tensor> in,
                                                Attrs attrs = {}) {
  return abstract_eval(p, std::span<const Tensor>(in.begin(), in.size()), attrs);
}

// Runs the first backend kernel of the output's device that accepts the call.
void dispatch(const KernelCall& call);

// Where a forward puts its output: on the first input's device, or on the meta device when any
// input is a meta tensor (host constants mixed into a shape computation stay fine).
inline Device output_device(std::span<const Tensor> in) {
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].defined() && in[i].device().kind == DeviceKind::meta) return Device::meta;
  return in[0].device();
}

// Common forwards: allocate the output with the given rule, then dispatch.
// elementwise_forward: output shaped and typed like input 0; compare_forward: bool output.
Tensor elementwise_forward(const Primitive& p, std::span<const Tensor> in, Attrs attrs);
Tensor compare_forward(const Primitive& p, std::span<const Tensor> in, Attrs attrs);

// Backend registration: a backend fills its kernels for one device (see src/backend/*).
void register_kernel(Primitive& p, Device device, int backend_rank, KernelFn fn);

}  // namespace fx
