// Max and average pooling in f32 on oneDNN 2.6's pooling primitive, on our plain NC(D)(H)W
// layout (oneDNN's kernels for it need no reorder).
//
// Max pooling's backward needs the forward's workspace (which input each window picked). A
// primitive returns one tensor, so the forward cannot hand the workspace to the tape; instead
// max_pool_backward's scatter mode runs the training forward into a cached scratch output and
// workspace, then the backward primitive from them: one extra pooling pass, much cheaper than
// the convolutions around it, and never a stale workspace. Its gather mode (the transpose, used
// only at second order and by forward mode) stays with the reference loops.
//
// Primitives and scratch buffers are cached per thread in an LRU list, keyed like conv's; inside
// a data-parallel share they are made for one thread, as conv's are (onednn_threads.hpp).
#include <omp.h>

#include <dnnl.hpp>
#include <list>
#include <optional>
#include <vector>

#include "backend/backends.hpp"
#include "backend/cpu/onednn_threads.hpp"
#include "ops/pool_geometry.hpp"

namespace fx::backend::cpu {
namespace {

using dnnl::memory;
using pool_detail::Geometry;
using pool_detail::MaxMode;
using tag = memory::format_tag;

enum class Kind : int64_t { max_forward, max_backward, avg_forward, avg_backward };
constexpr size_t kPoolCacheEntries = 32;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

struct Entry {
  std::vector<int64_t> key;
  std::optional<dnnl::primitive> fwd, bwd;  // bwd only for the backward kinds
  memory x, y;                              // plain, pointed at the call's buffers
  std::optional<memory> scratch_y, ws;      // max backward: the training forward's outputs
};

Entry make_entry(std::vector<int64_t> key, Kind kind, const Shape& xs, Attrs pr) {
  Entry e{std::move(key), std::nullopt, std::nullopt, {}, {}, std::nullopt, std::nullopt};
  const Geometry g(pr);
  const int nd = g.nd;
  const auto f32 = memory::data_type::f32;
  const tag t = nd == 1 ? tag::ncw : nd == 2 ? tag::nchw : tag::ncdhw;
  memory::dims xd(xs.begin(), xs.end()), yd = xd, k(nd), s(nd), pl(nd), ph(nd);
  for (int a = 0; a < nd; ++a) {
    yd[2 + a] = g.out_size(a, xs[2 + a]);
    k[a] = g.kernel(a), s[a] = g.stride(a), pl[a] = g.pad_lo(a), ph[a] = g.pad_hi(a);
  }
  const memory::desc xm(xd, f32, t), ym(yd, f32, t);
  const bool is_max = kind == Kind::max_forward || kind == Kind::max_backward;
  const auto alg = is_max                  ? dnnl::algorithm::pooling_max
                   : g.a.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                           : dnnl::algorithm::pooling_avg_exclude_padding;
  const auto prop = kind == Kind::max_forward || kind == Kind::avg_forward
                        ? dnnl::prop_kind::forward_inference
                        : dnnl::prop_kind::forward_training;
  try {
    using fwd = dnnl::pooling_forward;
    using bwd = dnnl::pooling_backward;
    const fwd::primitive_desc fpd(fwd::desc(prop, alg, xm, ym, s, k, pl, ph), engine());
    e.x = memory(xm, engine(), DNNL_MEMORY_NONE);
    e.y = memory(ym, engine(), DNNL_MEMORY_NONE);
    if (kind == Kind::max_forward || kind == Kind::avg_forward || kind == Kind::max_backward)
      e.fwd.emplace(fwd(fpd));
    if (kind == Kind::max_backward) {
      e.scratch_y.emplace(ym, engine());
      e.ws.emplace(fpd.workspace_desc(), engine());
    }
    if (kind == Kind::max_backward || kind == Kind::avg_backward) {
      const bwd::primitive_desc bpd(bwd::desc(alg, xm, ym, s, k, pl, ph), engine(), fpd);
      e.bwd.emplace(bwd(bpd));
    }
  } catch (const dnnl::error&) {
    e.fwd.reset();
    e.bwd.reset();
  }
  return e;
}

Entry& entry_for(std::vector<int64_t>&& key, Kind kind, const Shape& xs, Attrs pr) {
  thread_local std::list<Entry> cache;  // most recently used first
  for (auto it = cache.begin(); it != cache.end(); ++it)
    if (it->key == key) {
      cache.splice(cache.begin(), cache, it);
      return cache.front();
    }
  if (cache.size() == kPoolCacheEntries) cache.pop_back();
  cache.push_front(make_entry(std::move(key), kind, xs, pr));
  return cache.front();
}

template <Kind K>
bool onednn_pool(const KernelCall& c) {
  if (K == Kind::max_backward && c.attrs.get<pool_detail::PoolAttrs>().mode != MaxMode::scatter)
    return false;
  if (c.out.dtype() != f32 || c.out.numel() == 0) return false;
  for (const Tensor& t : c.in)
    if (t.dtype() != f32 || !t.is_contiguous() || t.numel() == 0) return false;
  const Shape& xs = K == Kind::avg_backward ? c.out.shape() : c.in[0].shape();
  const OneThreadInParallel one_thread;
  std::vector<int64_t> key;
  key.reserve(24);
  key.push_back(int64_t(K));
  key.insert(key.end(), xs.begin(), xs.end());
  Geometry(c.attrs).append_key(key);
  key.push_back(omp_get_max_threads());
  Entry& e = entry_for(std::move(key), K, xs, c.attrs);
  if (!e.fwd && !e.bwd) return false;
  thread_local dnnl::stream stream(engine());
  switch (K) {
    case Kind::max_forward:
    case Kind::avg_forward:
      e.x.set_data_handle(c.in[0].raw_data());
      e.y.set_data_handle(c.out.raw_data());
      e.fwd->execute(stream, {{DNNL_ARG_SRC, e.x}, {DNNL_ARG_DST, e.y}});
      break;
    case Kind::max_backward:
      e.x.set_data_handle(c.in[0].raw_data());
      e.fwd->execute(
          stream, {{DNNL_ARG_SRC, e.x}, {DNNL_ARG_DST, *e.scratch_y}, {DNNL_ARG_WORKSPACE, *e.ws}});
      e.y.set_data_handle(c.in[1].raw_data());
      e.x.set_data_handle(c.out.raw_data());
      e.bwd->execute(
          stream,
          {{DNNL_ARG_DIFF_DST, e.y}, {DNNL_ARG_DIFF_SRC, e.x}, {DNNL_ARG_WORKSPACE, *e.ws}});
      break;
    case Kind::avg_backward:
      e.y.set_data_handle(c.in[0].raw_data());
      e.x.set_data_handle(c.out.raw_data());
      e.bwd->execute(stream, {{DNNL_ARG_DIFF_DST, e.y}, {DNNL_ARG_DIFF_SRC, e.x}});
      break;
  }
  stream.wait();
  return true;
}

}  // namespace

void register_pool() {
  register_kernel(max_pool_p, Device::cpu, kCpuRank, onednn_pool<Kind::max_forward>);
  register_kernel(max_pool_backward_p, Device::cpu, kCpuRank, onednn_pool<Kind::max_backward>);
  register_kernel(avg_pool_p, Device::cpu, kCpuRank, onednn_pool<Kind::avg_forward>);
  register_kernel(avg_pool_backward_p, Device::cpu, kCpuRank, onednn_pool<Kind::avg_backward>);
}

}  // namespace fx::backend::cpu
