// In-place updates: compute the new value with ordinary (recorded) ops, write it into the
// tensor's storage, and give the handle the new value's AD identity.
#include "fluxion/ops/inplace.hpp"

#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/primitives.hpp"

namespace fx {
namespace {

bool tracked(const Tensor& x) { return detail::active_tape_count() != 0 && x.impl()->ntags != 0; }

// Writes z's values into x's storage (same shape; z already has x's dtype) and moves z's tags
// onto x, stamped with the storage's new version.
void overwrite(Tensor& x, const Tensor& z) {
  if (!z.device().has_data() && x.device().has_data())
    detail::fail("fx::Tensor: an in-place write of a ", device_name(z.device()), " value ",
                 z.shape(), " into a ", device_name(x.device()),
                 " tensor (inside fx::trace, a "
                 "captured tensor cannot be overwritten with a traced value)");
  bool rebound = false;
  if (!x.device().has_data()) {
    // No data to write (meta); under fx::trace x now names z's value in the graph.
    if (detail::tracing_depth != 0) detail::trace_alias(z, x);
  } else if (x.storage()->extra || z.storage()->extra) [[unlikely]] {
    // Under fx::vmap a batched x has no data to write into: the handle takes z's value (other
    // handles on x keep the old one). A tensor the whole batch shares cannot take a batched value.
    FX_CHECK(x.storage()->extra, "fx::vmap: an in-place write of a batched value ", z.shape(),
             " into a tensor shared by the whole batch; compute a new tensor instead");
    TensorImpl* xi = x.impl();
    z.storage()->retain();
    xi->storage->release();
    xi->storage = z.storage();
    xi->offset = z.offset();
    xi->strides = z.impl()->strides;
    rebound = true;
  } else if (z.impl() != x.impl()) {
    visit_dtype_all(x.dtype(), [&]<class T>() {
      T* xp = static_cast<T*>(x.storage()->data) + x.offset();
      const T* zp = static_cast<const T*>(z.storage()->data) + z.offset();
      const Shape& s = x.shape();
      const bool flat = x.is_contiguous() && z.is_contiguous();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) {
        if (flat) {
          xp[i] = zp[i];
          continue;
        }
        int64_t rem = i, xo = 0, zo = 0;
        for (int d = s.size() - 1; d >= 0; --d) {
          int64_t c = rem % s[d];
          rem /= s[d];
          xo += c * x.stride(d);
          zo += c * z.stride(d);
        }
        xp[xo] = zp[zo];
      }
    });
  }
  const uint32_t version = uint32_t(rebound ? x.storage()->version : ++x.storage()->version);
  TensorImpl* xi = x.impl();
  const TensorImpl* zi = z.impl();
  xi->ntags = zi->ntags;
  for (int k = 0; k < zi->ntags; ++k)
    xi->tags[k] = Tag{zi->tags[k].tape, zi->tags[k].slot, version};
}

void check_target(const Tensor& x, const char* op) {
  FX_CHECK(x.defined(), "fx::Tensor::", op, ": undefined tensor");
  for (int d = 0; d < x.ndim(); ++d)
    FX_CHECK(x.stride(d) != 0 || x.shape()[d] <= 1, "fx::Tensor::", op, ": cannot write into ",
             x.shape(), ", an expanded view whose elements share memory");
}

// x = f(x, other): the new value is computed out of place (recorded when a differentiation is
// watching either operand), then written back into x's storage.
template <class F>
Tensor& update(Tensor& x, const Tensor& other, const char* op, F f) {
  check_target(x, op);
  FX_CHECK(other.defined(), "fx::Tensor::", op, ": undefined operand");
  Tensor z;
  if (tracked(x) || (detail::active_tape_count() != 0 && other.impl()->ntags != 0)) {
    // Snapshots keep the values this update's own pullback reads out of the write's way.
    Tensor old = tracked(x) ? x.clone() : x;
    Tensor y = other.same_storage(x) ? other.clone() : other;
    z = f(old, y);
  } else {
    z = f(x, other);
  }
  FX_CHECK(broadcast_shapes(z.shape(), x.shape(), op) == x.shape(), "fx::Tensor::", op, ": result ",
           z.shape(), " does not fit the target ", x.shape());
  overwrite(x, expand(astype(z, x.dtype()), x.shape()));
  return x;
}

}  // namespace

Tensor& Tensor::operator+=(const Tensor& o) {
  return update(*this, o, "operator+=", [](const Tensor& a, const Tensor& b) { return a + b; });
}
Tensor& Tensor::operator-=(const Tensor& o) {
  return update(*this, o, "operator-=", [](const Tensor& a, const Tensor& b) { return a - b; });
}
Tensor& Tensor::operator*=(const Tensor& o) {
  return update(*this, o, "operator*=", [](const Tensor& a, const Tensor& b) { return a * b; });
}
Tensor& Tensor::operator/=(const Tensor& o) {
  return update(*this, o, "operator/=", [](const Tensor& a, const Tensor& b) { return a / b; });
}
Tensor& Tensor::operator+=(double o) {
  return *this += scalar(o, defined() ? dtype() : f32, defined() ? device() : Device::cpu);
}
Tensor& Tensor::operator-=(double o) {
  return *this += scalar(-o, defined() ? dtype() : f32, defined() ? device() : Device::cpu);
}
Tensor& Tensor::operator*=(double o) {
  return *this *= scalar(o, defined() ? dtype() : f32, defined() ? device() : Device::cpu);
}
Tensor& Tensor::operator/=(double o) {
  return *this *= scalar(1.0 / o, defined() ? dtype() : f32, defined() ? device() : Device::cpu);
}

Tensor& Tensor::copy_(const Tensor& src) {
  // The new value is a copy of src (recorded as one, so src's gradient flows).
  return update(*this, src, "copy_", [](const Tensor&, const Tensor& s) { return s.clone(); });
}

Tensor& Tensor::fill_(double value) {
  return copy_(scalar(value, defined() ? dtype() : f32, defined() ? device() : Device::cpu));
}

Tensor& Tensor::slice_assign(int64_t axis, int64_t start, int64_t stop, const Tensor& value,
                             int64_t step) {
  check_target(*this, "slice_assign");
  // slice_set's pullback reads neither operand, so no snapshot is needed.
  Tensor z = slice_set(*this, axis, start, stop, step, value);
  overwrite(*this, z);
  return *this;
}

Tensor::ElementRef Tensor::at(std::initializer_list<int64_t> index) { return {*this, index}; }

Tensor::ElementRef::ElementRef(Tensor& t, std::initializer_list<int64_t> index) : t_(t) {
  FX_CHECK(t.defined(), "fx::Tensor::at: undefined tensor");
  FX_CHECK(int(index.size()) <= t.ndim(), "fx::Tensor::at: ", index.size(), " indices for ",
           t.shape());
  for (int64_t i : index) {
    index_[n_] = normalize_index(i, n_, t.shape(), "fx::Tensor::at");
    ++n_;
  }
}

Tensor Tensor::ElementRef::value() const {
  Tensor v = t_;
  for (int k = 0; k < n_; ++k) v = select(v, 0, index_[k]);
  return v;
}

namespace {
// base with the sub-tensor at index[k..] replaced by value, one axis at a time.
Tensor set_at(const Tensor& base, const int64_t* index, int n, const Tensor& value) {
  if (n == 0) return expand(astype(value, base.dtype()), base.shape());
  int64_t i = index[0];
  Tensor row = squeeze(slice(base, 0, i, i + 1), 0);
  Tensor inner = set_at(row, index + 1, n - 1, value);
  return slice_set(base, 0, i, i + 1, 1, unsqueeze(inner, 0));
}
}  // namespace

Tensor::ElementRef& Tensor::ElementRef::operator=(const Tensor& value) {
  check_target(t_, "at");
  FX_CHECK(value.defined(), "fx::Tensor::at: undefined value");
  overwrite(t_, set_at(t_, index_, n_, value));
  return *this;
}

Tensor::ElementRef& Tensor::ElementRef::operator=(double value) {
  return *this = scalar(value, t_.dtype(), t_.device());
}

}  // namespace fx
