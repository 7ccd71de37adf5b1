// Fused gelu and (log)softmax kernels (see activation_kernels.hpp). Composed from ops, gelu_erf
// made six passes over memory in its forward alone, its erf scalar; softmax four forward and more
// backward, each a full tensor. Here each kernel reads its inputs once and writes its output once,
// working on blocks (gelu) or rows (softmax) small enough to stay in the L1 cache, with the
// transcendental functions from the vectorised polynomials of backend/cpu/vector_math.hpp.
#include "nn/activation_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <type_traits>

#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include "backend/cpu/onednn_eltwise.hpp"
#include "backend/cpu/thresholds.hpp"
#include "backend/cpu/vector_math.hpp"
#include "fluxion/ad/tape.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/primitive.hpp"
#include "fluxion/ops/view.hpp"

// GCC cannot see that the stack scratch blocks are written before vector_map reads them.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace fx::nn::detail {
namespace {

using backend::cpu::VecFn;
using backend::cpu::vector_map;
namespace hn = hwy::HWY_NAMESPACE;

// Elements per gelu block: the block's scratch lives on the stack and in L1.
constexpr int64_t kBlock = 512;
// Reductions over a row as OpenMP SIMD reductions in T: one partial result per vector lane,
// combined at the end (a plain running sum is one dependency chain, and does not vectorise
// without licence to reorder it). Arrays of lane accumulators, tried first in norm_kernels.cpp,
// GCC vectorised across the wrong loop, with permutes.
// Each splits the row into four quarters reduced side by side: four independent chains of vector
// operations instead of one, whose add latency bounded a softmax row's reductions.
// The maximum and the minimum, and whether any entry is NaN (which a max reduction may skip).
template <class T>
T row_max(const T* x, int64_t k, bool& nan, T& min) {
  const int64_t q = k / 4;
  T m0 = -INFINITY, m1 = -INFINITY, m2 = -INFINITY, m3 = -INFINITY;
  T n0 = INFINITY, n1 = INFINITY, n2 = INFINITY, n3 = INFINITY;
  int bad = 0;
#pragma omp simd reduction(max : m0, m1, m2, m3) reduction(min : n0, n1, n2, n3) reduction(| : bad)
  for (int64_t i = 0; i < q; ++i) {
    const T a = x[i], b = x[i + q], c = x[i + 2 * q], e = x[i + 3 * q];
    m0 = a > m0 ? a : m0, m1 = b > m1 ? b : m1, m2 = c > m2 ? c : m2, m3 = e > m3 ? e : m3;
    n0 = a < n0 ? a : n0, n1 = b < n1 ? b : n1, n2 = c < n2 ? c : n2, n3 = e < n3 ? e : n3;
    bad |= (a != a) | (b != b) | (c != c) | (e != e);
  }
  T m = std::max(std::max(m0, m1), std::max(m2, m3));
  min = std::min(std::min(n0, n1), std::min(n2, n3));
  for (int64_t i = 4 * q; i < k; ++i) {
    m = x[i] > m ? x[i] : m;
    min = x[i] < min ? x[i] : min;
    bad |= x[i] != x[i];
  }
  nan = bad != 0;
  return m;
}

// The maximum alone, NaN-blind (a NaN is skipped here and reaches the sum of exponentials, which
// carries it to every output): logsoftmax's first pass. Tracking the minimum and NaN as well
// (row_max) made this pass, and the backward's, a third of the layer's time (perf, layer_table).
inline float row_max_only(const float* x, int64_t k) {
  const int64_t q = k / 4;
  float m0 = -INFINITY, m1 = -INFINITY, m2 = -INFINITY, m3 = -INFINITY;
#pragma omp simd reduction(max : m0, m1, m2, m3)
  for (int64_t i = 0; i < q; ++i) {
    const float a = x[i], b = x[i + q], c = x[i + 2 * q], e = x[i + 3 * q];
    m0 = a > m0 ? a : m0, m1 = b > m1 ? b : m1, m2 = c > m2 ? c : m2, m3 = e > m3 ? e : m3;
  }
  float m = std::max(std::max(m0, m1), std::max(m2, m3));
  for (int64_t i = 4 * q; i < k; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

template <class T>
double row_sum(const T* x, int64_t k) {
  const int64_t q = k / 4;
  T s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
  for (int64_t i = 0; i < q; ++i) {
    s0 += x[i];
    s1 += x[i + q];
    s2 += x[i + 2 * q];
    s3 += x[i + 3 * q];
  }
  double s = double(s0) + s1 + s2 + s3;
  for (int64_t i = 4 * q; i < k; ++i) s += x[i];
  return s;
}

template <class T>
double row_dot(const T* a, const T* b, int64_t k) {
  const int64_t q = k / 4;
  T s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
  for (int64_t i = 0; i < q; ++i) {
    s0 += a[i] * b[i];
    s1 += a[i + q] * b[i + q];
    s2 += a[i + 2 * q] * b[i + 2 * q];
    s3 += a[i + 3 * q] * b[i + 3 * q];
  }
  double s = double(s0) + s1 + s2 + s3;
  for (int64_t i = 4 * q; i < k; ++i) s += double(a[i]) * b[i];
  return s;
}

// ---- gelu

// Phi(x), the standard normal CDF, and exp(-x^2 / 2) for a block. f32: Abramowitz & Stegun
// 7.1.26 for erfc of |x| / sqrt 2 (absolute error below 1.5e-7, under f32's resolution of Phi's
// values near 1) on the vectorised exp; Phi of a negative x is erfc / 2 directly, so the left
// tail keeps its relative precision. f64: std::erf and std::exp.
template <class T>
void normal_cdf(const T* x, T* phi, T* e, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    for (int64_t i = 0; i < n; ++i) e[i] = -0.5f * x[i] * x[i];
    vector_map(VecFn::exp, e, e, n);
    constexpr float p = 0.3275911f, a1 = 0.254829592f, a2 = -0.284496736f, a3 = 1.421413741f,
                    a4 = -1.453152027f, a5 = 1.061405429f;
    constexpr float inv_sqrt2 = float(1 / std::numbers::sqrt2);
    for (int64_t i = 0; i < n; ++i) {
      const float t = 1.0f / (1.0f + p * std::fabs(x[i]) * inv_sqrt2);
      const float q = t * (a1 + t * (a2 + t * (a3 + t * (a4 + t * a5)))) * e[i];  // erfc(|x|/√2)
      // x >= 0: 1 - q/2; else q/2, exactly. Arithmetic rather than a select, which GCC leaves
      // as a branch (a scalar loop).
      const float lo = 0.5f * q;
      phi[i] = lo + float(x[i] >= 0) * (1.0f - 2.0f * lo);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      phi[i] = 0.5 * std::erfc(-x[i] / std::numbers::sqrt2);
      e[i] = std::exp(-0.5 * x[i] * x[i]);
    }
  }
}

constexpr double kTanhScale = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kCubic = 0.044715;

template <class T>
void gelu_tanh_inner(const T* x, T* t, int64_t n) {  // t = tanh(sqrt(2/pi) (x + 0.044715 x^3))
  const T k = T(kTanhScale), c = T(kCubic);
  for (int64_t i = 0; i < n; ++i) t[i] = k * (x[i] + c * x[i] * x[i] * x[i]);
  vector_map(VecFn::tanh, t, t, n);
}

// gelu_erf in f32 in one pass of vectors: Phi(x) as normal_cdf computes it (the same
// polynomial, Highway's exp), and with `dy` the gradient dy (Phi(x) + x phi(x)) instead of the
// value x Phi(x). The tail that fills no vector takes normal_cdf.
template <bool Gradient>
void gelu_erf_f32(const float* x, const float* dy, float* out, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = int64_t(hn::Lanes(d));
  const auto half = hn::Set(d, 0.5f), one = hn::Set(d, 1.0f), zero = hn::Zero(d);
  const auto p = hn::Set(d, 0.3275911f * float(1 / std::numbers::sqrt2));
  const auto a1 = hn::Set(d, 0.254829592f), a2 = hn::Set(d, -0.284496736f),
             a3 = hn::Set(d, 1.421413741f), a4 = hn::Set(d, -1.453152027f),
             a5 = hn::Set(d, 1.061405429f);
  const auto exp_lo = hn::Set(d, -87.0f), pdf = hn::Set(d, 0.3989422804014327f);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    const auto z = hn::Mul(hn::Neg(half), hn::Mul(v, v));
    // exp(z) is 0 in f32 below -87 or so (and NaN x stays NaN through z).
    // Max(lo, z) is maxps(lo, z), which returns z when z is NaN: NaN stays NaN.
    const auto e = hn::IfThenZeroElse(hn::Lt(z, exp_lo), hn::Exp(d, hn::Max(exp_lo, z)));
    // 1 / (1 + p|x|): the approximate reciprocal and one Newton step (about 23 bits), which
    // keeps the divider, a quarter of the loop's time, out of it.
    const auto den = hn::MulAdd(p, hn::Abs(v), one);
    const auto r0 = hn::ApproximateReciprocal(den);
    const auto t = hn::Mul(r0, hn::NegMulAdd(den, r0, hn::Set(d, 2.0f)));
    auto poly = hn::MulAdd(t, a5, a4);
    poly = hn::MulAdd(t, poly, a3);
    poly = hn::MulAdd(t, poly, a2);
    poly = hn::MulAdd(t, poly, a1);
    const auto lo = hn::Mul(half, hn::Mul(hn::Mul(t, poly), e));  // erfc(|x|/√2) / 2
    const auto phi = hn::IfThenElse(hn::Ge(v, zero), hn::Sub(one, lo), lo);
    if constexpr (Gradient)
      hn::StoreU(hn::Mul(hn::LoadU(d, dy + i), hn::MulAdd(hn::Mul(v, e), pdf, phi)), d, out + i);
    else hn::StoreU(hn::Mul(v, phi), d, out + i);
  }
  if (i < n) {
    float a[kBlock], b[kBlock];
    normal_cdf(x + i, a, b, n - i);
    for (int64_t j = i; j < n; ++j)
      out[j] =
          Gradient ? dy[j] * (a[j - i] + x[j] * b[j - i] * 0.3989422804014327f) : x[j] * a[j - i];
  }
}

template <class T>
void gelu_forward_block(const T* x, T* y, int64_t n, GeluForm form) {
  if constexpr (std::is_same_v<T, float>)
    if (form == GeluForm::erf) return gelu_erf_f32<false>(x, nullptr, y, n);
  T a[kBlock], b[kBlock];
  if (form == GeluForm::tanh) {
    gelu_tanh_inner(x, a, n);
    for (int64_t i = 0; i < n; ++i) y[i] = T(0.5) * x[i] * (T(1) + a[i]);
  } else {
    normal_cdf(x, a, b, n);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a[i];
  }
}

template <class T>
void gelu_backward_block(const T* x, const T* dy, T* dx, int64_t n, GeluForm form) {
  if constexpr (std::is_same_v<T, float>)
    if (form == GeluForm::erf) return gelu_erf_f32<true>(x, dy, dx, n);
  T a[kBlock], b[kBlock];
  if (form == GeluForm::tanh) {
    gelu_tanh_inner(x, a, n);
    const T k = T(kTanhScale), c3 = T(3 * kCubic);
    for (int64_t i = 0; i < n; ++i) {
      const T t = a[i], xi = x[i];
      dx[i] =
          dy[i] * (T(0.5) * (T(1) + t) + T(0.5) * xi * (T(1) - t * t) * k * (T(1) + c3 * xi * xi));
    }
  } else {
    normal_cdf(x, a, b, n);
    const T inv_sqrt_2pi = T(0.3989422804014327);  // d/dx Phi = exp(-x^2/2) / sqrt(2 pi)
    for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * (a[i] + x[i] * b[i] * inv_sqrt_2pi);
  }
}

// Runs f(begin, count) over blocks of n elements, split across the OpenMP team when large.
template <class F>
void for_blocks(int64_t n, F f) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n >= backend::cpu::kParallelMin)
  for (int64_t b = 0; b < blocks; ++b) f(b * kBlock, std::min(kBlock, n - b * kBlock));
}

// f32 goes to oneDNN's eltwise gelu first (backend/cpu/onednn_eltwise.hpp): built for the
// machine's widest vectors, where these loops are built for AVX2.
template <class T>
bool gelu_onednn(const T* x, const T* dy, T* out, int64_t n, GeluForm form) {
  if constexpr (std::is_same_v<T, float>)
    return backend::cpu::onednn_gelu(x, dy, out, n, form == GeluForm::erf);
  return false;
}

template <class T>
Tensor gelu_forward_t(const Tensor& x, GeluForm form) {
  Tensor xc = contiguous(x), y = empty(x.shape(), x.dtype());
  const T* px = xc.data<T>();
  T* py = y.data<T>();
  if (gelu_onednn<T>(px, nullptr, py, x.numel(), form)) return y;
  for_blocks(x.numel(), [&](int64_t i, int64_t n) { gelu_forward_block(px + i, py + i, n, form); });
  return y;
}

template <class T>
Tensor gelu_backward_t(const Tensor& x, const Tensor& dy, GeluForm form) {
  Tensor xc = contiguous(x), dyc = contiguous(dy), dx = empty(x.shape(), x.dtype());
  const T *px = xc.data<T>(), *pd = dyc.data<T>();
  T* out = dx.data<T>();
  // gelu_erf's backward stays on our loop: in bench/layer_table's full run oneDNN's took
  // 1.1-1.4 ms against 0.43-0.87 ms for the same primitive in libtorch's step beside it
  // (ONEDNN_VERBOSE), and the row's fluxion step 1.27-1.30 ms against 0.98-0.99 ms with ours
  // (interleaved runs); alone in a microbenchmark it took 0.43 ms. Not understood; measured.
  if (form == GeluForm::tanh && gelu_onednn<T>(px, pd, out, x.numel(), form)) return dx;
  for_blocks(x.numel(),
             [&](int64_t i, int64_t n) { gelu_backward_block(px + i, pd + i, out + i, n, form); });
  return dx;
}

// ---- softmax over rows of k

// Runs f(row) for each of `rows` rows of k, split across the team when large.
template <class F>
void for_rows(int64_t rows, int64_t k, F f) {
#pragma omp parallel for schedule(static) if (rows * k >= backend::cpu::kParallelMin && rows > 1)
  for (int64_t r = 0; r < rows; ++r) f(r);
}

// exp(z) for z in [-87, 0] or NaN: the only values softmax's exponentials take (x - max, and
// log-probabilities, clamped at -87 where exp is 0 in f32 anyway). Highway's Exp serves every
// float: a rounding trick, a scaling in two steps (for results near overflow or subnormal) and a
// range select, about 25 operations a vector. Here 2^n is a normal number (n >= -126), so one
// scaling is exact: about 14 operations, with Highway's range reduction and polynomial (the same
// accuracy, about 1 ulp). logsoftmax's forward and backward are two passes of it; with
// Highway's Exp the layer_table row was 0.97-1.06 (libtorch: Sleef's AVX2 exp).
template <class D, class V>
HWY_INLINE V exp_nonpositive(D d, V z) {
  const hn::Rebind<int32_t, D> di;
  const auto n = hn::Round(hn::Mul(z, hn::Set(d, 1.442695040888963407f)));
  auto r = hn::MulAdd(n, hn::Set(d, -0.693145751953125f), z);  // z - n ln 2, in two parts
  r = hn::MulAdd(n, hn::Set(d, -1.428606765330187045e-6f), r);
  auto p = hn::MulAdd(hn::Set(d, 0.000198527617612853646278381f), r,
                      hn::Set(d, 0.00139304355252534151077271f));
  p = hn::MulAdd(p, r, hn::Set(d, 0.00833336077630519866943359f));
  p = hn::MulAdd(p, r, hn::Set(d, 0.0416664853692054748535156f));
  p = hn::MulAdd(p, r, hn::Set(d, 0.166666671633720397949219f));
  p = hn::MulAdd(p, r, hn::Set(d, 0.5f));
  const auto e = hn::Add(hn::MulAdd(p, hn::Mul(r, r), r), hn::Set(d, 1.0f));  // exp(r)
  const auto two_n =
      hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, 127))));
  return hn::Mul(e, two_n);
}

// How exp_sum_f32 treats x - m below exp's range (about -87 in f32, where exp is 0): in_range,
// none is (set from the row's minimum), so no select; guard, such lanes give exactly 0; clamp,
// they give exp(-87) = 1.6e-38, which no sum of terms of which one is 1 can see (logsoftmax,
// which stores no exponential).
enum class Range { in_range, guard, clamp };

// sum of exp(x - m) over a row, storing the exponentials in y unless y is null, in one pass of
// vectors; x - m <= 0 (m is the row's finite maximum).
template <Range R>
float exp_sum_f32(const float* x, float m, float* y, int64_t k) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = int64_t(hn::Lanes(d));
  const auto vm = hn::Set(d, m), lo = hn::Set(d, -87.0f);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d);
  int64_t i = 0;
  auto one = [&](int64_t j) {
    const auto z = hn::Sub(hn::LoadU(d, x + j), vm);
    // Max(lo, z) is maxps(lo, z), which returns z when z is NaN: NaN stays NaN.
    const auto e = R == Range::guard
                       ? hn::IfThenZeroElse(hn::Lt(z, lo), exp_nonpositive(d, hn::Max(lo, z)))
                       : exp_nonpositive(d, R == Range::clamp ? hn::Max(lo, z) : z);
    if (y) hn::StoreU(e, d, y + j);
    return e;
  };
  for (; i + 2 * lanes <= k; i += 2 * lanes) {
    s0 = hn::Add(s0, one(i));
    s1 = hn::Add(s1, one(i + lanes));
  }
  for (; i + lanes <= k; i += lanes) s0 = hn::Add(s0, one(i));
  float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  for (; i < k; ++i) {
    const float e = std::exp(x[i] - m);
    if (y) y[i] = e;
    s += e;
  }
  return s;
}

template <class T>
void softmax_row(const T* x, T* y, int64_t k, bool log) {
  if constexpr (std::is_same_v<T, float>) {
    if (log) {
      // Two passes over x and one to write y, as libtorch's. A NaN in x makes the sum NaN, so
      // every output NaN, as the composed form gives; an infinite maximum takes the general
      // path below.
      const float m = row_max_only(x, k);
      if (std::isfinite(m)) {
        const float lse = m + std::log(exp_sum_f32<Range::clamp>(x, m, nullptr, k));
        for (int64_t j = 0; j < k; ++j) y[j] = x[j] - lse;
        return;
      }
    }
  }
  bool nan = false;
  T mn;
  const T m = row_max(x, k, nan, mn);
  if constexpr (std::is_same_v<T, float>) {
    // The fused pass needs a finite maximum and no NaN; anything else takes the general path
    // below, which propagates them as the composed form does.
    if (std::isfinite(m) && !nan) {
      const float s = mn - m >= -80.0f ? exp_sum_f32<Range::in_range>(x, m, log ? nullptr : y, k)
                                       : exp_sum_f32<Range::guard>(x, m, log ? nullptr : y, k);
      if (log) {
        const float lse = m + std::log(s);
        for (int64_t j = 0; j < k; ++j) y[j] = x[j] - lse;
      } else {
        const float inv = 1.0f / s;
        for (int64_t j = 0; j < k; ++j) y[j] *= inv;
      }
      return;
    }
  }
  if (m == -INFINITY) {  // every entry -inf: what the composed form gives (NaN), not a crash
    for (int64_t j = 0; j < k; ++j) y[j] = NAN;
    return;
  }
  for (int64_t j = 0; j < k; ++j) y[j] = x[j] - m;
  vector_map(VecFn::exp, y, y, k);
  const double s = row_sum(y, k);
  if (log) {
    const T lse = T(m + std::log(s));
    for (int64_t j = 0; j < k; ++j) y[j] = x[j] - lse;
  } else {
    const T inv = T(1 / s);
    for (int64_t j = 0; j < k; ++j) y[j] *= inv;
  }
}

// logsoftmax's pullback in f32, one pass of vectors: dx = dy - exp(y) s, y <= 0 a log-probability
// (Max(lo, v) keeps a NaN in y, as maxps returns its second operand then). Guard as exp_sum_f32.
template <bool Guard>
void logsoftmax_backward_f32(const float* y, const float* dy, float* dx, float s, int64_t k) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = int64_t(hn::Lanes(d));
  const auto vs = hn::Set(d, s), lo = hn::Set(d, -87.0f);
  int64_t i = 0;
  for (; i + lanes <= k; i += lanes) {
    const auto v = hn::LoadU(d, y + i);
    const auto e = Guard ? hn::IfThenZeroElse(hn::Lt(v, lo), exp_nonpositive(d, hn::Max(lo, v)))
                         : exp_nonpositive(d, v);
    hn::StoreU(hn::NegMulAdd(e, vs, hn::LoadU(d, dy + i)), d, dx + i);
  }
  for (; i < k; ++i) dx[i] = dy[i] - std::exp(y[i]) * s;
}

// softmax: dx = y (dy - <dy, y>); logsoftmax: dx = dy - exp(y) sum(dy).
template <class T>
void softmax_backward_row(const T* y, const T* dy, T* dx, int64_t k, bool log) {
  if (log) {
    if constexpr (std::is_same_v<T, float>) {
      // Always guarded: a pass for y's minimum, to skip the guard, cost more than the guard.
      return logsoftmax_backward_f32<true>(y, dy, dx, float(row_sum(dy, k)), k);
    }
    const T s = T(row_sum(dy, k));
    vector_map(VecFn::exp, y, dx, k);
    for (int64_t j = 0; j < k; ++j) dx[j] = dy[j] - dx[j] * s;
  } else {
    const T dot = T(row_dot(dy, y, k));
    for (int64_t j = 0; j < k; ++j) dx[j] = y[j] * (dy[j] - dot);
  }
}

template <class T>
Tensor softmax_forward_t(const Tensor& x, bool log) {
  Tensor xc = contiguous(x), y = empty(x.shape(), x.dtype());
  const int64_t k = x.shape()[x.ndim() - 1], rows = x.numel() / k;
  const T* px = xc.data<T>();
  T* py = y.data<T>();
  for_rows(rows, k, [&](int64_t r) { softmax_row(px + r * k, py + r * k, k, log); });
  return y;
}

template <class T>
Tensor softmax_backward_t(const Tensor& y, const Tensor& dy, bool log) {
  Tensor yc = contiguous(y), dyc = contiguous(dy), dx = empty(y.shape(), y.dtype());
  const int64_t k = y.shape()[y.ndim() - 1], rows = y.numel() / k;
  const T *py = yc.data<T>(), *pd = dyc.data<T>();
  T* out = dx.data<T>();
  for_rows(rows, k,
           [&](int64_t r) { softmax_backward_row(py + r * k, pd + r * k, out + r * k, k, log); });
  return dx;
}

}  // namespace

bool activation_fusable(const Tensor& x) {
  if (!x.defined() || x.device() != Device::cpu || (x.dtype() != f32 && x.dtype() != f64))
    return false;
  // Under fx::vmap or fx::trace a value holds no data for a kernel to read: ops only.
  if (x.numel() == 0 || fx::detail::intercepted()) return false;
  const int tapes = ad::num_active_tapes();
  return tapes == 0 || (tapes == 1 && !ad::active_tape(0).forward);
}

Tensor gelu_forward(const Tensor& x, GeluForm form) {
  return x.dtype() == f64 ? gelu_forward_t<double>(x, form) : gelu_forward_t<float>(x, form);
}
Tensor gelu_backward(const Tensor& x, const Tensor& dy, GeluForm form) {
  return x.dtype() == f64 ? gelu_backward_t<double>(x, dy, form)
                          : gelu_backward_t<float>(x, dy, form);
}
Tensor softmax_forward(const Tensor& x, bool log) {
  return x.dtype() == f64 ? softmax_forward_t<double>(x, log) : softmax_forward_t<float>(x, log);
}
Tensor softmax_backward(const Tensor& y, const Tensor& dy, bool log) {
  return y.dtype() == f64 ? softmax_backward_t<double>(y, dy, log)
                          : softmax_backward_t<float>(y, dy, log);
}

}  // namespace fx::nn::detail
