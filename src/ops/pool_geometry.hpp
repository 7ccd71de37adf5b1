// How the pooling primitives (src/ops/pool.cpp) pack their geometry into Params for the kernels
// (src/backend/*/pool.cpp): params.list holds, for nd spatial axes, the kernel sizes, strides,
// low and high paddings (nd values each); params.i[0] is count_include_pad (avg_pool);
// params.i[2] is max_pool_backward's mode; params.shape is the pooling input's shape.
#pragma once
#include <cstdint>

#include "fluxion/ops/primitive.hpp"

namespace fx::pool_detail {

// max_pool_backward(x, t): scatter sends each output's t to its window's first maximum (the
// pullback, x-shaped result); gather reads t at each window's first maximum (its transpose and
// max_pool's pushforward, output-shaped result).
enum class MaxMode : int64_t { scatter = 0, gather = 1 };

struct Geometry {
  int nd;
  const int64_t* list;
  explicit Geometry(const Params& p) : nd(int(p.list.size() / 4)), list(p.list.data()) {}
  int64_t kernel(int a) const { return list[a]; }
  int64_t stride(int a) const { return list[nd + a]; }
  int64_t pad_lo(int a) const { return list[2 * nd + a]; }
  int64_t pad_hi(int a) const { return list[3 * nd + a]; }
  int64_t out_size(int a, int64_t i) const {
    return (i + pad_lo(a) + pad_hi(a) - kernel(a)) / stride(a) + 1;
  }
};

}  // namespace fx::pool_detail
