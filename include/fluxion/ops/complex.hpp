// Complex tensors (c64 = std::complex<float>, c128 = std::complex<double>): building them,
// taking them apart, and the functions that are not holomorphic.
//
//   fx::Tensor z = fx::complex(fx::tensor({1, 3}, fx::f64), fx::tensor({2, -1}, fx::f64));
//   fx::Tensor r = fx::abs(z), a = fx::angle(z);            // real tensors (f64)
//   fx::Tensor w = fx::exp(z) * fx::conj(z);                // complex arithmetic, c128
//   auto g = fx::gradient([](const fx::Tensor& z) { return fx::sum(fx::abs2(z)); }, z);
//   // g == 2 z: for a real loss L, the gradient of z = x + iy is dL/dx + i dL/dy
//
// Gradients follow Zygote's (and JAX's) convention: the cotangent of a complex value is
// dL/dx + i dL/dy, so a holomorphic f pulls a cotangent back through conj(f'(z)), and
// fx::gradient of a real loss is the direction of steepest ascent. Forward mode pushes tangents
// through f'(z) as usual, so for a holomorphic elementwise f the complex derivative is a JVP:
//   auto [w, df] = fx::jvp(f, z, fx::ones_like(z));        // df == f'(z), elementwise
// Holomorphic and Wirtinger derivatives of scalar functions are in fluxion/ad/complex_scalar.hpp.
//
// Supported on complex tensors: + - * / (and with numbers), neg, exp, log, sin, cos, tanh,
// sigmoid, sqrt, pow with a number, sum, mean, matmul (cgemm/zgemm), where, views, indexing,
// concat, astype to a complex dtype, and the functions below, and FFTs (fluxion/ops/fft.hpp).
// Order-based ops (comparisons, max, relu, ...) throw fx::Error naming the op.
#pragma once
#include "fluxion/core/tensor.hpp"

namespace fx {

Tensor complex(const Tensor& re, const Tensor& im);  // re + i im (broadcast, promoted)
Tensor real(const Tensor& z);   // real part; a real tensor is returned as it is
Tensor imag(const Tensor& z);   // imaginary part; zeros for a real tensor
Tensor conj(const Tensor& z);   // complex conjugate; a real tensor is returned as it is
Tensor angle(const Tensor& z);  // arg z in (-pi, pi]; 0 or pi for real tensors
Tensor abs2(const Tensor& z);   // |z|^2 = re^2 + im^2, real (x^2 for real x)
Tensor polar(const Tensor& r, const Tensor& theta);  // r e^{i theta}
// fx::abs(z) of a complex tensor is |z| (real), see fluxion/ops/elementwise.hpp.

}  // namespace fx
