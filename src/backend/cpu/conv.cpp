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

struct Entry {
  std::vector<int64_t> key;
  std::optional<dnnl::primitive> prim;  // empty: oneDNN declined; the reference runs it
  std::vector<Arg> args;                // the tensors' order: in[0], in[1], (in[2]), out
  std::unordered_map<int, memory> exec_args;
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
  Entry e{std::move(key), std::nullopt, {}, {}};
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

Entry& entry_for(std::vector<int64_t>&& key, Mode mode, const KernelCall& c) {
  thread_local std::list<Entry> cache;  // most recently used first
  for (auto it = cache.begin(); it != cache.end(); ++it)
    if (it->key == key) {
      cache.splice(cache.begin(), cache, it);
      return cache.front();
    }
  if (cache.size() == kConvCacheEntries) cache.pop_back();
  cache.push_front(make_entry(std::move(key), mode, c));
  return cache.front();
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
  // The tensors in the args' order: inputs, then the output. oneDNN only reads the inputs.
  for (size_t i = 0; i < e.args.size(); ++i) {
    Arg& a = e.args[i];
    const Tensor& t = a.output ? c.out : c.in[i];
    a.user.set_data_handle(t.raw_data());
    if (a.reorder && !a.output) a.reorder->execute(stream, a.user, *a.inner);
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
