// fx::Tensor: a cheap, reference-counted handle to a strided view of a Storage.
//
//   fx::Tensor x = fx::randn({2, 3});
//   fx::Tensor y = x;               // shares storage: no copy
//   fx::Tensor t = x.t();           // a view with swapped strides
//   float* p = x.data<float>();     // first element of the view
//   std::cout << x;                 // Tensor(f32, (2, 3)) [[...], [...]]
//
// Copying a Tensor copies a pointer and bumps a count. Shapes and strides live inline (at most 8
// dims). `tags` record which active AD tapes track this value (see fluxion/ad/tape.hpp): a tensor
// no differentiation is watching carries none and costs nothing extra.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>

#include "fluxion/core/dtype.hpp"
#include "fluxion/core/shape.hpp"
#include "fluxion/core/storage.hpp"

namespace fx {

// Marks a value as tracked by tape generation `tape`, under cotangent slot `slot`. `version` is
// the storage's version when the value was tagged: a later in-place write through another
// handle changes the data without the tape knowing, which AD reports instead of using.
struct Tag {
  uint32_t tape;
  uint32_t slot;
  uint32_t version;
};
inline constexpr int kMaxTags = 8;  // deepest nesting of differentiation

namespace detail {
// Non-zero while fx::trace runs on this thread (fluxion/ad/trace.hpp): errors about values without
// data then say why and what to use instead.
extern thread_local constinit int tracing_depth;
bool tracing_active();
}  // namespace detail

struct TensorImpl {
  std::atomic<int32_t> refs{1};
  DType dtype = DType::f32;
  uint8_t ntags = 0;
  Storage* storage = nullptr;
  int64_t offset = 0;  // in elements
  Shape shape;
  std::array<int64_t, kMaxDims> strides{};
  Tag tags[kMaxTags];

  static TensorImpl* create();  // pooled
  void release() {
    // A sole owner needs no atomic read-modify-write: no other thread holds a reference it could
    // copy from, so the count cannot change under us. Most temporaries die this way, and the
    // locked decrement was a large share of a small op's cost.
    if (refs.load(std::memory_order_acquire) == 1 ||
        refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
      destroy(this);
  }
  static void destroy(TensorImpl* p);
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(TensorImpl* impl) : p_(impl) {}  // adopts one reference
  Tensor(const Tensor& o) : p_(o.p_) {
    if (p_) p_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Tensor(Tensor&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  Tensor& operator=(const Tensor& o) {
    Tensor(o).swap(*this);
    return *this;
  }
  Tensor& operator=(Tensor&& o) noexcept {
    Tensor(std::move(o)).swap(*this);
    return *this;
  }
  ~Tensor() {
    if (p_) p_->release();
  }
  void swap(Tensor& o) noexcept { std::swap(p_, o.p_); }

  // A fresh contiguous tensor with uninitialised contents.
  static Tensor empty(const Shape& shape, DType dtype = f32, Device device = Device::cpu);

  bool defined() const { return p_ != nullptr; }
  explicit operator bool() const = delete;  // ambiguous: use defined() or fx::any(...)
  TensorImpl* impl() const { return p_; }

  DType dtype() const { return p_->dtype; }
  Device device() const { return p_->storage->device; }
  const Shape& shape() const { return p_->shape; }
  int ndim() const { return p_->shape.size(); }
  int64_t size(int64_t axis) const;  // negative axes count from the end
  int64_t numel() const { return p_->shape.numel(); }
  const int64_t* strides() const { return p_->strides.data(); }
  int64_t stride(int i) const { return p_->strides[i]; }
  int64_t offset() const { return p_->offset; }
  Storage* storage() const { return p_->storage; }
  bool is_contiguous() const {  // inline: kernels and pullbacks ask it of every operand
    int64_t acc = 1;
    for (int i = p_->shape.size() - 1; i >= 0; --i) {
      if (p_->shape[i] != 1 && p_->strides[i] != acc) return false;
      acc *= p_->shape[i];
    }
    return true;
  }
  bool same_storage(const Tensor& o) const { return p_->storage == o.p_->storage; }

  // always_inline: kernel files instantiate many loops, and past GCC's unit-growth limit it
  // stopped inlining even this (a call per operand per kernel, 3% of a small op).
  template <class T>
  [[gnu::always_inline]] T* data() const {
    if (!p_ || p_->dtype != dtype_of<T> || !p_->storage->data) [[unlikely]]
      check_dtype(dtype_of<T>);  // out of line: throws
    return static_cast<T*>(p_->storage->data) + p_->offset;
  }
  void* raw_data() const {
    if (!p_->storage->data) [[unlikely]]
      check_has_data("fx::Tensor::raw_data");
    return static_cast<char*>(p_->storage->data) + p_->offset * int64_t(itemsize(p_->dtype));
  }

  // The single element of a one-element tensor, converted to double (or T).
  double item() const;
  template <class T>
  T item() const {
    return static_cast<T>(item());
  }
  // The single element of a one-element tensor of any dtype, as a complex number.
  std::complex<double> item_complex() const;

  // Common view and conversion helpers (free functions in fluxion/ops do the same).
  Tensor contiguous() const;
  Tensor reshape(const Shape& s) const;
  Tensor reshape(std::initializer_list<int64_t> dims) const;  // one dim may be -1
  Tensor t() const;                                           // transpose of the last two dims
  Tensor astype(DType t) const;
  Tensor clone() const;  // a contiguous copy that owns its storage

  std::string to_string() const;

  // In-place updates (fluxion/ops/inplace.hpp): the storage is written, so every view of it
  // sees the change, and differentiation records the new value. Inside a differentiated
  // function a value the backward pass still needs must not be overwritten: fx::pullback then
  // throws fx::Error naming the op rather than returning a wrong gradient.
  Tensor& operator+=(const Tensor& o);
  Tensor& operator-=(const Tensor& o);
  Tensor& operator*=(const Tensor& o);
  Tensor& operator/=(const Tensor& o);
  Tensor& operator+=(double o);
  Tensor& operator-=(double o);
  Tensor& operator*=(double o);
  Tensor& operator/=(double o);
  Tensor& copy_(const Tensor& src);  // contents := src (broadcast, converted)
  Tensor& fill_(double value);
  // self[..., start:stop:step, ...] = value along axis (value broadcasts to the slice).
  Tensor& slice_assign(int64_t axis, int64_t start, int64_t stop, const Tensor& value,
                       int64_t step = 1);
  class ElementRef;
  // x.at({i, j}) = v; Tensor e = x.at({i, j});  (negative indices count from the end)
  ElementRef at(std::initializer_list<int64_t> index);

 private:
  void check_dtype(DType want) const;

 public:
  // Throws fx::Error, naming `op`, when this tensor holds no data (the meta device; inside
  // fx::trace, every value computed from the traced arguments).
  void check_has_data(const char* op) const;

 private:
  TensorImpl* p_ = nullptr;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// A reference to one element (or the sub-tensor at a prefix of indices) of a tensor.
class Tensor::ElementRef {
 public:
  ElementRef(Tensor& t, std::initializer_list<int64_t> index);
  ElementRef& operator=(const Tensor& value);
  ElementRef& operator=(double value);
  Tensor value() const;  // the current value (a view)
  operator Tensor() const { return value(); }

 private:
  Tensor& t_;
  int64_t index_[kMaxDims];
  int n_ = 0;
};

// Contiguous row-major strides of `s`.
std::array<int64_t, kMaxDims> contiguous_strides(const Shape& s);

}  // namespace fx
