// Reverse-mode tape: recording primitive applications and running their pullbacks backwards.
#include "fluxion/ad/tape.hpp"

#include <atomic>
#include <cstring>

#include "fluxion/ad/anomaly.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/primitives.hpp"
#include "ops/fused.hpp"

namespace fx {
namespace ad {
namespace {

constexpr uint32_t kNoSlot = UINT32_MAX;

// A recorded primitive application. Its outputs have the slots out_slot .. + num_outputs. Saved
// tensors are tape.saved[saved_begin .. + nin + num_outputs): the inputs (undefined unless the
// primitive saves them), then the outputs.
struct Node {
  // Constructed in place by emplace_back: a Node built on the stack and copied in stalled on
  // store forwarding, and a value-initialised one was zeroed only to be overwritten.
  Node(const Primitive* p, const AttrType* at, uint32_t out, uint32_t in, uint32_t saved,
       uint32_t n, uint32_t ab, uint32_t lb)
      : prim(p),
        attr_type(at),
        out_slot(out),
        in_begin(in),
        saved_begin(saved),
        nin(n),
        attr_begin(ab),
        list_begin(lb) {}
  const Primitive* prim;
  const AttrType* attr_type;  // null: no attributes
  uint32_t out_slot;
  uint32_t in_begin;
  uint32_t saved_begin;
  uint32_t nin;
  uint32_t attr_begin;  // the attributes' bytes live in tape.attr_words[attr_begin ..)
  uint32_t list_begin;  // their IntList's ints in tape.ints[list_begin ..), repointed at backward
};

std::atomic<uint32_t> next_generation{1};
thread_local TapeStats stats;

}  // namespace

// A tape is the interpreter of its differentiation: it sits on the thread's interpreter stack
// from Recording::begin to end, lets each application through to the interpreters under it and
// then records it (reverse mode: a node; forward mode: the outputs' tangents).
class Tape final : public detail::Interpreter {
 public:
  Tape() : Interpreter(/*is_tape=*/true) {}
  Tensor process(const Primitive& p, std::span<const Tensor> in, Attrs attrs) override;
  void process_n(const Primitive& p, std::span<const Tensor> in, Attrs attrs, Tensor* out) override;
  // Records an application whose nout outputs are computed.
  void record(const Primitive& p, std::span<const Tensor> in, Tensor* out, uint32_t nout,
              Attrs attrs);

  uint32_t gen = 0;
  uint32_t nslots = 0;
  bool forward = false;          // a forward-mode level: slots hold tangents, no nodes
  bool swept_once = false;       // backward_once ran: the saved tensors are gone
  std::vector<Tensor> tangents;  // forward mode: tangent of each slot (undefined = zero)
  std::vector<Node> nodes;
  std::vector<uint32_t> in_slots;
  std::vector<Tensor> saved;
  std::vector<uint32_t> saved_versions;  // storage version of each saved tensor when saved
  std::vector<uint64_t> attr_words;
  std::vector<int64_t> ints;
  std::vector<std::shared_ptr<const void>> owners;  // run-time rules its nodes point into

  void reset() {
    gen = next_generation.fetch_add(1, std::memory_order_relaxed);
    nslots = 0;
    nodes.clear();
    in_slots.clear();
    saved.clear();
    saved_versions.clear();
    attr_words.clear();
    ints.clear();
    tangents.clear();
    forward = false;
    swept_once = false;
    owners.clear();
  }
};

namespace {

// One recycled tape per thread keeps vector capacity across training steps.
thread_local std::unique_ptr<Tape> spare_tape;

std::shared_ptr<Tape> new_tape() {
  Tape* t = spare_tape ? spare_tape.release() : new Tape();
  t->reset();
  return std::shared_ptr<Tape>(t, [](Tape* p) {
    p->saved.clear();  // drop saved tensors now, not when the tape is reused
    p->tangents.clear();
    p->owners.clear();
    if (!spare_tape) spare_tape.reset(p);
    else delete p;
  });
}

uint32_t find_slot(const Tensor& x, uint32_t gen) {
  const TensorImpl* p = x.impl();
  for (int k = 0; k < p->ntags; ++k)
    if (p->tags[k].tape == gen) return p->tags[k].slot;
  return kNoSlot;
}

void add_tag(Tensor& x, uint32_t gen, uint32_t slot) {
  TensorImpl* p = x.impl();
  FX_CHECK(p->ntags < kMaxTags, "fx::pullback: differentiation nested deeper than ", kMaxTags);
  p->tags[p->ntags++] = Tag{gen, slot, uint32_t(p->storage->version)};
}

// The slot of input `x` of primitive `p` on tape generation `gen`, after checking that x's data
// is still what was recorded (an in-place write through another view would make the recorded
// dependency a lie).
uint32_t input_slot(const Tensor& x, uint32_t gen, const Primitive& p) {
  const TensorImpl* t = x.impl();
  for (int k = 0; k < t->ntags; ++k) {
    if (t->tags[k].tape != gen) continue;
    FX_CHECK(t->tags[k].version == uint32_t(t->storage->version), "fx::", p.name, ": input ",
             x.shape(),
             " was overwritten in place through another view after it was computed, "
             "so its derivative is unknown; update it through the handle that is used, or clone "
             "it before writing");
    return t->tags[k].slot;
  }
  return kNoSlot;
}

// out: nout outputs (1, or p.num_outputs); inlined so that the single-output path keeps nout
// a constant.
[[gnu::always_inline]] inline void record_on(Tape& t, const Primitive& p,
                                             std::span<const Tensor> in, Tensor* out, uint32_t nout,
                                             Attrs attrs) {
  const size_t nin = in.size();
  // Slots are looked up before anything is appended, so an untracked call touches no vector.
  uint32_t small[8];
  std::vector<uint32_t> big;
  uint32_t* slots = nin <= 8 ? small : (big.resize(nin), big.data());
  bool any = false;
  for (size_t i = 0; i < nin; ++i) {
    slots[i] = in[i].defined() ? input_slot(in[i], t.gen, p) : kNoSlot;
    any |= slots[i] != kNoSlot;
  }
  if (!any) return;
  const uint32_t in_begin = uint32_t(t.in_slots.size());
  const uint32_t saved_begin = uint32_t(t.saved.size());
  const uint32_t out_slot = t.nslots;
  t.nslots += nout;
  t.nodes.emplace_back(&p, attrs.type(), out_slot, in_begin, saved_begin, uint32_t(nin),
                       uint32_t(t.attr_words.size()), uint32_t(t.ints.size()));
  if (const AttrType* at = attrs.type()) {
    // As bytes: attribute structs are trivially copyable. A list's ints are copied beside them
    // (the struct's view is repointed at backward time: the vectors may still grow).
    const size_t begin = t.attr_words.size();
    t.attr_words.resize(begin + (at->size + 7) / 8);
    std::memcpy(&t.attr_words[begin], attrs.data(), at->size);
    if (IntList* l = at->list(&t.attr_words[begin])) {
      t.ints.insert(t.ints.end(), l->begin(), l->end());
      l->data = nullptr;
    }
  }
  // Element by element: push_back with capacity to spare is a compare and a store, where
  // insert() and resize() took the general paths (and a memset call) for two or three entries.
  // An input the primitive does not save gets an undefined placeholder (no reference count).
  for (size_t i = 0; i < nin; ++i) {
    t.in_slots.push_back(slots[i]);
    if (i < 31 && ((p.saves >> i) & 1u) && in[i].defined()) {
      t.saved.push_back(in[i]);
      t.saved_versions.push_back(uint32_t(in[i].storage()->version));
    } else {
      t.saved.emplace_back();
      t.saved_versions.push_back(0);
    }
  }
  for (uint32_t k = 0; k < nout; ++k) {
    if (p.saves & saves::output) {
      t.saved.push_back(out[k]);
      t.saved_versions.push_back(uint32_t(out[k].storage()->version));
    } else {
      t.saved.emplace_back();
      t.saved_versions.push_back(0);
    }
  }
  for (uint32_t k = 0; k < nout; ++k)
    if (nout == 1 || is_inexact(out[k].dtype())) add_tag(out[k], t.gen, out_slot + k);
  ++stats.nodes_recorded;
}

// Forward mode: the outputs' tangents from the inputs' tangents, computed by the interpreters
// under this tape (so the pushforward's own ops are differentiated by the outer tapes alone).
void forward_on(Tape& t, const Primitive& p, std::span<const Tensor> in, Tensor* out, uint32_t nout,
                Attrs attrs) {
  Tensor small[8];
  std::vector<Tensor> big;
  Tensor* dx = in.size() <= 8 ? small : (big.resize(in.size()), big.data());
  bool any = false;
  for (size_t i = 0; i < in.size(); ++i) {
    uint32_t s = in[i].defined() ? input_slot(in[i], t.gen, p) : kNoSlot;
    if (s != kNoSlot && t.tangents[s].defined()) {
      dx[i] = t.tangents[s];
      any = true;
    }
  }
  if (!any) return;
  FX_CHECK(nout == 1 ? p.jvp != nullptr : p.jvp_n != nullptr, "fx::jvp: primitive '", p.name,
           "' has no pushforward rule");
  Tensor dy[kMaxOutputs];
  {
    const detail::CutInterpreters cut(&t);
    if (nout == 1) dy[0] = p.jvp(JvpArgs(p, in, out[0], attrs), dx);
    else p.jvp_n(JvpArgs(p, in, out[0], attrs), dx, dy);
  }
  for (uint32_t k = 0; k < nout; ++k) {
    const uint32_t slot = t.nslots++;
    t.tangents.push_back(std::move(dy[k]));
    if (nout == 1 || is_inexact(out[k].dtype())) add_tag(out[k], t.gen, slot);
  }
  ++stats.nodes_recorded;
}

// Whether a first-order pass may write the running cotangent g in place: the tape holds the only
// handle on a dense buffer no other tensor views, and nothing records the writes.
bool writable_in_place(const Tensor& g) { return !detail::must_compose() && sole_dense_handle(g); }

// g += c for cotangents. When nothing records the backward pass and g is the only handle on
// a dense buffer of its own, the sum is written into g: no new tensor per accumulation (a value
// used k times gets k - 1 of them). Otherwise a new tensor, with the add recorded if watched.

void accumulate(Tensor& g, Tensor&& c) {
  if (!g.defined()) {
    g = std::move(c);
    return;
  }
  if (g.dtype() == c.dtype() && g.shape() == c.shape() && writable_in_place(g)) {
    detail::BorrowedTensors in({g, c});
    dispatch({add_p, in.span(), g, {}});
    return;
  }
  g = add(g, c);
}

// Anomaly mode (fluxion/ad/anomaly.hpp): the cotangent going in and those coming out are
// checked; the pullback's own ops are not, so an error names the primitive being differentiated
// rather than a multiply inside its rule.
void checked_pullback(const Primitive& p, const PullbackArgs& args, const Tensor* g, Tensor* dx,
                      uint32_t nin) {
  for (int k = 0; k < p.num_outputs; ++k)
    if (g[k].defined()) detail::check_cotangent_anomaly(p, g[k]);
  {
    const detect_anomaly off(false);
    if (p.num_outputs == 1) p.pullback(args, g[0], dx);
    else p.pullback_n(args, g, dx);
  }
  detail::check_pullback_anomaly(p, dx, nin);
}

}  // namespace

TapeStats tape_stats() { return stats; }
void reset_tape_stats() { stats = {}; }

int num_active_tapes() { return detail::active_tape_count(); }
ActiveTape active_tape(int level) {
  const int n = detail::active_tape_count();
  FX_CHECK(level >= 0 && level < n, "fx::ad::active_tape: level ", level, " of ", n);
  int k = n;  // levels count from the bottom of the stack
  for (detail::Interpreter* it = detail::top_interpreter;; it = it->below) {
    if (!it->is_tape || --k != level) continue;
    const Tape& t = static_cast<const Tape&>(*it);
    return {t.gen, t.forward};
  }
}
void keep_alive(const Tensor& out, std::shared_ptr<const void> owner) {
  for (detail::Interpreter* it = detail::top_interpreter; it; it = it->below) {
    if (!it->is_tape) continue;
    Tape& t = static_cast<Tape&>(*it);
    if (t.forward || find_slot(out, t.gen) == kNoSlot) continue;
    if (t.owners.empty() || t.owners.back() != owner) t.owners.push_back(owner);
  }
}

// Inlined into both entry points: record() is on every recorded op's path.
[[gnu::always_inline]] inline void Tape::record(const Primitive& p, std::span<const Tensor> in,
                                                Tensor* out, uint32_t nout, Attrs attrs) {
  bool inexact = false;
  for (uint32_t k = 0; k < nout; ++k) inexact |= is_inexact(out[k].dtype());
  if (!inexact) return;
  if (forward) forward_on(*this, p, in, out, nout, attrs);
  else record_on(*this, p, in, out, nout, attrs);
}

Tensor Tape::process(const Primitive& p, std::span<const Tensor> in, Attrs attrs) {
  Tensor out;
  {
    const detail::CutInterpreters cut(this);
    out = bind(p, in, attrs);
  }
  if (p.pullback) record(p, in, &out, 1, attrs);
  return out;
}

void Tape::process_n(const Primitive& p, std::span<const Tensor> in, Attrs attrs, Tensor* out) {
  {
    const detail::CutInterpreters cut(this);
    detail::bind_n(p, in, attrs, out);
  }
  if (p.pullback_n) record(p, in, out, uint32_t(p.num_outputs), attrs);
}

}  // namespace ad

namespace detail {
void record_below(const Interpreter* from, const Primitive& p, std::span<const Tensor> in,
                  Tensor* out, int nout, Attrs attrs) {
  if (!p.differentiable() || from->tapes == 0) return;
  // Outermost first, as they would record had each bound the application itself.
  ad::Tape* tapes[kMaxTags];
  int n = 0;
  for (Interpreter* it = from->below; it; it = it->below)
    if (it->is_tape) tapes[n++] = static_cast<ad::Tape*>(it);
  while (n-- > 0) tapes[n]->record(p, in, out, uint32_t(nout), attrs);
}
}  // namespace detail

const Tensor& PullbackArgs::input(int i) const {
  const Tensor& t = saved_[i];
  FX_CHECK(t.defined(), "fx: pullback of '", prim_.name, "' reads input ", i,
           " which its primitive does not save");
  return t;
}
Tensor* PullbackArgs::reusable_input(int i) const {
  if (!reusable_ || detail::must_compose()) return nullptr;
  Tensor& t = reusable_[i];
  if (!t.defined()) return nullptr;
  // The tape's own tag is harmless here: no tape records, and a finished recording that could
  // read this value again would hold a handle of its own.
  const TensorImpl* p = t.impl();
  return p->refs.load(std::memory_order_acquire) == 1 &&
                 p->storage->refs.load(std::memory_order_acquire) == 1 && t.is_contiguous()
             ? &t
             : nullptr;
}

Tensor* PullbackArgs::accumulator(int i) const {
  if (!grads_ || slots_[i] == ad::kNoSlot) return nullptr;
  Tensor& g = grads_[slots_[i]];
  return g.defined() && ad::writable_in_place(g) ? &g : nullptr;
}

const Tensor& PullbackArgs::output(int k) const {
  FX_CHECK(k >= 0 && k < prim_.num_outputs, "fx: pullback of '", prim_.name, "' reads output ", k,
           " of ", prim_.num_outputs);
  FX_CHECK(out_[k].defined(), "fx: pullback of '", prim_.name,
           "' reads its output which its primitive does not save");
  return out_[k];
}

namespace ad {

Recording Recording::begin(Mode mode) {
  FX_CHECK(detail::active_tape_count() < kMaxTags,
           "fx::pullback: differentiation nested deeper than ", kMaxTags);
  Recording r(new_tape());
  r.tape_->forward = mode == Mode::forward;
  detail::push_interpreter(r.tape_.get());
  return r;
}

Recording::Recording(Recording&& o) noexcept
    : tape_(std::move(o.tape_)), nleaves_(o.nleaves_), active_(o.active_) {
  o.active_ = false;
}

Recording::~Recording() {
  if (active_) end();
}

void Recording::end() {
  if (!active_) return;
  active_ = false;
  // Recordings nest (RAII), so this tape is the top interpreter.
  detail::pop_interpreter(tape_.get(), "fx::pullback: a recording");
}

size_t Recording::num_nodes() const { return tape_->nodes.size(); }

Tensor Recording::track(const Tensor& x, const Tensor& tangent) {
  const bool forward = tape_->forward;
  if (forward) {
    FX_CHECK(!tangent.defined() || !x.defined() || tangent.shape() == x.shape(),
             "fx::jvp: tangent ", tangent.shape(), " does not match argument ", x.shape());
    tape_->tangents.push_back(tangent.defined() && x.defined() && is_inexact(x.dtype())
                                  ? astype(tangent, x.dtype())
                                  : Tensor());
  }
  if (!x.defined() || !is_inexact(x.dtype())) {
    ++tape_->nslots;
    ++nleaves_;
    return x;
  }
  TensorImpl* p = TensorImpl::create();
  const TensorImpl* src = x.impl();
  p->dtype = src->dtype;
  p->storage = src->storage;
  p->storage->retain();
  p->offset = src->offset;
  p->shape = src->shape;
  p->strides = src->strides;
  p->ntags = src->ntags;
  for (int k = 0; k < src->ntags; ++k) p->tags[k] = src->tags[k];
  Tensor t(p);
  add_tag(t, tape_->gen, tape_->nslots++);
  // Under fx::trace the alias is the same graph value as x (a gradient with respect to a traced
  // argument).
  if (detail::tracing_depth != 0) [[unlikely]]
    detail::trace_alias(x, t);
  ++nleaves_;
  return t;
}

Tensor Recording::tangent(const Tensor& y) const {
  FX_CHECK(tape_->forward, "fx::jvp: tangent() asked of a reverse-mode recording");
  if (!y.defined()) return Tensor();
  uint32_t s = find_slot(y, tape_->gen);
  return s == kNoSlot ? Tensor() : tape_->tangents[s];
}

std::vector<Tensor> Recording::backward(const Tensor& y, const Tensor& dy) const {
  return sweep(y, dy, false);
}

std::vector<Tensor> Recording::backward_once(const Tensor& y, const Tensor& dy) {
  return sweep(y, dy, true);
}

std::vector<Tensor> Recording::sweep(const Tensor& y, const Tensor& dy, bool once) const {
  FX_CHECK(!tape_->forward, "fx::pullback: backward() asked of a forward-mode recording");
  FX_CHECK(!active_, "fx::pullback: backward called while still recording");
  FX_CHECK(!tape_->swept_once,
           "fx::pullback: this recording was already swept by "
           "backward_once(), which drops what the pullbacks read; use backward() to sweep a "
           "recording more than once");
  Tape& t = *tape_;
  t.swept_once = once;
  std::vector<Tensor> grads(t.nslots);
  uint32_t ys = y.defined() ? find_slot(y, t.gen) : kNoSlot;
  if (ys != kNoSlot) {
    FX_CHECK(dy.shape() == y.shape(), "fx::pullback: cotangent shape ", dy.shape(),
             " differs from output shape ", y.shape());
    grads[ys] = dy;
  }
  Tensor dx[64];
  std::vector<Tensor> dx_big;
  Tensor gs[kMaxOutputs];
  for (size_t k = t.nodes.size(); k-- > 0;) {
    const Node& n = t.nodes[k];
    const uint32_t nout = uint32_t(n.prim->num_outputs);
    // An intermediate's cotangent is consumed here: moving it out frees it early and saves a
    // handle copy (an atomic increment and decrement).
    bool any = false;
    for (uint32_t j = 0; j < nout; ++j) {
      const uint32_t s = n.out_slot + j;
      gs[j] = s >= nleaves_ ? std::move(grads[s]) : grads[s];
      any |= gs[j].defined();
    }
    if (!any) continue;
    void* attr_data = n.attr_type ? &t.attr_words[n.attr_begin] : nullptr;
    if (n.attr_type)
      if (IntList* l = n.attr_type->list(attr_data)) l->data = t.ints.data() + n.list_begin;
    uint64_t wants = 0;
    for (uint32_t i = 0; i < n.nin; ++i)
      if (t.in_slots[n.in_begin + i] != kNoSlot) wants |= i < 64 ? uint64_t(1) << i : 0;
    Tensor* saved = &t.saved[n.saved_begin];
    for (uint32_t i = 0; i < n.nin + nout; ++i) {
      const Tensor& v = saved[i];
      FX_CHECK(
          !v.defined() || uint32_t(v.storage()->version) == t.saved_versions[n.saved_begin + i],
          "fx::pullback: '", n.prim->name, "' needs its ", i >= n.nin ? "output" : "input", " ",
          v.shape(),
          ", which was overwritten in place after it was computed; clone it "
          "before writing, or write a new tensor instead");
    }
    Tensor* out = n.nin <= 64 ? dx : (dx_big.assign(n.nin, Tensor()), dx_big.data());
    PullbackArgs args(*n.prim, saved, saved[n.nin], Attrs(n.attr_type, attr_data), wants);
    args.set_accumulators(grads.data(), &t.in_slots[n.in_begin]);
    if (once) args.set_reusable(saved);
    if (detail::anomaly_checks) [[unlikely]]
      checked_pullback(*n.prim, args, gs, out, n.nin);
    else if (nout == 1) n.prim->pullback(args, gs[0], out);
    else n.prim->pullback_n(args, gs, out);
    ++stats.pullbacks_run;
    for (uint32_t j = 0; j < nout; ++j) gs[j] = Tensor();
    if (once)  // nothing reads them again; buffers freed now are reused while still in cache
      for (uint32_t i = 0; i < n.nin + nout; ++i) saved[i] = Tensor();
    for (uint32_t i = 0; i < n.nin; ++i) {
      if (!out[i].defined()) continue;
      uint32_t s = t.in_slots[n.in_begin + i];
      if (s != kNoSlot) accumulate(grads[s], std::move(out[i]));
      out[i] = Tensor();
    }
  }
  grads.resize(nleaves_);
  return grads;
}

}  // namespace ad
}  // namespace fx
