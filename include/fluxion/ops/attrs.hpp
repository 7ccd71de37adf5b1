// Typed attributes of a primitive application: each primitive (or family of primitives) declares
// a small struct naming its attributes, and bind passes it by reference. The tape and the graph
// IR copy it as bytes, so recording costs no allocation; printing, hashing and comparing come
// from the field list, so no primitive writes them.
//
//   #include <sstream>
//   struct WindowAttrs {
//     int64_t axis = 0, start = 0, length = 0, step = 1;
//     FX_ATTRS(WindowAttrs, axis, start, length, step)
//   };
//   WindowAttrs w{.axis = 1, .start = 2, .length = 3};
//   fx::Attrs a = w;                          // a typed reference: no copy
//   const WindowAttrs& back = a.get<WindowAttrs>();
//   std::ostringstream os;
//   os << a;                                  // "axis=1 start=2 length=3 step=1"
//   bool same = a == fx::Attrs(back);         // field by field
//   uint64_t h = fx::hash(a);                 // equal attributes hash equally
//   (void)same; (void)h;
//
// bind(p, {x}, fx::SliceAttrs{...}) refers to the temporary for the call's duration; a rule reads
// its application's attributes with args.attrs<fx::SliceAttrs>().
//
// An attribute struct is trivially copyable (numbers, enums, bool, fx::Shape, fixed arrays of
// numbers) with at most one `fx::IntList`: a variable-length list (concat's sizes) the struct
// only views. Whoever keeps attributes beyond the call (the tape, fx::Graph, AttrStore) copies
// the list's ints beside the struct and repoints it.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <iosfwd>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "fluxion/core/dtype.hpp"
#include "fluxion/core/error.hpp"
#include "fluxion/core/shape.hpp"

// Declares an attribute struct's name and fields (in the order they print). The members are
// FX_FIELDS' (fluxion/core/fields.hpp), so the traversal walks attribute structs too.
#define FX_ATTRS(Type, ...)                                                   \
  auto fx_fields() { return std::tie(__VA_ARGS__); }                          \
  auto fx_fields() const { return std::tie(__VA_ARGS__); }                    \
  static constexpr std::string_view fx_field_names() { return #__VA_ARGS__; } \
  static constexpr const char* fx_attr_name() { return #Type; }

namespace fx {

// A view of a variable-length list of ints inside an attribute struct.
struct IntList {
  const int64_t* data = nullptr;
  size_t count = 0;
  IntList() = default;
  IntList(std::span<const int64_t> s) : data(s.data()), count(s.size()) {}     // NOLINT: implicit
  IntList(const std::vector<int64_t>& v) : data(v.data()), count(v.size()) {}  // NOLINT: implicit
  size_t size() const { return count; }
  bool empty() const { return count == 0; }
  int64_t operator[](size_t i) const { return data[i]; }
  const int64_t* begin() const { return data; }
  const int64_t* end() const { return data + count; }
  std::span<const int64_t> span() const { return {data, count}; }
};

// What generic code knows of an attribute struct: its size, its list and how to print, hash and
// compare it. One constant per struct (attr_type<A>), found through the Attrs reference.
struct AttrType {
  const char* name;
  uint32_t size;
  IntList* (*list)(void* attrs);  // the struct's IntList field, or null when it has none
  void (*print)(std::ostream& os, const void* attrs);
  uint64_t (*hash)(const void* attrs);
  bool (*equal)(const void* a, const void* b);
};

namespace detail {
template <class T>
struct is_std_array_attr : std::false_type {};
template <class T, size_t N>
struct is_std_array_attr<std::array<T, N>> : std::true_type {};

inline uint64_t mix(uint64_t h, uint64_t v) {
  return (h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2))) * 0xff51afd7ed558ccdull;
}
template <class F>
uint64_t hash_field(const F& f) {
  if constexpr (std::is_same_v<F, Shape>) {
    uint64_t h = uint64_t(f.size());
    for (int64_t d : f) h = mix(h, uint64_t(d));
    return h;
  } else if constexpr (std::is_same_v<F, IntList>) {
    uint64_t h = f.size();
    for (int64_t d : f) h = mix(h, uint64_t(d));
    return h;
  } else if constexpr (is_std_array_attr<F>::value) {
    uint64_t h = f.size();
    for (const auto& v : f) h = mix(h, hash_field(v));
    return h;
  } else if constexpr (std::is_floating_point_v<F>) {
    double d = f == 0 ? 0.0 : double(f);  // -0 and 0 compare equal, so they hash equally
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    return bits;
  } else {
    static_assert(std::is_integral_v<F> || std::is_enum_v<F>,
                  "FX_ATTRS fields are numbers, enums, bool, fx::Shape, std::array or fx::IntList");
    return uint64_t(f);
  }
}
template <class F>
bool equal_field(const F& a, const F& b) {
  if constexpr (std::is_same_v<F, IntList>)
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  else return a == b;
}
void print_attr_field(std::ostream& os, int64_t v);
void print_attr_field(std::ostream& os, double v);
void print_attr_field(std::ostream& os, const Shape& v);
void print_attr_field(std::ostream& os, IntList v);
void print_attr_field(std::ostream& os, DType v);
template <class F>
void print_field(std::ostream& os, const F& f) {
  if constexpr (std::is_same_v<F, Shape> || std::is_same_v<F, IntList> || std::is_same_v<F, DType>)
    print_attr_field(os, f);
  else if constexpr (is_std_array_attr<F>::value)
    print_attr_field(os, IntList(std::span<const int64_t>(f.data(), f.size())));
  else if constexpr (std::is_floating_point_v<F>) print_attr_field(os, double(f));
  else print_attr_field(os, int64_t(f));
}
// Prints "name=value" for each field, names taken from the FX_ATTRS list.
void print_attr_names(std::ostream& os, std::string_view names, int index);

template <class F>
IntList* as_list(F& f) {
  if constexpr (std::is_same_v<F, IntList>) return &f;
  else return nullptr;
}

template <class A>
constexpr AttrType make_attr_type() {
  static_assert(std::is_trivially_copyable_v<A>, "attribute structs are trivially copyable");
  static_assert(alignof(A) <= alignof(uint64_t), "attribute structs are at most 8-aligned");
  AttrType t{};
  t.name = A::fx_attr_name();
  t.size = uint32_t(sizeof(A));
  t.list = [](void* p) -> IntList* {
    IntList* found = nullptr;
    std::apply([&](auto&... f) { ((found = found ? found : as_list(f)), ...); },
               static_cast<A*>(p)->fx_fields());
    return found;
  };
  t.print = [](std::ostream& os, const void* p) {
    int k = 0;
    std::apply(
        [&](const auto&... f) {
          ((print_attr_names(os, A::fx_field_names(), k++), print_field(os, f)), ...);
        },
        static_cast<const A*>(p)->fx_fields());
  };
  t.hash = [](const void* p) {
    uint64_t h = 0;
    std::apply([&](const auto&... f) { ((h = mix(h, hash_field(f))), ...); },
               static_cast<const A*>(p)->fx_fields());
    return h;
  };
  t.equal = [](const void* a, const void* b) {
    return std::apply(
        [&](const auto&... fa) {
          return std::apply([&](const auto&... fb) { return (equal_field(fa, fb) && ...); },
                            static_cast<const A*>(b)->fx_fields());
        },
        static_cast<const A*>(a)->fx_fields());
  };
  return t;
}
}  // namespace detail

template <class A>
inline constexpr AttrType attr_type = detail::make_attr_type<A>();

namespace detail {
[[noreturn]] void wrong_attrs(const AttrType* have, const AttrType& want);
}

// A typed reference to one application's attributes (or to none): what bind, forwards, kernels
// and rules pass around. Cheap to copy; valid while the referenced struct lives.
class Attrs {
 public:
  Attrs() = default;
  template <class A>
    requires requires { A::fx_attr_name(); }
  Attrs(const A& a) : type_(&attr_type<A>), data_(&a) {}  // NOLINT: implicit, bind(p, {x}, A{..})
  Attrs(const AttrType* type, const void* data) : type_(type), data_(data) {}

  // The attributes as A: an fx::Error (naming both types) when they are of another type.
  template <class A>
  const A& get() const {
    if (type_ != &attr_type<A>) [[unlikely]]
      if (!type_ || std::string_view(type_->name) != A::fx_attr_name())
        detail::wrong_attrs(type_, attr_type<A>);
    return *static_cast<const A*>(data_);
  }
  const AttrType* type() const { return type_; }
  const void* data() const { return data_; }
  bool empty() const { return type_ == nullptr; }

 private:
  const AttrType* type_ = nullptr;
  const void* data_ = nullptr;
};
std::ostream& operator<<(std::ostream& os, Attrs a);  // "f1=v1 f2=v2"; nothing when empty
bool operator==(Attrs a, Attrs b);                    // same type and equal fields
uint64_t hash(Attrs a);

// An owned copy of attributes, list included (fx::Graph's equations, rules that keep them).
class AttrStore {
 public:
  AttrStore() = default;
  explicit AttrStore(Attrs a) { assign(a); }
  AttrStore(const AttrStore& o) { assign(o.view()); }
  AttrStore& operator=(const AttrStore& o) {
    if (this != &o) assign(o.view());
    return *this;
  }
  void assign(Attrs a);
  Attrs view() const { return {type_, type_ ? words_.data() : nullptr}; }

 private:
  const AttrType* type_ = nullptr;
  std::vector<uint64_t> words_;
  std::vector<int64_t> list_;
};

// ---- attribute structs shared by many primitives (families define their own beside them)

// A scalar operand (x + s, x * s, x ^ s, clamp bounds ...).
struct ScalarAttrs {
  double s = 0;
  FX_ATTRS(ScalarAttrs, s)
};
// Two scalar operands (clamp's bounds, an elementwise op with two numbers).
struct ScalarPairAttrs {
  double lo = 0, hi = 0;
  FX_ATTRS(ScalarPairAttrs, lo, hi)
};
// A target shape (reshape, expand, sum_to) or an axis order (permute).
struct ShapeAttrs {
  Shape shape;
  FX_ATTRS(ShapeAttrs, shape)
};
// Reductions: the reduced axes as a bit mask, whether they are kept as size 1, and the input's
// shape (the pullback broadcasts back to it).
struct ReduceAttrs {
  uint64_t axes = 0;
  bool keepdims = false;
  Shape input_shape;
  FX_ATTRS(ReduceAttrs, axes, keepdims, input_shape)
};
// An axis of an operand whose whole shape the rule needs (index_select, gather, scatter: the
// shape of the indexed tensor).
struct AxisAttrs {
  int64_t axis = 0;
  Shape shape;
  FX_ATTRS(AxisAttrs, axis, shape)
};
// A dtype (astype's source, creation ops).
struct DTypeAttrs {
  DType dtype = DType::f32;
  FX_ATTRS(DTypeAttrs, dtype)
};
// reshape and expand: the target shape and the input's (the pullback's target).
struct ReshapeAttrs {
  Shape shape, input_shape;
  FX_ATTRS(ReshapeAttrs, shape, input_shape)
};
// A strided slice along one axis: `length` elements from `start`, every `step`-th; `shape` is
// the whole tensor's (the input of slice, the output of its adjoint pad_slice and of slice_set).
struct SliceAttrs {
  int64_t axis = 0, start = 0, length = 0, step = 1;
  Shape shape;
  FX_ATTRS(SliceAttrs, axis, start, length, step, shape)
};
// concat: the axis and each input's size along it.
struct ConcatAttrs {
  int64_t axis = 0;
  IntList sizes;
  FX_ATTRS(ConcatAttrs, axis, sizes)
};

// fft: y = scale * sum_n x[n] exp(sign * 2 pi i k n / N) along `axis` (non-negative).
struct FftAttrs {
  int64_t axis = 0, sign = -1;
  double scale = 1;
  FX_ATTRS(FftAttrs, axis, sign, scale)
};

}  // namespace fx
