// Element types. f32 is the default; f64 is what gradient checks use; i64/i32 hold indices and
// labels; boolean holds masks (one byte per element); c64/c128 are std::complex<float/double>.
//
//   auto x = fx::zeros({2, 3}, fx::f64);
//   bool real = fx::is_floating(x.dtype());                                      // true
//   fx::visit_dtype(x.dtype(), [&]<class T>() { T* p = x.data<T>(); p[0] = 1; });  // real dtypes
//   fx::visit_dtype_all(x.dtype(), [&]<class T>() { x.data<T>()[1] = T(2); });     // and complex
//
// Most code is written for ordered, real element types, so visit_dtype rejects complex tensors
// with an error; kernels that also handle std::complex (arithmetic, sums, copies, indexing) use
// visit_dtype_all.
#pragma once
#include <complex>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <type_traits>

#include <utility>

#include "fluxion/core/error.hpp"

namespace fx {

enum class DType : uint8_t { boolean, i32, i64, f32, f64, c64, c128 };

inline constexpr DType boolean = DType::boolean;
inline constexpr DType i32 = DType::i32;
inline constexpr DType i64 = DType::i64;
inline constexpr DType f32 = DType::f32;
inline constexpr DType f64 = DType::f64;
inline constexpr DType c64 = DType::c64;    // std::complex<float>
inline constexpr DType c128 = DType::c128;  // std::complex<double>

constexpr size_t itemsize(DType t) {
  switch (t) {
    case DType::boolean: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::c64: return 8;
    case DType::c128: return 16;
  }
  return 0;
}

constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::boolean: return "bool";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::c64: return "c64";
    case DType::c128: return "c128";
  }
  return "?";
}

constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::f64; }
constexpr bool is_complex(DType t) { return t == DType::c64 || t == DType::c128; }
// Floating or complex: the dtypes differentiation tracks (JAX calls them "inexact").
constexpr bool is_inexact(DType t) { return is_floating(t) || is_complex(t); }
// c64 -> f32, c128 -> f64; real dtypes are their own real part.
constexpr DType real_dtype(DType t) {
  return t == DType::c64 ? DType::f32 : t == DType::c128 ? DType::f64 : t;
}
// The complex dtype holding values of t: f64 (and c128) -> c128, anything else -> c64.
constexpr DType complex_dtype(DType t) {
  return (t == DType::f64 || t == DType::c128) ? DType::c128 : DType::c64;
}

// The type both operands of a mixed-dtype binary op are converted to (bool < i32 < i64 < f32 <
// f64 < c64 < c128), except that a complex operand with an f64 one gives c128 (as NumPy does:
// no precision is lost).
constexpr DType promote(DType a, DType b) {
  DType t = a > b ? a : b;
  if (is_complex(t) && (a == DType::f64 || b == DType::f64)) return DType::c128;
  return t;
}

inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

template <class T>
inline constexpr DType dtype_of = DType::f32;
template <>
inline constexpr DType dtype_of<bool> = DType::boolean;
template <>
inline constexpr DType dtype_of<int32_t> = DType::i32;
template <>
inline constexpr DType dtype_of<int64_t> = DType::i64;
template <>
inline constexpr DType dtype_of<float> = DType::f32;
template <>
inline constexpr DType dtype_of<double> = DType::f64;
template <>
inline constexpr DType dtype_of<std::complex<float>> = DType::c64;
template <>
inline constexpr DType dtype_of<std::complex<double>> = DType::c128;

template <class T>
struct is_complex_type : std::false_type {};
template <class T>
struct is_complex_type<std::complex<T>> : std::true_type {};
template <class T>
inline constexpr bool is_complex_v = is_complex_type<T>::value;

// Calls fn.template operator()<T>() with the C++ type of `t` (bool is stored as uint8_t... but
// exposed as bool, which has the same size on every supported platform).
template <class Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::boolean: return fn.template operator()<bool>();
    case DType::i32: return fn.template operator()<int32_t>();
    case DType::i64: return fn.template operator()<int64_t>();
    case DType::f32: return fn.template operator()<float>();
    case DType::f64: return fn.template operator()<double>();
    case DType::c64:
    case DType::c128:
      detail::fail("fx: this operation is not defined for complex tensors (", dtype_name(t),
                   "); see fx::real, fx::imag, fx::abs");
  }
  detail::fail("fx: invalid dtype ", int(t));
}

// visit_dtype, complex dtypes included (std::complex<float>, std::complex<double>).
template <class Fn>
decltype(auto) visit_dtype_all(DType t, Fn&& fn) {
  if (t == DType::c64) return fn.template operator()<std::complex<float>>();
  if (t == DType::c128) return fn.template operator()<std::complex<double>>();
  return visit_dtype(t, std::forward<Fn>(fn));
}

template <class Fn>
decltype(auto) visit_floating(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::f32: return fn.template operator()<float>();
    case DType::f64: return fn.template operator()<double>();
    default: detail::fail(op, ": needs a floating dtype (f32 or f64), got ", dtype_name(t));
  }
}

}  // namespace fx
