// A layer's product x @ W^T (f32) through oneDNN's matmul primitive, with the layer's bias (and
// tanh or sigmoid) fused into it; relu runs as a pass of ours after it (see post_op). The entry
// point is gemm.hpp's onednn_matmul, which the matmul kernel tries first for such products.
//
// Why not sgemm: the primitive (oneDNN's "brgemm" kernels on AVX-512 machines) runs this shape
// faster than oneDNN's sgemm and scales better across threads, and it applies bias and
// activation to each block of C while the block is still in the core that computed it. On the
// 2-core Intel Xeon VM, each alone in cache (median of 7, /tmp microbenchmark against
// dnnl_sgemm plus a separate bias-and-relu pass): 128 x 784 times 784 x 256 took 329 us at one
// thread and 184 us at two, against 339 and 222; 128 x 256 times 256 x 128 took 56 and 32 us
// against 69 and 55 (our own row split: 47). Plain-times-plain products ran as fast or faster
// through sgemm, so they keep that path, as do products below about 50^3. Between 50^3 and
// 100^3, sgemm won on a product alone in cache, but in training the primitive did: the MLP's
// classifier layer (128 x 128 times 128 x 10, bias fused) took 6.4-7.6 us per forward against
// 8.3-8.7 us at one thread and 12.4 us at two (sgemm split by rows, each call too small to pay
// for its thread), and the 2-thread speedup of a training step rose by 0.02-0.03 (1- and 2-thread
// epochs interleaved, three A/B pairs).
//
// A primitive costs 0.1-0.5 ms to create, so each thread keeps the ones it has made, keyed by
// everything that shapes the primitive: sizes, leading dimensions, bias, activation and the
// OpenMP thread count (oneDNN plans its split of the work for the count at creation).
#include <omp.h>
#include <dnnl.hpp>

#include <cstring>
#include <deque>
#include <optional>
#include <unordered_map>

#include "backend/cpu/gemm.hpp"
#include "backend/cpu/loops.hpp"
#include "backend/cpu/thresholds.hpp"
#include "backend/math.hpp"

namespace fx::backend::cpu {
namespace {

// kPrimitiveMinWork..kPrimitiveMaxWork (m n k multiply-adds, thresholds.hpp): from about 50^3
// the primitive beat sgemm in training (above); up to about 400^3, where matmul.cpp hands f32
// products from oneDNN to OpenBLAS. Each thread keeps kPrimitiveCacheEntries primitives: a
// model's distinct layer shapes, at both thread counts, with room.

struct Key {
  int64_t m, n, k, lda, ldb;
  bool bias;
  Epilogue act;
  int threads;
  bool operator==(const Key&) const = default;
};

struct Entry {
  Key key;
  std::optional<dnnl::matmul> prim;  // empty: oneDNN offers no fast kernel for this product
  // The primitive's arguments, made once: each call points them at its buffers (creating four
  // memory objects and a map per call cost ~2 us, as much as the fused epilogue saves on a
  // 128 x 256 x 128 product).
  std::unordered_map<int, dnnl::memory> args;
};

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The activation oneDNN applies itself. Not relu: its relu (and clip, and a max with zero) turns
// NaN into 0, where fx::relu keeps NaN, so relu runs as a pass of ours after the primitive.
std::optional<dnnl::algorithm> post_op(Epilogue act) {
  switch (act) {
    case Epilogue::identity: return std::nullopt;
    case Epilogue::relu: return std::nullopt;
    case Epilogue::tanh: return dnnl::algorithm::eltwise_tanh;
    case Epilogue::sigmoid: return dnnl::algorithm::eltwise_logistic;
  }
  return std::nullopt;
}

Entry make_entry(const Key& key) {
  using dnnl::memory;
  const auto f32 = memory::data_type::f32;
  const memory::desc src({key.m, key.k}, f32, memory::dims{key.lda, 1}),
      weights({key.k, key.n}, f32, memory::dims{1, key.ldb}),
      bias({1, key.n}, f32, memory::dims{key.n, 1}),
      dst({key.m, key.n}, f32, memory::dims{key.n, 1});
  Entry e{key, std::nullopt, {}};
  try {
    dnnl::post_ops ops;
    if (auto alg = post_op(key.act)) ops.append_eltwise(1.0f, *alg, 0.0f, 0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    const auto desc = key.bias ? dnnl::matmul::desc(src, weights, bias, dst)
                               : dnnl::matmul::desc(src, weights, dst);
    const dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
    // Only the blocked kernels are worth it; a reference implementation would be far slower
    // than sgemm.
    if (std::strncmp(pd.impl_info_str(), "brg", 3) != 0) return e;
    e.prim.emplace(pd);
    auto arg = [&](int id, const memory::desc& d) {
      e.args.emplace(id, memory(d, cpu_engine(), DNNL_MEMORY_NONE));
    };
    arg(DNNL_ARG_SRC, src);
    arg(DNNL_ARG_WEIGHTS, weights);
    arg(DNNL_ARG_DST, dst);
    if (key.bias) arg(DNNL_ARG_BIAS, bias);
  } catch (const dnnl::error&) {
    // No implementation for this combination: sgemm takes it.
  }
  return e;
}

// fx::relu over a block of C, in place. Kept out of line so that it vectorises: inlined into
// the split below, GCC 12 compiled it to a compare and branch per element, and the branches,
// taken for about half of a layer's random signs, cost 160 us on 128 x 256 (5 ns an element).
__attribute__((noinline)) void relu_in_place(float* __restrict o, int64_t count) {
  for (int64_t i = 0; i < count; ++i) o[i] = math::Relu{}(o[i]);
}

Entry& entry_for(const Key& key) {
  thread_local std::deque<Entry> cache;
  for (Entry& e : cache)
    if (e.key == key) return e;
  if (cache.size() == kPrimitiveCacheEntries) cache.pop_front();
  cache.push_back(make_entry(key));
  return cache.back();
}

}  // namespace

bool onednn_matmul(const Tensor& a, const Tensor& b, const Tensor& out, const GemmEpilogue& epi) {
  if (a.dtype() != f32 || a.ndim() != 2 || b.ndim() != 2 || omp_in_parallel()) return false;
  if (epi.fn && !epi.described) return false;
  const int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  const int64_t work = m * n * k;
  // a dense by rows, b the transpose of a dense (n, k) weight: the shape measured above.
  if (work < kPrimitiveMinWork || work > kPrimitiveMaxWork || a.stride(1) != 1 || a.stride(0) < k ||
      b.stride(0) != 1 || b.stride(1) < k || !out.is_contiguous())
    return false;
  const Tensor* bias = epi.described ? epi.bias : nullptr;
  if (bias && (bias->dtype() != f32 || bias->ndim() != 1 || bias->shape()[0] != n ||
               (n > 1 && bias->stride(0) != 1)))
    return false;
  const Epilogue act = epi.described ? epi.act : Epilogue::identity;
  Entry& e =
      entry_for({m, n, k, a.stride(0), b.stride(1), bias != nullptr, act, omp_get_max_threads()});
  if (!e.prim) return false;
  // oneDNN's handles are non-const; it only reads sources, weights and bias.
  auto point = [&](int id, const Tensor& t) {
    e.args.at(id).set_data_handle(const_cast<float*>(t.data<float>()));
  };
  point(DNNL_ARG_SRC, a);
  point(DNNL_ARG_WEIGHTS, b);
  point(DNNL_ARG_DST, out);
  if (bias) point(DNNL_ARG_BIAS, *bias);
  thread_local dnnl::stream stream(cpu_engine());
  e.prim->execute(stream, e.args);
  stream.wait();
  if (act == Epilogue::relu) {
    float* o = out.data<float>();
    split_range(m, team_for(m * n, kReluEpilogueParallelMin),
                [&](int64_t r0, int64_t r1) { relu_in_place(o + r0 * n, (r1 - r0) * n); });
  }
  return true;
}

}  // namespace fx::backend::cpu
