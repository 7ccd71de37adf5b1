// Shape: up to 8 dimensions, stored inline (no heap), printed as "(2, 3)".
//
//   fx::Shape s{128, 784};
//   s.numel();          // 100352
//   s.to_string();      // "(128, 784)"
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "fluxion/core/error.hpp"

namespace fx {

inline constexpr int kMaxDims = 8;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.size()); }
  explicit Shape(std::span<const int64_t> dims) { assign(dims.data(), dims.size()); }
  Shape(const std::vector<int64_t>& dims) { assign(dims.data(), dims.size()); }

  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t& operator[](int i) { return d_[i]; }
  const int64_t* data() const { return d_; }
  const int64_t* begin() const { return d_; }
  const int64_t* end() const { return d_ + n_; }
  int64_t back() const { return d_[n_ - 1]; }

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < n_; ++i) n *= d_[i];
    return n;
  }
  void push_back(int64_t v) {
    FX_CHECK(n_ < kMaxDims, "fx::Shape: more than ", kMaxDims, " dimensions");
    d_[n_++] = v;
  }
  void resize(int n) {
    FX_CHECK(n >= 0 && n <= kMaxDims, "fx::Shape: more than ", kMaxDims, " dimensions");
    for (int i = n_; i < n; ++i) d_[i] = 0;
    n_ = static_cast<int8_t>(n);
  }
  std::span<const int64_t> span() const { return {d_, size_t(n_)}; }
  std::vector<int64_t> vec() const { return {d_, d_ + n_}; }

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.n_ == b.n_ && std::equal(a.d_, a.d_ + a.n_, b.d_);
  }

  std::string to_string() const {
    std::string s = "(";
    for (int i = 0; i < n_; ++i) {
      if (i) s += ", ";
      s += std::to_string(d_[i]);
    }
    if (n_ == 1) s += ",";
    return s + ")";
  }

 private:
  void assign(const int64_t* p, size_t n) {
    FX_CHECK(n <= size_t(kMaxDims), "fx::Shape: ", n, " dimensions, at most ", kMaxDims);
    for (size_t i = 0; i < n; ++i) {
      FX_CHECK(p[i] >= 0, "fx::Shape: negative dimension ", p[i]);
      d_[i] = p[i];
    }
    n_ = static_cast<int8_t>(n);
  }
  int64_t d_[kMaxDims] = {};
  int8_t n_ = 0;
};

inline std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.to_string(); }

// Normalises a possibly negative axis against `ndim`, naming `op` when it is out of range.
inline int normalize_axis(int64_t axis, int ndim, const char* op) {
  FX_CHECK(axis >= -ndim && axis < std::max(ndim, 1), op, ": axis ", axis, " is out of range for ",
           ndim, " dimensions");
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

// Python-style position along axis `axis` of `shape`: -1 is the last element, -size the first;
// anything outside [-size, size) throws naming `op`, the index, the axis and its size. Every
// op that takes positions (select, Tensor::at, gather, index_select, ..., take_rows) reads
// them this way.
inline int64_t normalize_index(int64_t index, int axis, const Shape& shape, const char* op) {
  const int64_t size = shape[axis];
  FX_CHECK(index >= -size && index < size, op, ": index ", index, " is out of range for axis ",
           axis, " of size ", size, " in shape ", shape);
  return index < 0 ? index + size : index;
}

}  // namespace fx
