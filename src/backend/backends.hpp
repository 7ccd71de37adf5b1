// Backend registration. Each backend fills the kernels it implements into the primitive table;
// dispatch tries them in rank order (tuned `cpu` first, `reference` closes the CPU list).
#pragma once
#include "fluxion/ops/primitives.hpp"

namespace fx::backend {

inline constexpr int kCpuRank = 0;
inline constexpr int kReferenceRank = kMaxBackends - 1;

void register_reference();
void register_cpu();

// Offset (in elements, from the tensor's own offset) of row-major element `linear` of t.
inline int64_t offset_of(int64_t linear, const Tensor& t) {
  int64_t off = 0;
  const Shape& s = t.shape();
  for (int d = s.size() - 1; d >= 0; --d) {
    off += (linear % s[d]) * t.stride(d);
    linear /= s[d];
  }
  return off;
}

}  // namespace fx::backend
