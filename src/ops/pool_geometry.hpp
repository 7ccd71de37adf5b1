// The attributes of the pooling primitives (src/ops/pool.cpp), read by the kernels
// (src/backend/*/pool.cpp) through Geometry: per spatial axis the kernel size, stride, low and
// high padding; count_include_pad (avg_pool); max_pool_backward's mode; the pooling input's
// shape.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "fluxion/ops/primitive.hpp"

namespace fx::pool_detail {

inline constexpr int kMaxSpatial = 3;

// max_pool_backward(x, t): scatter sends each output's t to its window's first maximum (the
// pullback, x-shaped result); gather reads t at each window's first maximum (its transpose and
// max_pool's pushforward, output-shaped result).
enum class MaxMode : int64_t { scatter = 0, gather = 1 };

struct PoolAttrs {
  int64_t nd = 0;
  std::array<int64_t, kMaxSpatial> kernel{}, stride{1, 1, 1}, pad_lo{}, pad_hi{};
  bool count_include_pad = false;
  MaxMode mode = MaxMode::scatter;
  Shape shape;
  FX_ATTRS(PoolAttrs, nd, kernel, stride, pad_lo, pad_hi, count_include_pad, mode, shape)
};

struct Geometry {
  const PoolAttrs& a;
  int nd;
  explicit Geometry(const PoolAttrs& attrs) : a(attrs), nd(int(attrs.nd)) {}
  explicit Geometry(Attrs attrs) : Geometry(attrs.get<PoolAttrs>()) {}
  int64_t kernel(int i) const { return a.kernel[size_t(i)]; }
  int64_t stride(int i) const { return a.stride[size_t(i)]; }
  int64_t pad_lo(int i) const { return a.pad_lo[size_t(i)]; }
  int64_t pad_hi(int i) const { return a.pad_hi[size_t(i)]; }
  int64_t out_size(int i, int64_t n) const {
    return (n + pad_lo(i) + pad_hi(i) - kernel(i)) / stride(i) + 1;
  }
  // The geometry as ints, for a kernel cache's key.
  void append_key(std::vector<int64_t>& key) const {
    for (int i = 0; i < nd; ++i)
      key.insert(key.end(), {kernel(i), stride(i), pad_lo(i), pad_hi(i)});
    key.push_back(a.count_include_pad);
  }
};

}  // namespace fx::pool_detail
