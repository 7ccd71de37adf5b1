// FFTs through Eigen's FFT module (unsupported/Eigen/FFT: a templated port of KISS FFT under
// MPL-2.0, header-only), the default build's transform; FFTW (GPL) replaces this file when
// configured with -DFLUXION_WITH_FFTW=ON (fft_fftw.cpp). One library for c64 and c128: Debian's
// libkissfft-dev ships only the float build.
//
// Each line along the axis is gathered into a contiguous buffer, transformed and scattered into
// the output with the scale applied. KISS FFT factors the length into 4, 2, 3, 5 and then any
// prime, whose butterfly costs p operations per element, so a length with a prime factor above
// kBluesteinPrime goes through Bluestein's chirp-z algorithm instead: a circular convolution of
// power-of-two length, O(n log n) for every n.
//
// Eigen's FFT object caches twiddles and scratch per length and is not thread-safe, so every
// thread of a call builds its own Plan.
#include <unsupported/Eigen/FFT>

#include <cmath>
#include <complex>
#include <vector>

#include "backend/backends.hpp"
#include "backend/cpu/loops.hpp"

namespace fx::backend::cpu {
namespace {

// Above this prime factor Bluestein's two power-of-two FFTs per line cost less than KISS FFT's
// O(p) generic butterfly: timed on lengths p and 64 p in f64 on a loaded 2-core VM, KISS FFT
// won up to p = 41 and lost from p = 61 (64 p = 3904: 840 us direct, 570 us Bluestein).
constexpr int64_t kBluesteinPrime = 64;

int64_t largest_prime_factor(int64_t n) {
  int64_t largest = 1;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) n /= p, largest = p;
  return n > 1 ? n : largest;
}

// A transform of one length and direction: out = sum_t in[t] exp(sign 2 pi i k t / n), unscaled.
template <class R>
class Plan {
 public:
  using C = std::complex<R>;

  Plan(int64_t n, int sign) : n_(n), sign_(sign) {
    fft_.SetFlag(Eigen::FFT<R>::Unscaled);
    if (largest_prime_factor(n) <= kBluesteinPrime) return;
    // X[k] = c[k] sum_t (x[t] c[t]) conj(c[k - t]), c[j] = exp(sign pi i j^2 / n), from
    // k t = (k^2 + t^2 - (k - t)^2) / 2: a convolution, done circularly at a power of two
    // m >= 2n - 1. The angle uses j^2 mod 2n so large j lose no accuracy.
    m_ = 1;
    while (m_ < 2 * n - 1) m_ *= 2;
    chirp_.resize(n);
    for (int64_t j = 0; j < n; ++j) {
      const double a = sign * M_PI * double((j * j) % (2 * n)) / double(n);
      chirp_[j] = C(R(std::cos(a)), R(std::sin(a)));
    }
    std::vector<C> b(m_, C(0));
    for (int64_t j = 0; j < n; ++j) b[j] = b[(m_ - j) % m_] = std::conj(chirp_[j]);
    kernel_.resize(m_);
    fft_.fwd(kernel_.data(), b.data(), m_);
    const R inv_m = R(1) / R(m_);  // the inverse below is unscaled
    for (auto& v : kernel_) v *= inv_m;
    a_.resize(m_);
    spectrum_.resize(m_);
  }

  // out and in: n contiguous values each, distinct.
  void operator()(C* out, const C* in) {
    if (n_ == 1) return void(*out = *in);  // KISS FFT has no stage for length 1
    if (m_ == 0) return sign_ < 0 ? fft_.fwd(out, in, n_) : fft_.inv(out, in, n_);
    for (int64_t t = 0; t < n_; ++t) a_[t] = in[t] * chirp_[t];
    std::fill(a_.begin() + n_, a_.end(), C(0));
    fft_.fwd(spectrum_.data(), a_.data(), m_);
    for (int64_t k = 0; k < m_; ++k) spectrum_[k] *= kernel_[k];
    fft_.inv(a_.data(), spectrum_.data(), m_);
    for (int64_t k = 0; k < n_; ++k) out[k] = a_[k] * chirp_[k];
  }

 private:
  Eigen::FFT<R> fft_;
  int64_t n_, m_ = 0;  // m_: Bluestein's convolution length, 0 when KISS FFT runs directly
  int sign_;
  std::vector<C> chirp_, kernel_, a_, spectrum_;
};

template <class R>
void run(const KernelCall& c, int axis, int sign, R scale) {
  using C = std::complex<R>;
  const Tensor& x = c.in[0];
  const C* in = x.data<C>();
  C* out = c.out.data<C>();
  const int64_t n = x.shape()[axis];
  FX_CHECK(n <= INT32_MAX, "fx::fft: a transform of length ", n, " is longer than Eigen's FFT ",
           "handles (2^31 - 1), shape ", x.shape());
  // Every other axis, as a loop over lines.
  int64_t loop_shape[kMaxDims], in_step[kMaxDims], out_step[kMaxDims];
  int nloops = 0;
  for (int d = 0; d < x.ndim(); ++d) {
    if (d == axis) continue;
    loop_shape[nloops] = x.shape()[d];
    in_step[nloops] = x.stride(d);
    out_step[nloops++] = c.out.stride(d);
  }
  const int64_t lines = c.out.numel() / n, in_stride = x.stride(axis),
                out_stride = c.out.stride(axis);
  split_range(lines, team_for(c.out.numel()), [&](int64_t lo, int64_t hi) {
    if (lo >= hi) return;
    Plan<R> plan(n, sign);
    std::vector<C> src(n), dst(n);
    for (int64_t line = lo; line < hi; ++line) {
      int64_t in_off = 0, out_off = 0;
      for (int64_t d = nloops - 1, rest = line; d >= 0; --d) {
        const int64_t i = rest % loop_shape[d];
        rest /= loop_shape[d];
        in_off += i * in_step[d];
        out_off += i * out_step[d];
      }
      for (int64_t t = 0; t < n; ++t) src[t] = in[in_off + t * in_stride];
      plan(dst.data(), src.data());
      for (int64_t k = 0; k < n; ++k) out[out_off + k * out_stride] = dst[k] * scale;
    }
  });
}

bool fft(const KernelCall& c) {
  const Tensor& x = c.in[0];
  if (!is_complex(x.dtype()) || c.out.numel() == 0) return false;  // the reference does nothing
  const FftAttrs& f = c.attrs.get<FftAttrs>();
  const int axis = int(f.axis);
  const int sign = f.sign < 0 ? -1 : 1;
  if (x.dtype() == c64) run<float>(c, axis, sign, float(f.scale));
  else run<double>(c, axis, sign, f.scale);
  return true;
}

}  // namespace

void register_fft() { register_kernel(fft_p, Device::cpu, kCpuRank, fft); }

}  // namespace fx::backend::cpu
