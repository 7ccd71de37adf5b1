// The three convolution primitives in f32 on oneDNN 2.6's convolution (operation descriptors,
// then primitive descriptors). The descriptors ask for format_tag::any on every tensor, so
// oneDNN picks its blocked layouts (nChw16c and OIhw16i16o on AVX-512); our tensors stay plain
// NC(D)(H)W and are reordered into and out of those layouts around each call.
//
// Creating a primitive costs far more than running a small one (0.1-1 ms), so each thread keeps
// an LRU list of the ones it made, with their reorders and scratch buffers, keyed by everything
// that shapes them: which primitive, the three shapes, the geometry and the OpenMP thread count
// (oneDNN plans its split of the work for the count at creation). A training loop makes each
// layer's three primitives once. Reordered weights are not kept across calls: a tensor carries
// no version counter, so an optimiser's in-place update could not be told from the same buffer
// unchanged; the weight reorder is one pass over the (small) weight: in examples/fashion_mnist_cnn
// each takes about 10 us of a 25 ms training step (ONEDNN_VERBOSE=1), where the activations'
// reorders take a sixth of the oneDNN time and pooling a quarter.
//
// The activations' reorders are the larger cost (for a depthwise layer, six of them are half a
// training step), and the weight gradient's two repeat the forward's and the data gradient's:
// it takes those blocked copies instead (reuse_blocked below).
//
// Inside an OpenMP parallel region (a data-parallel share) the primitives are made and run for
// one thread (backend/cpu/onednn_threads.hpp), so every share runs oneDNN on its own rows.
//
// Combinations oneDNN rejects (an output padding beyond the stride, say) make the kernel
// decline and the reference loops run them.
#include <omp.h>

#include <dnnl.hpp>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "backend/backends.hpp"
#include "backend/cpu/onednn_threads.hpp"
#include "ops/conv_geometry.hpp"

namespace fx::backend::cpu {
namespace {

using conv_detail::Geometry;
using dnnl::memory;
using tag = memory::format_tag;

enum class Mode : int64_t { forward, data, weights };
constexpr size_t kConvCacheEntries = 48;  // a network's conv layers, three primitives each

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// One argument of the primitive: the plain memory our tensor is, and, when oneDNN chose
// another layout, the memory in that layout and the reorder between them.
struct Arg {
  int id;
  memory user;
  std::optional<memory> inner;
  std::optional<dnnl::reorder> reorder;  // user -> inner for inputs, inner -> user for the output
  bool output = false;
};

// Which tensor an entry's first argument's blocked buffer holds after its last call, for the
// weight gradient to reuse (see reuse_blocked): the tensor itself, held so that its storage
// cannot be freed and its address reused by another, and its storage's version then.
struct Blocked {
  Tensor src;
  uint64_t version = 0;
  bool holds(const Tensor& t) const {
    return src.defined() && src.same_storage(t) && src.offset() == t.offset() &&
           src.shape() == t.shape() && src.storage()->version == t.storage()->version &&
           src.storage()->version == version;
  }
};

struct Entry {
  std::vector<int64_t> key;
  Mode mode = Mode::forward;
  std::optional<dnnl::primitive> prim;  // empty: oneDNN declined; the reference runs it
  std::vector<Arg> args;                // the tensors' order: in[0], in[1], (in[2]), out
  std::unordered_map<int, memory> exec_args;
  Blocked blocked;  // forward: x in args[0].inner; data: dy in args[0].inner
};

memory::dims dims_of(const Tensor& t) { return memory::dims(t.shape().begin(), t.shape().end()); }

tag act_tag(int nd) { return nd == 1 ? tag::ncw : nd == 2 ? tag::nchw : tag::ncdhw; }

// The weight (O, C/G, *k) as oneDNN's grouped (G, O/G, C/G, *k) when there are groups; the same
// bytes either way.
memory::desc weight_desc(const Shape& w, int64_t groups, int nd, bool any) {
  memory::dims d(w.begin(), w.end());
  if (groups > 1) {
    d[0] /= groups;
    d.insert(d.begin(), groups);
  }
  const tag plain = groups > 1 ? (nd == 1   ? tag::goiw
                                  : nd == 2 ? tag::goihw
                                            : tag::goidhw)
                               : (nd == 1   ? tag::oiw
                                  : nd == 2 ? tag::oihw
                                            : tag::oidhw);
  return memory::desc(d, memory::data_type::f32, any ? tag::any : plain);
}

Arg make_arg(int id, const memory::desc& user, const memory::desc& inner, bool output) {
  Arg a{id, memory(user, engine(), DNNL_MEMORY_NONE), std::nullopt, std::nullopt, output};
  if (inner != user) {
    a.inner.emplace(inner, engine());
    a.reorder.emplace(output ? dnnl::reorder(*a.inner, a.user) : dnnl::reorder(a.user, *a.inner));
  }
  return a;
}

Entry make_entry(std::vector<int64_t> key, Mode mode, const KernelCall& c) {
  Entry e{std::move(key), mode, std::nullopt, {}, {}, {}};
  const Geometry g(c.attrs);
  const int nd = g.nd;
  const auto f32 = memory::data_type::f32;
  // x, w, y: whichever tensors play them.
  const Tensor& X = mode == Mode::data ? c.out : c.in[0];
  const Tensor& W = mode == Mode::forward ? c.in[1] : mode == Mode::data ? c.in[1] : c.out;
  const Tensor& Y = mode == Mode::forward ? c.out : c.in[mode == Mode::data ? 0 : 1];
  const bool bias = mode == Mode::forward && g.bias();
  memory::dims strides(nd), dil(nd), pl(nd), pr(nd);
  for (int a = 0; a < nd; ++a) {
    strides[a] = g.stride(a);
    dil[a] = g.dilation(a) - 1;  // oneDNN: 0 is no dilation
    pl[a] = g.pad_lo(a);
    pr[a] = g.pad_hi(a);
  }
  const memory::desc x_any(dims_of(X), f32, tag::any), y_any(dims_of(Y), f32, tag::any),
      w_any = weight_desc(W.shape(), g.groups, nd, true);
  const memory::desc x_plain(dims_of(X), f32, act_tag(nd)), y_plain(dims_of(Y), f32, act_tag(nd)),
      w_plain = weight_desc(W.shape(), g.groups, nd, false), b_plain({W.shape()[0]}, f32, tag::a);
  const auto alg = dnnl::algorithm::convolution_direct;
  try {
    using fwd = dnnl::convolution_forward;
    const auto fwd_desc = bias ? fwd::desc(dnnl::prop_kind::forward_training, alg, x_any, w_any,
                                           b_plain, y_any, strides, dil, pl, pr)
                               : fwd::desc(dnnl::prop_kind::forward_training, alg, x_any, w_any,
                                           y_any, strides, dil, pl, pr);
    const fwd::primitive_desc fwd_pd(fwd_desc, engine());
    switch (mode) {
      case Mode::forward:
        e.args.push_back(make_arg(DNNL_ARG_SRC, x_plain, fwd_pd.src_desc(), false));
        e.args.push_back(make_arg(DNNL_ARG_WEIGHTS, w_plain, fwd_pd.weights_desc(), false));
        if (bias) e.args.push_back(make_arg(DNNL_ARG_BIAS, b_plain, b_plain, false));
        e.args.push_back(make_arg(DNNL_ARG_DST, y_plain, fwd_pd.dst_desc(), true));
        e.prim.emplace(fwd(fwd_pd));
        break;
      case Mode::data: {
        using bwd = dnnl::convolution_backward_data;
        const bwd::primitive_desc pd(bwd::desc(alg, x_any, w_any, y_any, strides, dil, pl, pr),
                                     engine(), fwd_pd);
        e.args.push_back(make_arg(DNNL_ARG_DIFF_DST, y_plain, pd.diff_dst_desc(), false));
        e.args.push_back(make_arg(DNNL_ARG_WEIGHTS, w_plain, pd.weights_desc(), false));
        e.args.push_back(make_arg(DNNL_ARG_DIFF_SRC, x_plain, pd.diff_src_desc(), true));
        e.prim.emplace(bwd(pd));
        break;
      }
      case Mode::weights: {
        using bwd = dnnl::convolution_backward_weights;
        const bwd::primitive_desc pd(bwd::desc(alg, x_any, w_any, y_any, strides, dil, pl, pr),
                                     engine(), fwd_pd);
        e.args.push_back(make_arg(DNNL_ARG_SRC, x_plain, pd.src_desc(), false));
        e.args.push_back(make_arg(DNNL_ARG_DIFF_DST, y_plain, pd.diff_dst_desc(), false));
        e.args.push_back(make_arg(DNNL_ARG_DIFF_WEIGHTS, w_plain, pd.diff_weights_desc(), true));
        e.prim.emplace(bwd(pd));
        break;
      }
    }
  } catch (const dnnl::error&) {
    e.prim.reset();
    e.args.clear();
    return e;
  }
  for (const Arg& a : e.args) e.exec_args.emplace(a.id, a.inner ? *a.inner : a.user);
  return e;
}

thread_local std::list<Entry> cache;  // most recently used first

Entry& entry_for(std::vector<int64_t>&& key, Mode mode, const KernelCall& c) {
  for (auto it = cache.begin(); it != cache.end(); ++it)
    if (it->key == key) {
      cache.splice(cache.begin(), cache, it);
      return cache.front();
    }
  if (cache.size() == kConvCacheEntries) cache.pop_back();
  cache.push_front(make_entry(std::move(key), mode, c));
  return cache.front();
}

// The weight gradient reads x and dy, which the forward and the data gradient have already
// reordered into the same blocked layouts: x in the forward's buffer, dy in the data gradient's
// (conv's pullback binds the data gradient and then the weight gradient on the same dy). Taking
// them from there saves two of a training step's six reorders of activations (a depthwise
// layer's step: 0.5-0.9 ms each of about 7 ms). A buffer counts only while it holds the very
// tensor (same storage, offset and shape, held alive) at the same storage version: an in-place op
// bumps the version. A write through a raw data pointer does not, but a gradient taken after
// such a write would read changed data anyway (AD keeps x itself for the pullback).
// A forward keeps its x only while a tape records (no weight gradient follows otherwise), until
// its next call or its first reuse; the data gradient keeps its dy until the next conv call.
std::optional<memory> reuse_blocked(const Tensor& t, Mode producer, const memory::desc& want) {
  for (Entry& e : cache)
    if (e.mode == producer && e.prim && !e.args.empty() && e.args[0].inner && e.blocked.holds(t) &&
        e.args[0].inner->get_desc() == want) {
      memory m = *e.args[0].inner;
      e.blocked = {};  // once: the next forward or data gradient overwrites the buffer anyway
      return m;
    }
  return std::nullopt;
}

// Drops what the entries of one mode keep (and the tensors they hold).
void forget(Mode producer) {
  for (Entry& e : cache)
    if (e.mode == producer) e.blocked = {};
}

template <Mode M>
bool onednn_conv(const KernelCall& c) {
  if (c.out.dtype() != f32 || c.out.numel() == 0) return false;
  for (const Tensor& t : c.in)
    if (t.dtype() != f32 || !t.is_contiguous() || t.numel() == 0) return false;
  const OneThreadInParallel one_thread;
  std::vector<int64_t> key;
  key.reserve(64);
  key.push_back(int64_t(M));
  for (const Tensor* t : {&c.in[0], &c.in[1], &c.out}) {
    key.push_back(t->ndim());
    key.insert(key.end(), t->shape().begin(), t->shape().end());
  }
  const Geometry g(c.attrs);
  g.append_key(key);
  key.push_back(M == Mode::forward && g.bias());
  key.push_back(omp_get_max_threads());
  Entry& e = entry_for(std::move(key), M, c);
  if (!e.prim) return false;
  thread_local dnnl::stream stream(engine());
  // A data gradient's dy is kept for the weight gradient that follows it, and no further.
  if constexpr (M != Mode::weights) forget(Mode::data);
  // The tensors in the args' order: inputs, then the output. oneDNN only reads the inputs.
  for (size_t i = 0; i < e.args.size(); ++i) {
    Arg& a = e.args[i];
    const Tensor& t = a.output ? c.out : c.in[i];
    a.user.set_data_handle(t.raw_data());
    if (!a.reorder || a.output) continue;
    if constexpr (M == Mode::weights) {
      // in[0] is x (the forward's first argument), in[1] is dy (the data gradient's).
      if (auto m = reuse_blocked(t, i == 0 ? Mode::forward : Mode::data, a.inner->get_desc())) {
        e.exec_args[a.id] = *m;
        continue;
      }
      e.exec_args[a.id] = *a.inner;
    }
    a.reorder->execute(stream, a.user, *a.inner);
  }
  if constexpr (M != Mode::weights) {
    const bool keep = e.args[0].inner && (M == Mode::data || fx::detail::active_tape_count() != 0);
    e.blocked = keep ? Blocked{c.in[0], c.in[0].storage()->version} : Blocked{};
  } else {
    forget(Mode::data);
  }
  e.prim->execute(stream, e.exec_args);
  for (Arg& a : e.args)
    if (a.reorder && a.output) a.reorder->execute(stream, *a.inner, a.user);
  stream.wait();
  return true;
}

}  // namespace

void register_conv() {
  register_kernel(conv_p, Device::cpu, kCpuRank, onednn_conv<Mode::forward>);
  register_kernel(conv_backward_data_p, Device::cpu, kCpuRank, onednn_conv<Mode::data>);
  register_kernel(conv_backward_weights_p, Device::cpu, kCpuRank, onednn_conv<Mode::weights>);
}

}  // namespace fx::backend::cpu
