// Discrete Fourier transforms of complex tensors along one axis (or two), any length, through
// Eigen's FFT module on the CPU (FFTW with -DFLUXION_WITH_FFTW=ON), differentiable in both modes.
// Real inputs are converted to complex first.
//
//   fx::Tensor x = fx::randn({8, 64}, fx::f64);
//   fx::Tensor X = fx::fft(x);              // c128 [8, 64]: X[k] = sum_n x[n] e^{-2 pi i k n / 64}
//   fx::Tensor y = fx::ifft(X);             // back again (scaled by 1/64), imag(y) ~ 0
//   fx::Tensor img = fx::rand({32, 32});
//   fx::Tensor P = fx::abs2(fx::fft2(img)); // power spectrum over the last two axes
//   auto g = fx::gradient([](const fx::Tensor& x) { return fx::sum(fx::abs(fx::fft(x))); }, x);
//
// Conventions follow NumPy's default ("backward" normalisation): fft is unscaled, ifft divides
// by n. The pullback of a transform is its adjoint, the opposite-sign transform with the same
// scale (fft's is n * ifft).
#pragma once
#include <cstdint>

#include "fluxion/core/tensor.hpp"

namespace fx {

Tensor fft(const Tensor& x, int64_t axis = -1);   // forward transform along `axis`
Tensor ifft(const Tensor& x, int64_t axis = -1);  // inverse transform along `axis`
Tensor fft2(const Tensor& x);                     // over the last two axes
Tensor ifft2(const Tensor& x);

}  // namespace fx
