// The batching interpreter behind fx::vmap: batched values are handles without data whose
// storage carries the stored tensor (batch on axis 0); bind hands every application with a
// batched input to the primitive's batching rule, below this interpreter; the tapes begun inside
// the vmap sit above it and record the application on the handles.
#include "fluxion/ad/vmap.hpp"

#include <atomic>

#include "fluxion/ops/primitive.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/batching.hpp"

namespace fx::detail {

namespace {
std::atomic<uint64_t> next_level{1};

struct BatchedValue final : StorageExtra {
  BatchedValue(Tensor v, uint64_t l) : stored(std::move(v)), level(l) {}
  Tensor stored;  // batch on axis 0
  uint64_t level;
};

// x with axis `from` moved to position `to`, the others in order.
Tensor move_axis(const Tensor& x, int from, int to) {
  Shape perm;
  for (int d = 0; d < x.ndim(); ++d)
    if (d != from) perm.push_back(d);
  Shape out;
  for (int d = 0, k = 0; d < x.ndim(); ++d) out.push_back(d == to ? from : perm[k++]);
  return permute(x, out);
}

BatchedValue* batched_value(const Tensor& x) {
  StorageExtra* e = x.storage()->extra;
  return e ? dynamic_cast<BatchedValue*>(e) : nullptr;
}
}  // namespace

class BatchInterpreter final : public Interpreter {
 public:
  uint64_t level = next_level.fetch_add(1, std::memory_order_relaxed);
  int64_t size = -1;

  // The handle of a batched value of this level.
  Tensor wrap(const Tensor& stored) const {
    TensorImpl* p = TensorImpl::create();
    p->dtype = stored.dtype();
    p->shape = Shape(std::span<const int64_t>(stored.shape().data() + 1, stored.ndim() - 1));
    p->strides = contiguous_strides(p->shape);
    p->storage = Storage::create_placeholder(stored.device(), new BatchedValue(stored, level));
    return Tensor(p);
  }

  // x's batched value when it is one of this level's; null for a value the batch shares (an
  // ordinary tensor, or one batched by an enclosing vmap).
  const BatchedValue* ours(const Tensor& x) const {
    const BatchedValue* v = batched_value(x);
    if (!v || v->level == level) return v;
    for (const Interpreter* it = below; it; it = it->below)
      if (auto* b = dynamic_cast<const BatchInterpreter*>(it); b && b->level == v->level)
        return nullptr;
    fail("fx::vmap: a batched value ", x.shape(),
         " escaped the fx::vmap that made it (kept past its end, or from an inner vmap)");
  }

  Tensor process(const Primitive& p, std::span<const Tensor> in, Attrs attrs) override {
    Tensor out;
    apply(p, in, attrs, &out, 1);
    return out;
  }
  void process_n(const Primitive& p, std::span<const Tensor> in, Attrs attrs,
                 Tensor* out) override {
    apply(p, in, attrs, out, p.num_outputs);
  }

 private:
  // One application with nout outputs (1, or p.num_outputs).
  void apply(const Primitive& p, std::span<const Tensor> in, Attrs attrs, Tensor* out, int nout) {
    std::vector<Tensor> stored(in.begin(), in.end());
    uint64_t mask = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].defined()) continue;
      if (const BatchedValue* v = ours(in[i])) {
        FX_CHECK(i < 64, "fx::vmap: '", p.name, "' has more than 64 inputs");
        stored[i] = v->stored;
        mask |= uint64_t(1) << i;
      }
    }
    // The interpreters below evaluate (and their tapes record) the application itself when
    // nothing of this level is among its inputs, or else this level's rule. The tapes begun
    // inside this vmap are above it: they record the application on the handles afterwards,
    // and their pullbacks and pushforwards come through here again.
    const CutInterpreters cut(this);
    if (!mask) {
      if (nout == 1) out[0] = bind(p, in, attrs);
      else bind_n(p, in, attrs, out);
      return;
    }
    Tensor out_stored[kMaxOutputs];
    const BatchArgs args{stored, mask, size, attrs};
    if (nout == 1) out_stored[0] = p.batch ? p.batch(p, args) : batch_by_loop(p, args);
    else if (p.batch_n) p.batch_n(p, args, out_stored);
    else batch_by_loop_n(p, args, out_stored);
    for (int k = 0; k < nout; ++k) {
      const Tensor& o = out_stored[k];
      FX_CHECK(o.defined() && o.ndim() >= 1 && o.shape()[0] == size,
               "fx::vmap: the batching rule of '", p.name, "' gave ",
               o.defined() ? o.shape().to_string() : "nothing", " for a batch of ", size);
      out[k] = wrap(o);
    }
  }
};

bool batched_by_top_vmap(const Tensor& x) {
  const auto* top = dynamic_cast<const BatchInterpreter*>(top_interpreter);
  const BatchedValue* v = x.defined() ? batched_value(x) : nullptr;
  return top && v && v->level == top->level;
}

VmapScope::VmapScope() : it_(std::make_unique<BatchInterpreter>()) {}

VmapScope::~VmapScope() {
  if (open_) close();
}

Tensor VmapScope::enter(const Tensor& x, int axis) {
  const int a = normalize_axis(axis, x.ndim(), "fx::vmap");
  const int64_t n = x.shape()[a];
  FX_CHECK(it_->size < 0 || it_->size == n, "fx::vmap: mapped axes of sizes ", it_->size, " and ",
           n, " (argument ", x.shape(), ", axis ", axis, ")");
  it_->size = n;
  return it_->wrap(a == 0 ? x : move_axis(x, a, 0));
}

void VmapScope::open() {
  FX_CHECK(it_->size >= 0,
           "fx::vmap: no argument is mapped (every in_axes entry is unmapped, or "
           "no argument holds a tensor)");
  push_interpreter(it_.get());
  open_ = true;
}

void VmapScope::close() {
  open_ = false;
  pop_interpreter(it_.get(), "fx::vmap");
}

Tensor VmapScope::leave(const Tensor& r, int axis) const {
  const BatchedValue* v = batched_value(r);
  Tensor stored;
  if (v && v->level == it_->level) {
    stored = v->stored;
  } else {  // the same for every example
    stored = expand(unsqueeze(r, 0), with_batch(it_->size, r.shape()));
  }
  const int a = normalize_axis(axis, stored.ndim(), "fx::vmap (out_axes)");
  return a == 0 ? stored : move_axis(stored, 0, a);
}

}  // namespace fx::detail
