// Reference kernels for indexing (index_select/index_add, gather/scatter_add) and for the
// layout primitives that write into part of an output (pad_slice, concat).
#include <cstring>

#include "backend/backends.hpp"

namespace fx::backend {
namespace {

int64_t checked_index(const Tensor& idx, int64_t at, int64_t dim_size, const char* op,
                      const Tensor& x) {
  const int64_t given =
      idx.dtype() == i64 ? idx.data<int64_t>()[at] : int64_t(idx.data<int32_t>()[at]);
  const int64_t v = given < 0 ? given + dim_size : given;
  FX_CHECK(v >= 0 && v < dim_size, "fx::", op, ": index ", given,
           " is out of range for axis of size ", dim_size, " in shape ", x.shape());
  return v;
}

// Copies src (any strides) into the contiguous tensor dst, elementwise, same dtype.
void copy_into(const Tensor& dst, const Tensor& src) {
  visit_dtype_all(src.dtype(), [&]<class T>() {
    const T* sp = src.data<T>();
    T* dp = dst.data<T>();
    for (int64_t i = 0, n = src.numel(); i < n; ++i) dp[i] = sp[offset_of(i, src)];
  });
}

// out[..., idx[j], ...] (+)= src[..., j, ...] along axis, or the reverse for select.
template <bool Select>
bool index_rows(const KernelCall& c) {
  const int axis = int(c.attrs.get<AxisAttrs>().axis);
  const Tensor& x = Select ? c.in[0] : c.in[2];  // data source
  const Tensor& idx = c.in[1];
  const Tensor& out = c.out;
  const char* op = Select ? "index_select" : "index_add";
  if (!Select) copy_into(out, c.in[0]);
  const Shape& big = Select ? x.shape() : out.shape();  // shape indexed by idx
  visit_dtype_all(x.dtype(), [&]<class T>() {
    const T* xp = x.data<T>();
    T* op_ = out.data<T>();
    const Shape& s = Select ? out.shape() : x.shape();  // iterate over the small side
    for (int64_t i = 0, n = s.numel(); i < n; ++i) {
      int64_t rem = i, j = 0;
      int64_t coords[kMaxDims];
      for (int d = s.size() - 1; d >= 0; --d) {
        coords[d] = rem % s[d];
        rem /= s[d];
      }
      j = coords[axis];
      coords[axis] = checked_index(idx, j, big[axis], op, Select ? x : out);
      if (Select) {
        int64_t xo = 0;
        for (int d = 0; d < s.size(); ++d) xo += coords[d] * x.stride(d);
        op_[i] = xp[xo];
      } else {
        int64_t oo = 0;
        for (int d = 0; d < s.size(); ++d) oo += coords[d] * out.stride(d);
        op_[oo] += xp[offset_of(i, x)];
      }
    }
  });
  return true;
}

// gather: out[i] = x[i with axis coord replaced by idx[i]]; scatter_add: the adjoint.
template <bool Gather>
bool gather_scatter(const KernelCall& c) {
  const int axis = int(c.attrs.get<AxisAttrs>().axis);
  const Tensor& idx = c.in[1];
  const Tensor& out = c.out;
  const Tensor& x = Gather ? c.in[0] : c.in[2];
  const char* op = Gather ? "gather" : "scatter_add";
  if (!Gather) copy_into(out, c.in[0]);
  const Tensor& big = Gather ? x : out;
  const Shape& s = idx.shape();
  Tensor idxc = idx;
  visit_dtype_all(x.dtype(), [&]<class T>() {
    const T* xp = x.data<T>();
    T* op_ = out.data<T>();
    for (int64_t i = 0, n = s.numel(); i < n; ++i) {
      int64_t rem = i, big_off = 0;
      for (int d = s.size() - 1; d >= 0; --d) {
        int64_t cd = rem % s[d];
        rem /= s[d];
        if (d == axis) cd = checked_index(idxc, offset_of(i, idx), big.shape()[axis], op, big);
        big_off += cd * big.stride(d);
      }
      if (Gather) op_[i] = xp[big_off];
      else op_[big_off] += xp[offset_of(i, x)];
    }
  });
  return true;
}

// out = zeros(params.shape); out[.., start + j*step, ..] = dy[.., j, ..] along params.i[0].
// Writes `part` into out at out[.., start + j*step, ..] along axis (out already initialised).
void write_slice(const Tensor& out, const Tensor& part, int axis, int64_t start, int64_t step) {
  visit_dtype_all(part.dtype(), [&]<class T>() {
    const T* dp = part.data<T>();
    T* op = out.data<T>();
    const Shape& s = part.shape();
    for (int64_t i = 0, n = s.numel(); i < n; ++i) {
      int64_t rem = i, oo = 0;
      for (int d = s.size() - 1; d >= 0; --d) {
        int64_t cd = rem % s[d];
        rem /= s[d];
        if (d == axis) cd = start + cd * step;
        oo += cd * out.stride(d);
      }
      op[oo] = dp[offset_of(i, part)];
    }
  });
}

// out = zeros(params.shape) with dy written at the slice (params: axis, start, step).
bool pad_slice(const KernelCall& c) {
  const Tensor& out = c.out;
  std::memset(out.raw_data(), 0, size_t(out.numel()) * itemsize(out.dtype()));
  const SliceAttrs& s = c.attrs.get<SliceAttrs>();
  write_slice(out, c.in[0], int(s.axis), s.start, s.step);
  return true;
}

// out = base with value written at the slice (params as slice's: axis, start, length, step).
bool slice_set(const KernelCall& c) {
  copy_into(c.out, c.in[0]);
  const SliceAttrs& s = c.attrs.get<SliceAttrs>();
  write_slice(c.out, c.in[1], int(s.axis), s.start, s.step);
  return true;
}

bool concat(const KernelCall& c) {
  const int axis = int(c.attrs.get<ConcatAttrs>().axis);
  const Tensor& out = c.out;
  int64_t at = 0;
  for (const Tensor& x : c.in) {
    visit_dtype_all(x.dtype(), [&]<class T>() {
      const T* xp = x.data<T>();
      T* op = out.data<T>();
      const Shape& s = x.shape();
      for (int64_t i = 0, n = s.numel(); i < n; ++i) {
        int64_t rem = i, oo = 0;
        for (int d = s.size() - 1; d >= 0; --d) {
          int64_t cd = rem % s[d];
          rem /= s[d];
          if (d == axis) cd += at;
          oo += cd * out.stride(d);
        }
        op[oo] = xp[offset_of(i, x)];
      }
    });
    at += x.shape()[axis];
  }
  return true;
}

}  // namespace

void register_reference_index() {
  constexpr Device cpu = Device::cpu;
  constexpr int r = kReferenceRank;
  register_kernel(index_select_p, cpu, r, index_rows<true>);
  register_kernel(index_add_p, cpu, r, index_rows<false>);
  register_kernel(gather_p, cpu, r, gather_scatter<true>);
  register_kernel(scatter_add_p, cpu, r, gather_scatter<false>);
  register_kernel(pad_slice_p, cpu, r, pad_slice);
  register_kernel(slice_set_p, cpu, r, slice_set);
  register_kernel(concat_p, cpu, r, concat);
}

void register_reference_elementwise();
void register_reference_reduce();
void register_reference_linalg();
void register_reference_complex();
void register_reference_conv();
void register_reference_pool();

void register_reference() {
  register_reference_elementwise();
  register_reference_reduce();
  register_reference_linalg();
  register_reference_index();
  register_reference_complex();
  register_reference_conv();
  register_reference_pool();
}

}  // namespace fx::backend
