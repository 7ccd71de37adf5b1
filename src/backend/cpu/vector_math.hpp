// Vectorised transcendental functions for the tuned CPU kernels, through Google Highway's
// contrib/math polynomials (1-4 ULP) on the build's static SIMD target (AVX2 with x86-64-v3).
//
//   cpu::vector_map(cpu::VecFn::exp, x, y, n);   // y[i] = exp(x[i]), contiguous arrays
//
// The polynomials are valid on a range per function; a vector holding any lane outside it
// (or a NaN) is computed with <cmath> instead, so results at the edges (overflow, denormals,
// NaN, huge arguments of sin) are exactly std::'s.
#pragma once
#include <cstdint>

namespace fx::backend::cpu {

enum class VecFn { exp, log, log1p, sin, cos, tanh, sigmoid };

void vector_map(VecFn fn, const float* x, float* y, int64_t n);
void vector_map(VecFn fn, const double* x, double* y, int64_t n);

}  // namespace fx::backend::cpu
