// gelu (erf and tanh forms) over a contiguous f32 buffer through oneDNN's eltwise primitives,
// forward and backward: the kernel libtorch's CPU gelu runs (through ideep). nn/activation_kernels
// tries it first (except for gelu_erf's backward) and keeps its own Highway loops for f64 and for
// when oneDNN declines.
//
//   if (!onednn_gelu(x, nullptr, y, n, /*erf_form=*/true)) { /* y = gelu(x) another way */ }
//   onednn_gelu(x, dy, dx, n, true);  // dx = dy * gelu'(x)
#pragma once
#include <cstdint>

namespace fx::backend::cpu {

// out = gelu(x) when dy is null, else out = dy * gelu'(x), over n contiguous values. Returns
// false, having written nothing, where oneDNN has no primitive for it.
bool onednn_gelu(const float* x, const float* dy, float* out, int64_t n, bool erf_form);

}  // namespace fx::backend::cpu
