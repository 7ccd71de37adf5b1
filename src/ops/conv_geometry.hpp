// The attributes of the convolution primitives (src/ops/conv.cpp), read by the kernels
// (src/backend/*/conv.cpp) through Geometry: per spatial axis the stride, low and high padding
// and dilation (1 = none), the group count, whether a bias is the third input, and the output
// shape of the two adjoints (their outputs' sizes are not determined by their inputs).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "fluxion/ops/primitive.hpp"

namespace fx::conv_detail {

inline constexpr int kMaxSpatial = 3;

struct ConvAttrs {
  int64_t nd = 0, groups = 1;
  bool bias = false;
  std::array<int64_t, kMaxSpatial> stride{1, 1, 1}, pad_lo{}, pad_hi{}, dilation{1, 1, 1};
  Shape shape;
  FX_ATTRS(ConvAttrs, nd, groups, bias, stride, pad_lo, pad_hi, dilation, shape)
};

struct Geometry {
  const ConvAttrs& a;
  int nd;
  int64_t groups;
  explicit Geometry(const ConvAttrs& attrs) : a(attrs), nd(int(attrs.nd)), groups(attrs.groups) {}
  explicit Geometry(Attrs attrs) : Geometry(attrs.get<ConvAttrs>()) {}
  int64_t stride(int i) const { return a.stride[size_t(i)]; }
  int64_t pad_lo(int i) const { return a.pad_lo[size_t(i)]; }
  int64_t pad_hi(int i) const { return a.pad_hi[size_t(i)]; }
  int64_t dilation(int i) const { return a.dilation[size_t(i)]; }
  bool bias() const { return a.bias; }
  // The output size along spatial axis i for input size n and kernel size k (floor, as PyTorch).
  int64_t out_size(int i, int64_t n, int64_t k) const {
    return (n + pad_lo(i) + pad_hi(i) - dilation(i) * (k - 1) - 1) / stride(i) + 1;
  }
  // The geometry as ints, for a kernel cache's key (strides, paddings, dilations, groups).
  void append_key(std::vector<int64_t>& key) const {
    for (int i = 0; i < nd; ++i)
      key.insert(key.end(), {stride(i), pad_lo(i), pad_hi(i), dilation(i)});
    key.push_back(groups);
  }
};

}  // namespace fx::conv_detail
