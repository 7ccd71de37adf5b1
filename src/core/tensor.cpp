// Tensor handle basics: allocation, layout queries, element access and printing.
#include "fluxion/core/tensor.hpp"

#include <cmath>
#include <iomanip>
#include <sstream>

namespace fx {

std::array<int64_t, kMaxDims> contiguous_strides(const Shape& s) {
  std::array<int64_t, kMaxDims> st{};
  int64_t acc = 1;
  for (int i = s.size() - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  TensorImpl* p = TensorImpl::create();
  p->dtype = dtype;
  p->shape = shape;
  // Written in place: building a std::array and copying it stalls on store forwarding, which
  // showed up as the single largest cost of a scalar-sized op.
  int64_t acc = 1;
  for (int i = shape.size() - 1; i >= 0; --i) {
    p->strides[i] = acc;
    acc *= shape[i];
  }
  Tensor t(p);  // owns p from here: released if no storage can be made (a device without backend)
  p->storage = Storage::create(size_t(shape.numel()) * itemsize(dtype), device);
  return t;
}

int64_t Tensor::size(int64_t axis) const {
  return p_->shape[normalize_axis(axis, ndim(), "fx::Tensor::size")];
}

void Tensor::check_dtype(DType want) const {
  FX_CHECK(p_, "fx::Tensor::data: undefined tensor");
  FX_CHECK(p_->dtype == want, "fx::Tensor::data: tensor is ", dtype_name(p_->dtype), ", asked for ",
           dtype_name(want));
  check_has_data("fx::Tensor::data");
}

namespace detail {
thread_local constinit int tracing_depth = 0;
bool tracing_active() { return tracing_depth > 0; }
}  // namespace detail

void Tensor::check_has_data(const char* op) const {
  if (p_->storage->data) return;
  if (p_->storage->extra)
    detail::fail(op, ": the value (", dtype_name(dtype()), " ", shape(),
                 ") is batched by fx::vmap, so it has no data of its own; C++ control flow on it "
                 "cannot be batched: use fx::where or fx::cond");
  if (detail::tracing_active())
    detail::fail(op, ": the value (", dtype_name(dtype()), " ", shape(),
                 ") depends on fx::trace's arguments, so it has no data while tracing; C++ control "
                 "flow on it cannot be traced: use fx::cond or fx::scan");
  detail::fail(op, ": tensor ", dtype_name(dtype()), " ", shape(), " on device ",
               device_name(device()), " has no data");
}

double Tensor::item() const {
  FX_CHECK(p_, "fx::Tensor::item: undefined tensor");
  check_has_data("fx::Tensor::item");
  FX_CHECK(numel() == 1, "fx::Tensor::item: needs one element, shape is ", shape());
  FX_CHECK(!is_complex(dtype()), "fx::Tensor::item: tensor is ", dtype_name(dtype()),
           "; use item_complex()");
  return visit_dtype(
      dtype(), [&]<class T>() { return double(static_cast<T*>(p_->storage->data)[p_->offset]); });
}

std::complex<double> Tensor::item_complex() const {
  FX_CHECK(p_, "fx::Tensor::item_complex: undefined tensor");
  check_has_data("fx::Tensor::item_complex");
  FX_CHECK(numel() == 1, "fx::Tensor::item_complex: needs one element, shape is ", shape());
  return visit_dtype_all(dtype(), [&]<class T>() {
    T v = static_cast<T*>(p_->storage->data)[p_->offset];
    if constexpr (is_complex_v<T>) return std::complex<double>(v);
    else return std::complex<double>(double(v), 0.0);
  });
}

namespace {

// Reads element `linear` (row-major over the view); real dtypes have a zero imaginary part.
std::complex<double> element(const Tensor& t, int64_t linear) {
  int64_t off = t.offset();
  for (int d = t.ndim() - 1; d >= 0; --d) {
    int64_t n = t.shape()[d];
    off += (linear % n) * t.stride(d);
    linear /= n;
  }
  return visit_dtype_all(t.dtype(), [&]<class T>() {
    T v = static_cast<T*>(t.storage()->data)[off];
    if constexpr (is_complex_v<T>) return std::complex<double>(v);
    else return std::complex<double>(double(v), 0.0);
  });
}

void print_element(std::ostream& os, DType dtype, std::complex<double> v) {
  if (is_complex(dtype)) {
    os << std::setprecision(5) << v.real() << (v.imag() < 0 || std::signbit(v.imag()) ? "-" : "+")
       << std::abs(v.imag()) << "i";
  } else if (is_floating(dtype)) {
    os << std::setprecision(5) << v.real();
  } else if (dtype == boolean) {
    os << (v.real() != 0 ? "true" : "false");
  } else {
    os << int64_t(v.real());
  }
}

void print_rec(std::ostream& os, const Tensor& t, int dim, int64_t base, int64_t block,
               int indent) {
  constexpr int64_t kEdge = 3;  // elements shown at each end of a long dimension
  int64_t n = t.shape()[dim];
  int64_t inner = block / std::max<int64_t>(n, 1);
  os << '[';
  for (int64_t i = 0; i < n; ++i) {
    if (n > 2 * kEdge + 1 && i == kEdge) {
      os << "...";
      i = n - kEdge - 1;
      os << (dim + 1 == t.ndim() ? ", " : ",\n" + std::string(indent + 1, ' '));
      continue;
    }
    if (dim + 1 == t.ndim()) {
      print_element(os, t.dtype(), element(t, base + i));
    } else {
      print_rec(os, t, dim + 1, base + i * inner, inner, indent + 1);
    }
    if (i + 1 < n) os << (dim + 1 == t.ndim() ? ", " : ",\n" + std::string(indent + 1, ' '));
  }
  os << ']';
}

}  // namespace

std::string Tensor::to_string() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor(undefined)";
  if (t.device() != Device::cpu)  // no host data to show (meta), or not here to read (cuda)
    return os << "Tensor(" << dtype_name(t.dtype()) << ", " << t.shape() << ", "
              << device_name(t.device()) << ")";
  os << "Tensor(" << dtype_name(t.dtype()) << ", " << t.shape() << ") ";
  if (t.ndim() == 0) {
    print_element(os, t.dtype(), element(t, 0));
    return os;
  }
  print_rec(os, t, 0, 0, t.numel(), 0);
  return os;
}

}  // namespace fx
