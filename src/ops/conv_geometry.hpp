// How the convolution primitives (src/ops/conv.cpp) pack their geometry into Params, read back
// by the kernels (src/backend/*/conv.cpp): params.list holds, for nd spatial axes, the strides,
// low paddings, high paddings and dilations (nd values each, dilation 1 = none); params.i[0] is
// the group count, params.i[1] whether a bias is the third input; params.shape is the output's
// shape for the two adjoints (their outputs' sizes are not determined by their inputs).
#pragma once
#include <cstdint>

#include "fluxion/ops/primitive.hpp"

namespace fx::conv_detail {

struct Geometry {
  int nd;
  int64_t groups;
  const int64_t* list;
  explicit Geometry(const Params& p)
      : nd(int(p.list.size() / 4)), groups(p.i[0]), list(p.list.data()) {}
  int64_t stride(int a) const { return list[a]; }
  int64_t pad_lo(int a) const { return list[nd + a]; }
  int64_t pad_hi(int a) const { return list[2 * nd + a]; }
  int64_t dilation(int a) const { return list[3 * nd + a]; }
  // The output size along spatial axis a for input size i and kernel size k (floor, as PyTorch).
  int64_t out_size(int a, int64_t i, int64_t k) const {
    return (i + pad_lo(a) + pad_hi(a) - dilation(a) * (k - 1) - 1) / stride(a) + 1;
  }
};

}  // namespace fx::conv_detail
