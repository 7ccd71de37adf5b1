// The CPU FFT against the DFT's definition (summed in long double) over lengths that take each
// path of the kernel: powers of two, KISS FFT's radix 2/3/4/5 and generic butterflies (primes up
// to 64), Bluestein's algorithm (a prime factor above 64), and strided views along either axis.
// primitives_test.cpp compares the tuned kernel with the reference only on short lengths.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include <fluxion/fluxion.hpp>

namespace {

using CL = std::complex<long double>;

// Deterministic, not smooth: no length makes the spectrum sparse.
std::vector<std::complex<double>> signal(int64_t n, int64_t seed) {
  std::vector<std::complex<double>> x(n);
  for (int64_t t = 0; t < n; ++t)
    x[t] = {std::sin(0.37 * double(t * t + seed)), std::cos(1.3 * double(t) + 0.1 * double(seed))};
  return x;
}

// sum_t x[t] exp(sign 2 pi i k t / n), with the root of unity indexed by k t mod n.
std::vector<CL> dft(const std::vector<std::complex<double>>& x, int sign) {
  const int64_t n = int64_t(x.size());
  std::vector<CL> w(n), X(n);
  for (int64_t j = 0; j < n; ++j) {
    const long double a = sign * 2 * std::numbers::pi_v<long double> * j / n;
    w[j] = CL(std::cos(a), std::sin(a));
  }
  for (int64_t k = 0; k < n; ++k)
    for (int64_t t = 0; t < n; ++t) X[k] += CL(x[t]) * w[(k * t) % n];
  return X;
}

// max_k |got[k] - want[k]| / max_k |want[k]|.
template <class C>
double relative_error(const std::vector<C>& got, const std::vector<CL>& want) {
  long double err = 0, norm = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    err = std::max(err, std::abs(CL(got[k]) - want[k]));
    norm = std::max(norm, std::abs(want[k]));
  }
  return double(err / norm);
}

const std::vector<int64_t> kLengths = {1,  2,  3,  4,   5,   7,   8,    12,   17,   60,  61,
                                       64, 67, 97, 128, 210, 254, 1000, 1009, 1024, 4099};

TEST(FftSizes, MatchesTheDefinitionInBothPrecisions) {
  for (int64_t n : kLengths) {
    auto x = signal(n, n);
    auto want = dft(x, -1);
    auto z = fx::from_vector(x);
    EXPECT_LT(relative_error(fx::to_vector<std::complex<double>>(fx::fft(z)), want), 1e-13)
        << "c128, n = " << n;
    auto z32 = z.astype(fx::c64);
    EXPECT_LT(relative_error(fx::to_vector<std::complex<float>>(fx::fft(z32)), want), 2e-6)
        << "c64, n = " << n;
  }
}

TEST(FftSizes, InverseIsScaledOppositeSign) {
  for (int64_t n : {5, 67, 1009}) {
    auto x = signal(n, 3);
    auto want = dft(x, +1);
    for (auto& w : want) w /= (long double)n;
    EXPECT_LT(
        relative_error(fx::to_vector<std::complex<double>>(fx::ifft(fx::from_vector(x))), want),
        1e-13)
        << n;
  }
}

TEST(FftSizes, StridedViewsAlongEitherAxis) {
  // A [rows, n] matrix seen transposed: the transform runs down strided columns.
  const int64_t rows = 3;
  for (int64_t n : {12, 97}) {
    std::vector<std::complex<double>> all;
    std::vector<std::vector<CL>> want;
    for (int64_t r = 0; r < rows; ++r) {
      auto x = signal(n, r);
      all.insert(all.end(), x.begin(), x.end());
      want.push_back(dft(x, -1));
    }
    auto m = fx::from_vector(all, fx::Shape{rows, n});
    auto along0 = fx::fft(fx::transpose(m, 0, 1), 0);  // [n, rows]: column r is row r of m
    auto along1 = fx::fft(m, 1);
    auto got0 = fx::to_vector<std::complex<double>>(fx::transpose(along0, 0, 1).contiguous());
    auto got1 = fx::to_vector<std::complex<double>>(along1);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<std::complex<double>> row0(got0.begin() + r * n, got0.begin() + (r + 1) * n);
      std::vector<std::complex<double>> row1(got1.begin() + r * n, got1.begin() + (r + 1) * n);
      EXPECT_LT(relative_error(row0, want[r]), 1e-13) << "axis 0, n = " << n << ", row " << r;
      EXPECT_LT(relative_error(row1, want[r]), 1e-13) << "axis 1, n = " << n << ", row " << r;
    }
  }
}

}  // namespace
