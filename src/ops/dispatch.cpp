// Kernel dispatch and the shared forwards of elementwise primitives.
#include <string>

#include "backend/backends.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/primitives.hpp"

namespace fx {

void register_kernel(Primitive& p, Device device, int backend_rank, KernelFn fn) {
  FX_CHECK(backend_rank >= 0 && backend_rank < kMaxBackends, "fx::register_kernel: rank ",
           backend_rank, " out of range");
  p.kernels[int(device.kind)][backend_rank] = fn;
}

namespace {
bool register_backends() {
  backend::register_reference();
  backend::register_cpu();
  return true;
}
}  // namespace

[[noreturn]] static void fail_devices(const KernelCall& call) {
  std::string devices;
  for (const Tensor& x : call.in)
    if (x.defined()) devices += (devices.empty() ? "" : ", ") + device_name(x.device());
  detail::fail("fx::", call.prim.name, ": inputs on different devices (", devices, "), output on ",
               device_name(call.out.device()), "; move them with fx::to");
}

void dispatch(const KernelCall& call) {
  static const bool registered = register_backends();
  (void)registered;
  const Device dev = call.out.device();
  // Meta tensors hold no data: the forward has made the output's shape and dtype, and that is
  // all a meta computation is. Host constants mixed into it (an arange inside a rule) are fine.
  if (dev.kind == DeviceKind::meta) return;
  for (const Tensor& x : call.in)
    if (x.defined() && x.device() != dev) [[unlikely]]
      fail_devices(call);
  for (KernelFn k : call.prim.kernels[int(dev.kind)])
    if (k && k(call)) return;
  detail::fail("fx::", call.prim.name, ": no kernel on device ", device_name(dev), " for ",
               dtype_name(call.out.dtype()), " ", call.out.shape());
}

Tensor elementwise_forward(const Primitive& p, std::span<const Tensor> in, Attrs attrs) {
  Tensor out = Tensor::empty(in[0].shape(), in[0].dtype(), output_device(in));
  dispatch({p, in, out, attrs});
  return out;
}

Tensor compare_forward(const Primitive& p, std::span<const Tensor> in, Attrs attrs) {
  Tensor out = Tensor::empty(in[0].shape(), boolean, output_device(in));
  dispatch({p, in, out, attrs});
  return out;
}

Tensor make_view(const Tensor& x, const Shape& shape, const int64_t* strides, int64_t offset) {
  TensorImpl* p = TensorImpl::create();
  p->dtype = x.dtype();
  p->storage = x.storage();
  p->storage->retain();
  p->offset = offset;
  p->shape = shape;
  for (int d = 0; d < shape.size(); ++d) p->strides[d] = strides[d];
  return Tensor(p);
}

Tensor untagged_view(const Tensor& x) {
  Tensor v = make_view(x, x.shape(), x.strides(), x.offset());
  if (detail::tracing_depth != 0) [[unlikely]]
    detail::trace_alias(x, v);
  return v;
}

std::span<Primitive* const> builtin_primitives() {
#define FX_ADDRESS(name) &name##_p,
  static Primitive* const all[] = {FX_BUILTIN_PRIMITIVES(FX_ADDRESS)};
#undef FX_ADDRESS
  return all;
}

}  // namespace fx

namespace fx {
namespace detail {
thread_local constinit Interpreter* top_interpreter = nullptr;

void push_interpreter(Interpreter* it) {
  it->below = top_interpreter;
  it->tapes = (it->below ? it->below->tapes : 0) + (it->is_tape ? 1 : 0);
  it->others = (it->below ? it->below->others : 0) + (it->is_tape ? 0 : 1);
  top_interpreter = it;
}

void pop_interpreter(Interpreter* it, const char* what) {
  FX_CHECK(top_interpreter == it, what,
           ": ended out of order with the recordings, vmaps and "
           "traces begun inside it");
  top_interpreter = it->below;
}

namespace {
std::vector<Tensor> owning_copies(std::initializer_list<TensorRef> in) {
  std::vector<Tensor> owned;
  owned.reserve(in.size());
  for (const TensorRef& r : in) {
    if (r.impl()) r.impl()->refs.fetch_add(1, std::memory_order_relaxed);
    owned.emplace_back(r.impl());  // adopts the reference just taken
  }
  return owned;
}
}  // namespace

// More arguments than BorrowedTensors holds: plain owning copies (rare, never on a hot path).
Tensor bind_owned(const Primitive& p, std::initializer_list<TensorRef> in, Attrs attrs) {
  const std::vector<Tensor> owned = owning_copies(in);
  return bind(p, std::span<const Tensor>(owned), attrs);
}

// Several outputs: the same steps as bind, off the hot path of single-output primitives.
void bind_n(const Primitive& p, std::span<const Tensor> in, Attrs attrs, Tensor* out) {
  FX_CHECK(p.forward_n && p.num_outputs > 1 && p.num_outputs <= kMaxOutputs, "fx::bind_n: '",
           p.name, "' is not a primitive with several outputs (num_outputs ", p.num_outputs, ")");
  if (top_interpreter) return top_interpreter->process_n(p, in, attrs, out);
  p.forward_n(p, in, attrs, out);
  if (anomaly_checks) [[unlikely]]
    for (int k = 0; k < p.num_outputs; ++k) check_forward_anomaly(p, in, out[k]);
}

void bind_n_list(const Primitive& p, std::initializer_list<TensorRef> in, Attrs attrs,
                 Tensor* out) {
  const std::vector<Tensor> owned = owning_copies(in);
  bind_n(p, std::span<const Tensor>(owned), attrs, out);
}
}  // namespace detail

std::vector<AbstractValue> abstract_eval(const Primitive& p, std::span<const Tensor> in,
                                         Attrs attrs) {
  // The device the outputs would have: the inputs' (meta only when all of them are).
  Device device = Device::meta;
  for (const Tensor& x : in) {
    if (!x.defined() || !x.device().has_data()) continue;
    if (device.has_data())
      FX_CHECK(x.device() == device, "fx::abstract_eval: '", p.name, "' has inputs on ",
               device_name(device), " and ", device_name(x.device()));
    else device = x.device();
  }
  std::vector<Tensor> meta(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].defined())
      meta[i] = in[i].device().has_data()
                    ? Tensor::empty(in[i].shape(), in[i].dtype(), Device::meta)
                    : in[i];
  const detail::PauseInterpreters alone;
  Tensor out[kMaxOutputs];
  const std::span<const Tensor> args(meta);
  if (p.num_outputs == 1) out[0] = p.forward(p, args, attrs);
  else p.forward_n(p, args, attrs, out);
  std::vector<AbstractValue> types;
  for (int k = 0; k < p.num_outputs; ++k) {
    const Device d = out[k].device().has_data() ? out[k].device() : device;
    types.push_back({out[k].shape(), out[k].dtype(), d});
  }
  return types;
}

Tensor linear_jvp(const JvpArgs& args, const Tensor* dx) {
  const size_t n = args.num_inputs();
  std::vector<Tensor> in(n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& x = args.input(int(i));
    if (!x.defined() || !is_inexact(x.dtype())) in[i] = x;  // indices, conditions: fixed
    else in[i] = dx[i].defined() ? dx[i] : expanded_zeros_like(x);
  }
  return bind(args.primitive(), std::span<const Tensor>(in), args.attrs());
}
}  // namespace fx
