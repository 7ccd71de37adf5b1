// oneDNN's eltwise gelu (see onednn_eltwise.hpp). Why not our own Highway loop alone: that one is
// compiled for the portable AVX2 target, and oneDNN picks its kernel for the machine it runs on
// (AVX-512 here). On the 2-core AMD EPYC VM, one thread, a (128, 4096) block in cache (median of
// 50, /tmp microbenchmark): gelu_erf forward 0.32 ms against our 0.49-0.59 ms, forward and
// backward 0.75-0.84 ms against 1.02-1.19 ms. In bench/layer_table (where libtorch runs the same
// primitives) gelu_tanh went from 0.47 to 0.36 of libtorch's time; gelu_erf uses the forward only
// (activation_kernels.cpp says why).
//
// The buffer is one axis of n values, so a primitive depends only on n, the form, the direction
// and the OpenMP thread count (oneDNN plans its split of the work for the count at creation);
// each thread keeps the ones it made, as conv.cpp does.
#include "backend/cpu/onednn_eltwise.hpp"

#include <omp.h>

#include <cstring>
#include <dnnl.hpp>
#include <list>
#include <optional>

#include "backend/cpu/onednn_threads.hpp"

namespace fx::backend::cpu {
namespace {

using dnnl::memory;

// Distinct (size, form, direction, thread count) combinations a thread keeps: a model's gelu
// layers at both directions. Not measured.
constexpr size_t kEltwiseCacheEntries = 16;

struct Key {
  int64_t n;
  bool erf_form, gradient;
  int threads;
  bool operator==(const Key&) const = default;
};

struct Entry {
  Key key;
  std::optional<dnnl::primitive> prim;  // empty: oneDNN declined (or offered only its reference)
  memory x, dy, out;                    // made once, pointed at each call's buffers
};

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

Entry make_entry(const Key& key) {
  Entry e{key, std::nullopt, {}, {}, {}};
  const memory::desc d({key.n}, memory::data_type::f32, memory::format_tag::a);
  const auto alg =
      key.erf_form ? dnnl::algorithm::eltwise_gelu_erf : dnnl::algorithm::eltwise_gelu_tanh;
  try {
    using fwd = dnnl::eltwise_forward;
    using bwd = dnnl::eltwise_backward;
    const fwd::primitive_desc fwd_pd(fwd::desc(key.gradient ? dnnl::prop_kind::forward_training
                                                            : dnnl::prop_kind::forward_inference,
                                               alg, d, 0.0f, 0.0f),
                                     engine());
    if (key.gradient) {
      const bwd::primitive_desc pd(bwd::desc(alg, d, d, 0.0f, 0.0f), engine(), fwd_pd);
      // The reference implementation would be slower than our own loop.
      if (std::strncmp(pd.impl_info_str(), "jit", 3) != 0) return e;
      e.prim.emplace(bwd(pd));
    } else {
      if (std::strncmp(fwd_pd.impl_info_str(), "jit", 3) != 0) return e;
      e.prim.emplace(fwd(fwd_pd));
    }
  } catch (const dnnl::error&) {
    return e;
  }
  e.x = memory(d, engine(), DNNL_MEMORY_NONE);
  e.dy = memory(d, engine(), DNNL_MEMORY_NONE);
  e.out = memory(d, engine(), DNNL_MEMORY_NONE);
  return e;
}

Entry& entry_for(const Key& key) {
  thread_local std::list<Entry> cache;  // most recently used first
  for (auto it = cache.begin(); it != cache.end(); ++it)
    if (it->key == key) {
      cache.splice(cache.begin(), cache, it);
      return cache.front();
    }
  if (cache.size() == kEltwiseCacheEntries) cache.pop_back();
  cache.push_front(make_entry(key));
  return cache.front();
}

}  // namespace

bool onednn_gelu(const float* x, const float* dy, float* out, int64_t n, bool erf_form) {
  if (n <= 0) return false;
  const OneThreadInParallel one_thread;
  Entry& e = entry_for({n, erf_form, dy != nullptr, omp_get_max_threads()});
  if (!e.prim) return false;
  thread_local dnnl::stream stream(engine());
  e.x.set_data_handle(const_cast<float*>(x));
  e.out.set_data_handle(out);
  if (dy) {
    e.dy.set_data_handle(const_cast<float*>(dy));
    e.prim->execute(stream,
                    {{DNNL_ARG_SRC, e.x}, {DNNL_ARG_DIFF_DST, e.dy}, {DNNL_ARG_DIFF_SRC, e.out}});
  } else {
    e.prim->execute(stream, {{DNNL_ARG_SRC, e.x}, {DNNL_ARG_DST, e.out}});
  }
  stream.wait();
  return true;
}

}  // namespace fx::backend::cpu
