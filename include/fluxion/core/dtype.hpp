// Element types. f32 is the default; f64 is what gradient checks use; i64/i32 hold indices and
// labels; boolean holds masks (one byte per element).
//
//   auto x = fx::zeros({2, 3}, fx::f64);
//   if (fx::is_floating(x.dtype())) ...
//   fx::visit_dtype(x.dtype(), [&]<class T>() { T* p = x.data<T>(); ... });
#pragma once
#include <cstddef>
#include <cstdint>
#include <ostream>

#include "fluxion/core/error.hpp"

namespace fx {

enum class DType : uint8_t { boolean, i32, i64, f32, f64 };

inline constexpr DType boolean = DType::boolean;
inline constexpr DType i32 = DType::i32;
inline constexpr DType i64 = DType::i64;
inline constexpr DType f32 = DType::f32;
inline constexpr DType f64 = DType::f64;

constexpr size_t itemsize(DType t) {
  switch (t) {
    case DType::boolean: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::f32: return 4;
    case DType::f64: return 8;
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
  }
  return "?";
}

constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::f64; }

// The type both operands of a mixed-dtype binary op are converted to (bool < i32 < i64 < f32 < f64).
constexpr DType promote(DType a, DType b) { return a > b ? a : b; }

inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

template <class T> inline constexpr DType dtype_of = DType::f32;
template <> inline constexpr DType dtype_of<bool> = DType::boolean;
template <> inline constexpr DType dtype_of<int32_t> = DType::i32;
template <> inline constexpr DType dtype_of<int64_t> = DType::i64;
template <> inline constexpr DType dtype_of<float> = DType::f32;
template <> inline constexpr DType dtype_of<double> = DType::f64;

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
  }
  detail::fail("fx: invalid dtype ", int(t));
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
