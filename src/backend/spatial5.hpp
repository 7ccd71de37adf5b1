// A tensor (N, C, *spatial) with 1 to 3 spatial axes seen as one with three: missing leading
// spatial axes have size 1 and stride 0. The reference convolution and pooling loops index
// every layout through it.
#pragma once
#include <cstdint>

#include "fluxion/core/tensor.hpp"

namespace fx::backend {

struct View5 {
  int64_t size[5], stride[5];
  View5(const Tensor& t, int nd) {
    for (int d = 0; d < 2; ++d) size[d] = t.shape()[d], stride[d] = t.stride(d);
    for (int d = 0; d < 3; ++d) {
      const int src = d - (3 - nd);  // the tensor's spatial axis, or negative when missing
      size[2 + d] = src >= 0 ? t.shape()[2 + src] : 1;
      stride[2 + d] = src >= 0 ? t.stride(2 + src) : 0;
    }
  }
  int64_t at(int64_t a, int64_t b, const int64_t* s) const {
    return a * stride[0] + b * stride[1] + s[0] * stride[2] + s[1] * stride[3] + s[2] * stride[4];
  }
};

}  // namespace fx::backend
