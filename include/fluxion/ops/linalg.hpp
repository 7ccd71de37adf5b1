// Matrix products through OpenBLAS.
//
//   auto y = fx::matmul(x, w.t());   // (N, in) @ (in, out); transposed views cost no copy
//   auto z = fx::matmul(a, b);       // (B, m, k) @ (k, n): batch dims broadcast
//   auto v = fx::matmul(m, x);       // (m, k) @ (k,) -> (m,)
#pragma once
#include "fluxion/core/tensor.hpp"

namespace fx {

Tensor matmul(const Tensor& a, const Tensor& b);
Tensor dot(const Tensor& a, const Tensor& b);  // 1-d inner product -> 0-d

}  // namespace fx
