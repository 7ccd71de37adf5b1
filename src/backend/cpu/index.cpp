// Tuned CPU kernels for indexing (index_select/gather, index_add/scatter_add) and for the layout
// primitives that write into part of an output (concat, pad_slice, slice_set).
//
// Every kernel here is a strided copy or accumulation over a collapsed layout (loops.hpp), cut
// into maximal innermost runs so that a run with unit strides is one memcpy or one vectorisable
// loop. index_select is gather with an index that varies along one axis only (its strides are 0
// elsewhere), and index_add is scatter_add likewise: the run then shares one index, which is
// looked up and checked once per run instead of once per element.
//
// Out-of-range indices are flagged inside the (possibly parallel) loops and skipped; afterwards
// the index is rescanned in the reference backend's order so that the fx::Error names the same
// first bad index the reference would (no exception may leave an OpenMP region).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "backend/backends.hpp"
#include "backend/cpu/loops.hpp"
#include "backend/cpu/thresholds.hpp"

namespace fx::backend::cpu {
namespace {

// Calls row(offsets[K], n, inner_strides[K]) for elements [e0, e1) of L in row-major order, cut
// into runs along the innermost dimension. Serial: callers split element ranges across threads.
template <int K, class Row>
void for_range(const Layout<K>& L, int64_t e0, int64_t e1, Row&& row) {
  if (e0 >= e1) return;
  const int nd = L.nd;
  int64_t idx[kMaxDims];
  int64_t off[K] = {};
  int64_t rem = e0;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % L.shape[d];
    rem /= L.shape[d];
    for (int k = 0; k < K; ++k) off[k] += idx[d] * L.st[k][d];
  }
  const int64_t inner = L.shape[nd - 1];
  int64_t ist[K];
  for (int k = 0; k < K; ++k) ist[k] = L.st[k][nd - 1];
  for (int64_t e = e0;;) {
    const int64_t n = std::min(inner - idx[nd - 1], e1 - e);
    row(static_cast<const int64_t*>(off), n, static_cast<const int64_t*>(ist));
    e += n;
    if (e >= e1) return;
    // The run ended at the end of its row: rewind the inner dimension, carry into the others.
    for (int k = 0; k < K; ++k) off[k] -= idx[nd - 1] * ist[k];
    idx[nd - 1] = 0;
    for (int d = nd - 2; d >= 0; --d) {
      for (int k = 0; k < K; ++k) off[k] += L.st[k][d];
      if (++idx[d] < L.shape[d]) break;
      for (int k = 0; k < K; ++k) off[k] -= L.st[k][d] * L.shape[d];
      idx[d] = 0;
    }
  }
}

int threads_for(int64_t work) { return team_for(work); }

// for_range over all `total` elements of L, split into equal element ranges across threads.
// Only for kernels whose runs write disjoint memory.
template <int K, class Row>
void parallel_range(const Layout<K>& L, int64_t total, const Row& row) {
  split_range(total, threads_for(total),
              [&](int64_t lo, int64_t hi) { for_range(L, lo, hi, row); });
}

template <class T>
inline void copy_run(T* d, const T* s, int64_t n, int64_t ds, int64_t ss) {
  if (ds == 1 && ss == 1) {
    std::memcpy(d, s, size_t(n) * sizeof(T));
  } else if (ss == 0) {  // a broadcast value (slice_set's expanded operand, a zero base)
    const T v = *s;
    if (ds == 1) std::fill(d, d + n, v);
    else
      for (int64_t j = 0; j < n; ++j) d[j * ds] = v;
  } else {
    for (int64_t j = 0; j < n; ++j) d[j * ds] = s[j * ss];
  }
}

template <class T>
inline void add_run(T* d, const T* s, int64_t n, int64_t ds, int64_t ss) {
  if (ds == 1 && ss == 1) {
    for (int64_t j = 0; j < n; ++j) d[j] += s[j];
  } else {
    for (int64_t j = 0; j < n; ++j) d[j * ds] += s[j * ss];
  }
}

// dst (strides dst_st, same shape as src) = src, any strides; disjoint writes, so parallel.
template <class T>
void copy_strided(T* dst, const int64_t* dst_st, const Tensor& src) {
  const int64_t total = src.numel();
  if (total == 0) return;
  const T* sp = src.data<T>();
  parallel_range(collapse<2>(src.shape(), {dst_st, src.strides()}), total,
                 [&](const int64_t* off, int64_t n, const int64_t* st) {
                   copy_run(dst + off[0], sp + off[1], n, st[0], st[1]);
                 });
}

template <class Fn>
bool with_index_type(DType t, Fn&& fn) {
  if (t == i64) return fn.template operator()<int64_t>(), true;
  if (t == i32) return fn.template operator()<int32_t>(), true;
  return false;
}

// Wraps a negative index once; anything still outside [0, size) is out of range.
inline bool wrap_index(int64_t& v, int64_t size) {
  v += v < 0 ? size : 0;
  return uint64_t(v) < uint64_t(size);
}

// Throws the reference backend's error for the first out-of-range index in row-major order of
// `shape`, the index read with strides `ist`. Only reached once a kernel has seen a bad index.
template <class I>
[[noreturn]] void throw_bad_index(const Shape& shape, const int64_t* ist, const I* ip, int64_t size,
                                  const char* op, const Shape& big) {
  for (int64_t i = 0, n = shape.numel(); i < n; ++i) {
    int64_t rem = i, off = 0;
    for (int d = shape.size() - 1; d >= 0; --d) {
      off += (rem % shape[d]) * ist[d];
      rem /= shape[d];
    }
    const int64_t given = ip[off];
    int64_t v = given;
    FX_CHECK(wrap_index(v, size), "fx::", op, ": index ", given,
             " is out of range for axis of size ", size, " in shape ", big);
  }
  detail::fail("fx::", op, ": an index is out of range for axis of size ", size, " in shape ", big);
}

// The operands of a gather or scatter, as strides over the iterated shape: out (or the
// scatter's source), the index, and the indexed tensor with the axis's stride zeroed (the index
// supplies that coordinate, times `axis_stride`).
struct IndexPlan {
  Shape shape;  // the iterated shape
  int64_t idx_st[kMaxDims];
  int64_t big_st[kMaxDims];
  int64_t axis_stride;  // the indexed tensor's stride along the axis
  int64_t size;         // the indexed tensor's length along the axis
};

// Strides of a 1-d contiguous index seen over `shape`: it advances along `axis` only.
void along_axis_only(const Shape& shape, int axis, int64_t* st) {
  for (int d = 0; d < shape.size(); ++d) st[d] = d == axis ? 1 : 0;
}

IndexPlan plan(const Shape& shape, const int64_t* idx_st, const Tensor& big, int axis) {
  IndexPlan p;
  p.shape = shape;
  for (int d = 0; d < shape.size(); ++d) {
    p.idx_st[d] = idx_st[d];
    p.big_st[d] = d == axis ? 0 : big.stride(d);
  }
  p.axis_stride = big.stride(axis);
  p.size = big.shape()[axis];
  return p;
}

// out[p] = x[p with the axis coordinate replaced by idx[p]]; out contiguous over p.shape.
template <class T, class I>
void gather_kernel(const Tensor& out, const Tensor& x, const I* ip, const IndexPlan& p,
                   const char* op) {
  const int64_t total = p.shape.numel();
  if (total == 0) return;  // the reference reads (and checks) no index either
  const int64_t size = p.size, sa = p.axis_stride;
  if (size == 0) throw_bad_index(p.shape, p.idx_st, ip, size, op, x.shape());
  T* op_ = out.data<T>();
  const T* xp = x.data<T>();
  std::atomic<bool> bad{false};
  parallel_range(collapse<3>(p.shape, {out.strides(), p.idx_st, p.big_st}), total,
                 [&](const int64_t* off, int64_t n, const int64_t* st) {
                   T* o = op_ + off[0];
                   const I* ix = ip + off[1];
                   const T* xs = xp + off[2];
                   if (st[1] == 0) {  // one index for the whole run (index_select)
                     int64_t v = ix[0];
                     if (!wrap_index(v, size)) return bad.store(true, std::memory_order_relaxed);
                     return copy_run(o, xs + v * sa, n, st[0], st[2]);
                   }
                   bool ok = true;
                   for (int64_t j = 0; j < n; ++j) {
                     int64_t v = ix[j * st[1]];
                     if (!wrap_index(v, size)) [[unlikely]] {
                       ok = false;
                       v = 0;  // in bounds (size > 0); the result is thrown away
                     }
                     o[j * st[0]] = xs[j * st[2] + v * sa];
                   }
                   if (!ok) bad.store(true, std::memory_order_relaxed);
                 });
  if (bad.load()) throw_bad_index(p.shape, p.idx_st, ip, size, op, x.shape());
}

// out[p with the axis coordinate replaced by idx[p]] += src[p]; out already holds the base.
// Two elements collide only if they differ in the axis coordinate alone, so threads split a
// dimension other than the axis (each writes its own part of out); otherwise it runs serially.
template <class T, class I>
void scatter_kernel(const Tensor& out, const Tensor& src, const I* ip, const IndexPlan& p,
                    const char* op) {
  const int64_t total = p.shape.numel();
  if (total == 0) return;
  const int64_t size = p.size, sa = p.axis_stride;
  if (size == 0) throw_bad_index(p.shape, p.idx_st, ip, size, op, out.shape());
  T* op_ = out.data<T>();
  const T* sp = src.data<T>();
  // Operand 0 is the target, whose axis stride is zeroed: it is 0 in the collapsed layout
  // exactly on the axis (out is contiguous, and a zero stride never merges with a neighbour).
  const Layout<3> L = collapse<3>(p.shape, {p.big_st, p.idx_st, src.strides()});
  std::atomic<bool> bad{false};
  auto row = [&](const int64_t* off, int64_t n, const int64_t* st) {
    T* o = op_ + off[0];
    const I* ix = ip + off[1];
    const T* s = sp + off[2];
    if (st[1] == 0) {  // one index for the whole run (index_add)
      int64_t v = ix[0];
      if (!wrap_index(v, size)) return bad.store(true, std::memory_order_relaxed);
      return add_run(o + v * sa, s, n, st[0], st[2]);
    }
    bool ok = true;
    for (int64_t j = 0; j < n; ++j) {
      int64_t v = ix[j * st[1]];
      if (!wrap_index(v, size)) [[unlikely]] {
        ok = false;
        continue;
      }
      o[j * st[0] + v * sa] += s[j * st[2]];
    }
    if (!ok) bad.store(true, std::memory_order_relaxed);
  };
  const int threads = threads_for(total);
  int split = -1;  // the dimension threads divide: outermost long enough, else the longest
  if (threads > 1) {
    for (int d = 0; d < L.nd && split < 0; ++d)
      if (L.st[0][d] != 0 && L.shape[d] >= kScatterSplitMinPerThread * threads) split = d;
    for (int d = 0; d < L.nd && split < 0; ++d)
      if (L.st[0][d] != 0 && L.shape[d] >= threads && (split < 0 || L.shape[d] > L.shape[split]))
        split = d;
  }
  if (split < 0) {
    for_range(L, 0, total, row);
  } else {
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t lo = L.shape[split] * t / nt, hi = L.shape[split] * (t + 1) / nt;
      Layout<3> part = L;
      part.shape[split] = hi - lo;
      int64_t base[3];
      for (int k = 0; k < 3; ++k) base[k] = lo * L.st[k][split];
      int64_t count = 1;
      for (int d = 0; d < part.nd; ++d) count *= part.shape[d];
      for_range(part, 0, count, [&](const int64_t* off, int64_t n, const int64_t* st) {
        const int64_t moved[3] = {off[0] + base[0], off[1] + base[1], off[2] + base[2]};
        row(moved, n, st);
      });
    }
  }
  if (bad.load()) throw_bad_index(p.shape, p.idx_st, ip, size, op, out.shape());
}

bool index_select(const KernelCall& c) {
  const Tensor &x = c.in[0], &idx = c.in[1], &out = c.out;
  if (!out.is_contiguous() || !idx.is_contiguous()) return false;
  const int axis = int(c.attrs.get<AxisAttrs>().axis);
  int64_t ist[kMaxDims];
  along_axis_only(out.shape(), axis, ist);
  const IndexPlan p = plan(out.shape(), ist, x, axis);
  return with_index_type(idx.dtype(), [&]<class I>() {
    visit_dtype_all(x.dtype(), [&]<class T>() {
      gather_kernel<T, I>(out, x, idx.data<I>(), p, "index_select");
    });
  });
}

bool gather(const KernelCall& c) {
  const Tensor &x = c.in[0], &idx = c.in[1], &out = c.out;
  if (!out.is_contiguous()) return false;
  const IndexPlan p = plan(idx.shape(), idx.strides(), x, int(c.attrs.get<AxisAttrs>().axis));
  return with_index_type(idx.dtype(), [&]<class I>() {
    visit_dtype_all(x.dtype(),
                    [&]<class T>() { gather_kernel<T, I>(out, x, idx.data<I>(), p, "gather"); });
  });
}

bool index_add(const KernelCall& c) {
  const Tensor &base = c.in[0], &idx = c.in[1], &src = c.in[2], &out = c.out;
  if (!out.is_contiguous() || !idx.is_contiguous()) return false;
  const int axis = int(c.attrs.get<AxisAttrs>().axis);
  int64_t ist[kMaxDims];
  along_axis_only(src.shape(), axis, ist);
  const IndexPlan p = plan(src.shape(), ist, out, axis);
  return with_index_type(idx.dtype(), [&]<class I>() {
    visit_dtype_all(out.dtype(), [&]<class T>() {
      copy_strided<T>(out.data<T>(), out.strides(), base);
      scatter_kernel<T, I>(out, src, idx.data<I>(), p, "index_add");
    });
  });
}

bool scatter_add(const KernelCall& c) {
  const Tensor &base = c.in[0], &idx = c.in[1], &src = c.in[2], &out = c.out;
  if (!out.is_contiguous()) return false;
  const IndexPlan p = plan(idx.shape(), idx.strides(), out, int(c.attrs.get<AxisAttrs>().axis));
  return with_index_type(idx.dtype(), [&]<class I>() {
    visit_dtype_all(out.dtype(), [&]<class T>() {
      copy_strided<T>(out.data<T>(), out.strides(), base);
      scatter_kernel<T, I>(out, src, idx.data<I>(), p, "scatter_add");
    });
  });
}

// Writes `part` into the contiguous out at out[.., start + j*step, ..] along axis.
template <class T>
void write_slice(const Tensor& out, const Tensor& part, int axis, int64_t start, int64_t step) {
  int64_t st[kMaxDims];
  for (int d = 0; d < out.ndim(); ++d) st[d] = out.stride(d) * (d == axis ? step : 1);
  copy_strided<T>(out.data<T>() + start * out.stride(axis), st, part);
}

// out = zeros(shape) with dy written at the slice (params: axis, start, step).
bool pad_slice(const KernelCall& c) {
  const Tensor& out = c.out;
  if (!out.is_contiguous()) return false;
  visit_dtype_all(out.dtype(), [&]<class T>() {
    // Zeroing is memory-bound: threads help only on large outputs (all-zero bytes is 0 for
    // every dtype here, complex included).
    T* op = out.data<T>();
    const int64_t n = out.numel();
    if (n == 0) return;
    split_range(n, threads_for(n), [&](int64_t lo, int64_t hi) {
      std::memset(static_cast<void*>(op + lo), 0, size_t(hi - lo) * sizeof(T));
    });
    const SliceAttrs& s = c.attrs.get<SliceAttrs>();
    write_slice<T>(out, c.in[0], int(s.axis), s.start, s.step);
  });
  return true;
}

// out = base with value written at the slice (params as slice's: axis, start, length, step).
bool slice_set(const KernelCall& c) {
  const Tensor& out = c.out;
  if (!out.is_contiguous()) return false;
  visit_dtype_all(out.dtype(), [&]<class T>() {
    copy_strided<T>(out.data<T>(), out.strides(), c.in[0]);
    const SliceAttrs& s = c.attrs.get<SliceAttrs>();
    write_slice<T>(out, c.in[1], int(s.axis), s.start, s.step);
  });
  return true;
}

// concat copies the output a tile of kConcatTileBytes at a time: the tile of out stays in cache
// while every input writes its part of it, so narrow pieces (stack along a late axis) do not each
// sweep the whole output.

bool concat(const KernelCall& c) {
  const Tensor& out = c.out;
  if (!out.is_contiguous()) return false;
  const int axis = int(c.attrs.get<ConcatAttrs>().axis);
  const int64_t total = out.numel();
  if (total == 0) return true;
  int64_t outer = 1;  // positions before the axis; each owns a contiguous row of out
  for (int d = 0; d < axis; ++d) outer *= out.shape()[d];
  struct Piece {
    const Tensor* x;
    Layout<2> L;      // x into its place in out: (out strides, x strides) over x's shape
    int64_t at;       // x's first element in out
    int64_t per_row;  // x's elements per outer position
  };
  std::vector<Piece> pieces;
  pieces.reserve(c.in.size());
  int64_t at = 0;
  for (const Tensor& x : c.in) {
    if (x.numel() > 0)
      pieces.push_back({&x, collapse<2>(x.shape(), {out.strides(), x.strides()}),
                        at * out.stride(axis), x.numel() / outer});
    at += x.shape()[axis];
  }
  visit_dtype_all(out.dtype(), [&]<class T>() {
    T* op = out.data<T>();
    auto copy_rows = [&](const Piece& p, int64_t e0, int64_t e1) {
      const T* xp = p.x->data<T>();
      T* dst = op + p.at;
      for_range(p.L, e0, e1, [&](const int64_t* off, int64_t n, const int64_t* st) {
        copy_run(dst + off[0], xp + off[1], n, st[0], st[1]);
      });
    };
    const int64_t row_bytes = total / outer * int64_t(sizeof(T));
    const int64_t tile = std::max<int64_t>(1, kConcatTileBytes / row_bytes);
    const int64_t tiles = (outer + tile - 1) / tile;
    const int threads = threads_for(total);
    if (tiles >= threads) {
      split_range(tiles, threads, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t o0 = t * tile, o1 = std::min(outer, o0 + tile);
          for (const Piece& p : pieces) copy_rows(p, o0 * p.per_row, o1 * p.per_row);
        }
      });
    } else {  // few, long rows (concat along axis 0): split each piece's elements instead
      for (const Piece& p : pieces) {
        const int64_t n = p.x->numel();
        split_range(n, threads_for(n), [&](int64_t e0, int64_t e1) { copy_rows(p, e0, e1); });
      }
    }
  });
  return true;
}

}  // namespace

void register_index() {
  constexpr Device dev = Device::cpu;
  constexpr int r = kCpuRank;
  register_kernel(index_select_p, dev, r, index_select);
  register_kernel(index_add_p, dev, r, index_add);
  register_kernel(gather_p, dev, r, gather);
  register_kernel(scatter_add_p, dev, r, scatter_add);
  register_kernel(pad_slice_p, dev, r, pad_slice);
  register_kernel(slice_set_p, dev, r, slice_set);
  register_kernel(concat_p, dev, r, concat);
}

}  // namespace fx::backend::cpu
