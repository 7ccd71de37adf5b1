// The fused normalisation kernels behind fx::nn::GroupNorm, InstanceNorm, LayerNorm and BatchNorm
// (training):
// passes for the statistics and one for the output, and a backward that reads x, dy and the saved
// statistics twice. oneDNN 2.6 has no group normalisation, so these are our own loops; batch
// normalisation shares their row reductions.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/nn/batchnorm.hpp"
#include "fluxion/nn/groupnorm.hpp"
#include "fluxion/nn/layernorm.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn::detail {
namespace {

// Reductions over one channel's row of s values, accumulated in T as OpenMP SIMD reductions:
// the vectoriser keeps one partial sum per vector lane and adds them at the end (a plain running
// sum is one long dependency chain, and one in double would not vectorise). Explicit arrays of 16
// lane accumulators, the first version, GCC vectorised across the outer loop with permutes of
// the stack arrays instead: LayerNorm's backward took 5x its forward.
template <class T>
double row_sum(const T* x, int64_t s) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < s; ++i) acc += x[i];
  return acc;
}

// Sum of (x - mu)^2.
template <class T>
double row_centred_squares(const T* x, T mu, int64_t s) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < s; ++i) acc += (x[i] - mu) * (x[i] - mu);
  return acc;
}

// Sum of dy and of dy * (x - mu), in one pass.
template <class T>
void row_dy_sums(const T* x, const T* dy, T mu, int64_t s, double& sdy, double& sdyx) {
  T a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
  for (int64_t i = 0; i < s; ++i) {
    a += dy[i];
    b += dy[i] * (x[i] - mu);
  }
  sdy = a, sdyx = b;
}

// Groups (group and instance normalisation) and channels (batch normalisation) are independent,
// so the OpenMP team splits them: on one thread these kernels left the second core idle (GroupNorm
// at 1.4x libtorch on 2 threads, bench/layer_table's layer_t2_group_norm_ratio; BatchNorm in a
// 2-thread CNN training step, bench/train_cnn). Inside a parallel region (a data-parallel share)
// the pragma's nested team is the calling thread alone. Below this many values the team's start
// costs more than it saves (the CPU backend's kParallelMin; not measured here).
constexpr int64_t kNormParallelMin = int64_t(1) << 15;

// x: (n, c, s) contiguous, groups of cg = c / g channels. Rows accumulate in lanes of T and rows
// meet in double, so f32 statistics of large groups keep their precision.
template <class T>
void forward_kernel(const T* x, const T* scale, const T* bias, T* y, T* mean_out, T* rstd_out,
                    int64_t n, int64_t c, int64_t s, int64_t g, double eps) {
  const int64_t cg = c / g, m = cg * s;
#pragma omp parallel for schedule(static) if (n * c * s >= kNormParallelMin && n * g > 1)
  for (int64_t ng = 0; ng < n * g; ++ng) {
    const T* xg = x + ng * m;
    double sum = 0;
    for (int64_t k = 0; k < cg; ++k) sum += row_sum(xg + k * s, s);
    const double mu = sum / static_cast<double>(m);
    double ss = 0;  // two passes: the centred sum of squares does not cancel
    for (int64_t k = 0; k < cg; ++k) ss += row_centred_squares(xg + k * s, static_cast<T>(mu), s);
    const double rstd = 1 / std::sqrt(ss / static_cast<double>(m) + eps);
    mean_out[ng] = static_cast<T>(mu);
    rstd_out[ng] = static_cast<T>(rstd);
    T* yg = y + ng * m;
    const int64_t c0 = (ng % g) * cg;
    for (int64_t k = 0; k < cg; ++k) {
      // y = x * a + b per channel: the affine map folded into the normalisation.
      const double w = scale ? static_cast<double>(scale[c0 + k]) : 1.0;
      const double bb = bias ? static_cast<double>(bias[c0 + k]) : 0.0;
      const T a = static_cast<T>(rstd * w), b = static_cast<T>(bb - mu * rstd * w);
      const T* xr = xg + k * s;
      T* yr = yg + k * s;
      for (int64_t i = 0; i < s; ++i) yr[i] = xr[i] * a + b;
    }
  }
}

// dx = rstd (dyw - mean(dyw) - xhat mean(dyw xhat)) with dyw = dy * scale[c] over each group;
// dscale[c] = sum over (n, s) of dy xhat; dbias[c] = sum of dy. The groups run in parallel, each
// writing its channels' terms of dscale and dbias for its sample; the sums over samples follow,
// in sample order, so the result does not depend on the thread count.
template <class T>
void backward_kernel(const T* x, const T* scale, const T* mean, const T* rstd, const T* dy, T* dx,
                     T* dscale, T* dbias, int64_t n, int64_t c, int64_t s, int64_t g) {
  const int64_t cg = c / g, m = cg * s;
  // (n, c): sample i's terms of channel k's sums.
  std::vector<double> ds(static_cast<size_t>(n * c)), db(static_cast<size_t>(n * c));
#pragma omp parallel for schedule(static) if (n * c * s >= kNormParallelMin && n * g > 1)
  for (int64_t ng = 0; ng < n * g; ++ng) {
    const T* xg = x + ng * m;
    const T* dyg = dy + ng * m;
    const double mu = mean[ng], r = rstd[ng];
    const int64_t c0 = (ng % g) * cg;
    double sum_dyw = 0, sum_dyw_xhat = 0;
    for (int64_t k = 0; k < cg; ++k) {
      const double w = scale ? static_cast<double>(scale[c0 + k]) : 1.0;
      double sdy = 0, sdyx = 0;  // this channel's sums of dy and dy * (x - mu)
      row_dy_sums(xg + k * s, dyg + k * s, static_cast<T>(mu), s, sdy, sdyx);
      const size_t at = static_cast<size_t>(ng / g * c + c0 + k);
      ds[at] = sdyx * r;
      db[at] = sdy;
      sum_dyw += w * sdy;
      sum_dyw_xhat += w * sdyx * r;
    }
    const double inv_m = 1 / static_cast<double>(m);
    const double mdyw = sum_dyw * inv_m, mdywx = sum_dyw_xhat * inv_m;
    T* dxg = dx + ng * m;
    for (int64_t k = 0; k < cg; ++k) {
      const double w = scale ? static_cast<double>(scale[c0 + k]) : 1.0;
      // dx = r (w dy - mdyw - (x - mu) r mdywx) = A dy + B x + C, per channel.
      const T a = static_cast<T>(r * w), b = static_cast<T>(-r * r * mdywx);
      const T cc = static_cast<T>(-r * mdyw + r * r * mdywx * mu);
      const T* xr = xg + k * s;
      const T* dr = dyg + k * s;
      T* out = dxg + k * s;
      for (int64_t i = 0; i < s; ++i) out[i] = a * dr[i] + b * xr[i] + cc;
    }
  }
  if (dscale)
    for (int64_t k = 0; k < c; ++k) {
      double a = 0, b = 0;
      for (int64_t i = 0; i < n; ++i) a += ds[size_t(i * c + k)], b += db[size_t(i * c + k)];
      dscale[k] = static_cast<T>(a), dbias[k] = static_cast<T>(b);
    }
}

// Batch normalisation: channel ch's rows are x[n, ch, :] for every n (stride c * s).
template <class T>
void bn_forward_kernel(const T* x, const T* scale, const T* bias, T* y, T* mean_out, T* rstd_out,
                       T* var_out, int64_t n, int64_t c, int64_t s, double eps) {
  const double m = static_cast<double>(n * s);
#pragma omp parallel for schedule(static) if (n * c * s >= kNormParallelMin && c > 1)
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += row_sum(x + (i * c + ch) * s, s);
    const double mu = sum / m;
    double ss = 0;
    for (int64_t i = 0; i < n; ++i)
      ss += row_centred_squares(x + (i * c + ch) * s, static_cast<T>(mu), s);
    const double var = ss / m, rstd = 1 / std::sqrt(var + eps);
    mean_out[ch] = static_cast<T>(mu), rstd_out[ch] = static_cast<T>(rstd),
    var_out[ch] = static_cast<T>(var);
    const double w = scale ? static_cast<double>(scale[ch]) : 1.0;
    const double bb = bias ? static_cast<double>(bias[ch]) : 0.0;
    const T a = static_cast<T>(rstd * w), b = static_cast<T>(bb - mu * rstd * w);
    for (int64_t i = 0; i < n; ++i) {
      const T* xr = x + (i * c + ch) * s;
      T* yr = y + (i * c + ch) * s;
      for (int64_t j = 0; j < s; ++j) yr[j] = xr[j] * a + b;
    }
  }
}

template <class T>
void bn_backward_kernel(const T* x, const T* scale, const T* mean, const T* rstd, const T* dy,
                        T* dx, T* dscale, T* dbias, int64_t n, int64_t c, int64_t s) {
  const double inv_m = 1 / static_cast<double>(n * s);
#pragma omp parallel for schedule(static) if (n * c * s >= kNormParallelMin && c > 1)
  for (int64_t ch = 0; ch < c; ++ch) {
    const double mu = mean[ch], r = rstd[ch];
    const double w = scale ? static_cast<double>(scale[ch]) : 1.0;
    double sdy = 0, sdyx = 0;
    for (int64_t i = 0; i < n; ++i) {
      double a = 0, b = 0;
      row_dy_sums(x + (i * c + ch) * s, dy + (i * c + ch) * s, static_cast<T>(mu), s, a, b);
      sdy += a, sdyx += b;
    }
    if (dscale) dscale[ch] = static_cast<T>(sdyx * r), dbias[ch] = static_cast<T>(sdy);
    const double mdyw = w * sdy * inv_m, mdywx = w * sdyx * r * inv_m;
    const T a = static_cast<T>(r * w), b = static_cast<T>(-r * r * mdywx);
    const T cc = static_cast<T>(-r * mdyw + r * r * mdywx * mu);
    for (int64_t i = 0; i < n; ++i) {
      const T* xr = x + (i * c + ch) * s;
      const T* dr = dy + (i * c + ch) * s;
      T* out = dx + (i * c + ch) * s;
      for (int64_t j = 0; j < s; ++j) out[j] = a * dr[j] + b * xr[j] + cc;
    }
  }
}

// Sums of g = dy * scale (dy without scale) and of g * (x - mu) * rstd over a row, in lanes; the
// branch on scale is hoisted out of the loop (a template argument) so the loop vectorises.
template <bool Scaled, class T>
void row_scaled_sums_impl(const T* x, const T* dy, const T* scale, T mu, T rs, int64_t k,
                          double& sg, double& sgx) {
  T a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
  for (int64_t j = 0; j < k; ++j) {
    const T g = Scaled ? dy[j] * scale[j] : dy[j];
    a += g;
    b += g * (x[j] - mu);
  }
  sg = a, sgx = double(b) * rs;
}
template <class T>
void row_scaled_sums(const T* x, const T* dy, const T* scale, T mu, T rs, int64_t k, double& sg,
                     double& sgx) {
  if (scale) row_scaled_sums_impl<true>(x, dy, scale, mu, rs, k, sg, sgx);
  else row_scaled_sums_impl<false>(x, dy, scale, mu, rs, k, sg, sgx);
}

// Layer normalisation: rows of k values, each its own group, with a per-element affine map.
template <class T>
void ln_forward_kernel(const T* x, const T* scale, const T* bias, T* y, T* mean_out, T* rstd_out,
                       int64_t rows, int64_t k, double eps) {
#pragma omp parallel for schedule(static) if (rows * k >= kNormParallelMin && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * k;
    const double mu = row_sum(xr, k) / static_cast<double>(k);
    const double rstd =
        1 /
        std::sqrt(row_centred_squares(xr, static_cast<T>(mu), k) / static_cast<double>(k) + eps);
    mean_out[r] = static_cast<T>(mu), rstd_out[r] = static_cast<T>(rstd);
    const T m = static_cast<T>(mu), rs = static_cast<T>(rstd);
    T* yr = y + r * k;
    if (scale)
      for (int64_t j = 0; j < k; ++j) yr[j] = (xr[j] - m) * rs * scale[j] + bias[j];
    else
      for (int64_t j = 0; j < k; ++j) yr[j] = (xr[j] - m) * rs;
  }
}

// One row of layer normalisation's backward given the row's means of g and g xhat: dx, and the
// row's terms of dscale and dbias. Restrict pointers: with five arrays GCC otherwise gave up
// versioning the loop for aliasing and left it scalar (LayerNorm at 1.35x libtorch).
template <class T>
void ln_backward_row(const T* __restrict x, const T* __restrict dy, const T* __restrict scale,
                     T* __restrict out, T* __restrict dscale, T* __restrict dbias, T m, T rs, T mg,
                     T mgx, int64_t k) {
  for (int64_t t = 0; t < k; ++t) {
    const T xhat = (x[t] - m) * rs;
    out[t] = rs * (dy[t] * scale[t] - mg - xhat * mgx);
    dscale[t] += dy[t] * xhat;
    dbias[t] += dy[t];
  }
}
template <class T>
void ln_backward_row_plain(const T* __restrict x, const T* __restrict dy, T* __restrict out, T m,
                           T rs, T mg, T mgx, int64_t k) {
  for (int64_t t = 0; t < k; ++t) out[t] = rs * (dy[t] - mg - (x[t] - m) * rs * mgx);
}

// Rows per block of layer normalisation's backward: each block sums its rows' terms of dscale and
// dbias (in T per element), and the blocks' sums are added in block order, so the result does not
// depend on how many threads took the blocks. On one thread LayerNorm's 2-thread row was 1.1x
// libtorch's (bench/layer_table); the block size is not measured.
constexpr int64_t kLayerNormBlockRows = 64;

// dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy * scale; dscale = sum over rows of
// dy xhat, dbias = sum of dy.
template <class T>
void ln_backward_kernel(const T* x, const T* scale, const T* mean, const T* rstd, const T* dy,
                        T* dx, T* dscale, T* dbias, int64_t rows, int64_t k) {
  const int64_t blocks = (rows + kLayerNormBlockRows - 1) / kLayerNormBlockRows;
  // Block b's dscale terms at [2 b k, 2 b k + k), its dbias terms after them.
  std::vector<T> part(dscale ? static_cast<size_t>(blocks * 2 * k) : 0, T(0));
#pragma omp parallel for schedule(static) if (rows * k >= kNormParallelMin && blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    T* ps = dscale ? part.data() + b * 2 * k : nullptr;
    const int64_t r1 = std::min(rows, (b + 1) * kLayerNormBlockRows);
    for (int64_t r = b * kLayerNormBlockRows; r < r1; ++r) {
      const T* xr = x + r * k;
      const T* dr = dy + r * k;
      const T m = mean[r], rs = rstd[r];
      double sg = 0, sgx = 0;  // sums of g and of g * xhat
      row_scaled_sums(xr, dr, scale, m, rs, k, sg, sgx);
      const T mg = static_cast<T>(sg / static_cast<double>(k)),
              mgx = static_cast<T>(sgx / static_cast<double>(k));
      if (scale) ln_backward_row(xr, dr, scale, dx + r * k, ps, ps + k, m, rs, mg, mgx, k);
      else ln_backward_row_plain(xr, dr, dx + r * k, m, rs, mg, mgx, k);
    }
  }
  if (dscale) {
    for (int64_t j = 0; j < k; ++j) dscale[j] = 0, dbias[j] = 0;
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t j = 0; j < k; ++j)
        dscale[j] += part[size_t(b * 2 * k + j)], dbias[j] += part[size_t(b * 2 * k + k + j)];
  }
}

template <class T>
T* maybe(const Tensor& t) {  // null for an undefined tensor (no affine map)
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> group_norm_forward(const Tensor& x, const Tensor& scale,
                                                      const Tensor& bias, int64_t groups,
                                                      double eps) {
  const int64_t n = x.shape()[0], c = x.shape()[1], s = x.numel() / (n * c);
  Tensor xc = x.is_contiguous() ? x : contiguous(x);
  Tensor y = empty(x.shape(), x.dtype()), mean = empty({n * groups}, x.dtype()),
         rstd = empty({n * groups}, x.dtype());
  Tensor w = scale.defined() ? contiguous(scale) : Tensor(),
         b = bias.defined() ? contiguous(bias) : Tensor();
  if (x.dtype() == f64)
    forward_kernel<double>(xc.data<double>(), maybe<double>(w), maybe<double>(b), y.data<double>(),
                           mean.data<double>(), rstd.data<double>(), n, c, s, groups, eps);
  else
    forward_kernel<float>(xc.data<float>(), maybe<float>(w), maybe<float>(b), y.data<float>(),
                          mean.data<float>(), rstd.data<float>(), n, c, s, groups, eps);
  return {y, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> group_norm_backward(const Tensor& x, const Tensor& scale,
                                                       const Tensor& mean, const Tensor& rstd,
                                                       const Tensor& dy, int64_t groups) {
  const int64_t n = x.shape()[0], c = x.shape()[1], s = x.numel() / (n * c);
  Tensor xc = contiguous(x), dyc = contiguous(dy);
  Tensor w = scale.defined() ? contiguous(scale) : Tensor();
  Tensor dx = empty(x.shape(), x.dtype());
  Tensor ds = scale.defined() ? empty({c}, x.dtype()) : Tensor();
  Tensor db = scale.defined() ? empty({c}, x.dtype()) : Tensor();
  if (x.dtype() == f64)
    backward_kernel<double>(xc.data<double>(), maybe<double>(w), mean.data<double>(),
                            rstd.data<double>(), dyc.data<double>(), dx.data<double>(),
                            maybe<double>(ds), maybe<double>(db), n, c, s, groups);
  else
    backward_kernel<float>(xc.data<float>(), maybe<float>(w), mean.data<float>(),
                           rstd.data<float>(), dyc.data<float>(), dx.data<float>(),
                           maybe<float>(ds), maybe<float>(db), n, c, s, groups);
  return {dx, ds, db};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> batch_norm_forward(const Tensor& x, const Tensor& scale,
                                                              const Tensor& bias, double eps) {
  const int64_t n = x.shape()[0], c = x.shape()[1], s = x.numel() / (n * c);
  Tensor xc = x.is_contiguous() ? x : contiguous(x);
  Tensor y = empty(x.shape(), x.dtype()), mean = empty({c}, x.dtype()),
         rstd = empty({c}, x.dtype()), var = empty({c}, x.dtype());
  Tensor w = scale.defined() ? contiguous(scale) : Tensor(),
         b = bias.defined() ? contiguous(bias) : Tensor();
  if (x.dtype() == f64)
    bn_forward_kernel<double>(xc.data<double>(), maybe<double>(w), maybe<double>(b),
                              y.data<double>(), mean.data<double>(), rstd.data<double>(),
                              var.data<double>(), n, c, s, eps);
  else
    bn_forward_kernel<float>(xc.data<float>(), maybe<float>(w), maybe<float>(b), y.data<float>(),
                             mean.data<float>(), rstd.data<float>(), var.data<float>(), n, c, s,
                             eps);
  return {y, mean, rstd, var};
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(const Tensor& x, const Tensor& scale,
                                                       const Tensor& mean, const Tensor& rstd,
                                                       const Tensor& dy) {
  const int64_t n = x.shape()[0], c = x.shape()[1], s = x.numel() / (n * c);
  Tensor xc = contiguous(x), dyc = contiguous(dy);
  Tensor w = scale.defined() ? contiguous(scale) : Tensor();
  Tensor dx = empty(x.shape(), x.dtype());
  Tensor ds = scale.defined() ? empty({c}, x.dtype()) : Tensor();
  Tensor db = scale.defined() ? empty({c}, x.dtype()) : Tensor();
  if (x.dtype() == f64)
    bn_backward_kernel<double>(xc.data<double>(), maybe<double>(w), mean.data<double>(),
                               rstd.data<double>(), dyc.data<double>(), dx.data<double>(),
                               maybe<double>(ds), maybe<double>(db), n, c, s);
  else
    bn_backward_kernel<float>(xc.data<float>(), maybe<float>(w), mean.data<float>(),
                              rstd.data<float>(), dyc.data<float>(), dx.data<float>(),
                              maybe<float>(ds), maybe<float>(db), n, c, s);
  return {dx, ds, db};
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_forward(const Tensor& x, const Tensor& scale,
                                                      const Tensor& bias, int64_t k, double eps) {
  const int64_t rows = x.numel() / k;
  Tensor xc = x.is_contiguous() ? x : contiguous(x);
  Tensor y = empty(x.shape(), x.dtype()), mean = empty({rows}, x.dtype()),
         rstd = empty({rows}, x.dtype());
  Tensor w = scale.defined() ? contiguous(scale) : Tensor();
  Tensor b = bias.defined() ? contiguous(bias) : Tensor();
  if (x.dtype() == f64)
    ln_forward_kernel<double>(xc.data<double>(), maybe<double>(w), maybe<double>(b),
                              y.data<double>(), mean.data<double>(), rstd.data<double>(), rows, k,
                              eps);
  else
    ln_forward_kernel<float>(xc.data<float>(), maybe<float>(w), maybe<float>(b), y.data<float>(),
                             mean.data<float>(), rstd.data<float>(), rows, k, eps);
  return {y, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& x, const Tensor& scale,
                                                       const Tensor& mean, const Tensor& rstd,
                                                       const Tensor& dy, int64_t k) {
  const int64_t rows = x.numel() / k;
  Tensor xc = contiguous(x), dyc = contiguous(dy);
  Tensor w = scale.defined() ? contiguous(scale) : Tensor();
  Tensor dx = empty(x.shape(), x.dtype());
  Tensor ds = scale.defined() ? empty(scale.shape(), x.dtype()) : Tensor();
  Tensor db = scale.defined() ? empty(scale.shape(), x.dtype()) : Tensor();
  if (x.dtype() == f64)
    ln_backward_kernel<double>(xc.data<double>(), maybe<double>(w), mean.data<double>(),
                               rstd.data<double>(), dyc.data<double>(), dx.data<double>(),
                               maybe<double>(ds), maybe<double>(db), rows, k);
  else
    ln_backward_kernel<float>(xc.data<float>(), maybe<float>(w), mean.data<float>(),
                              rstd.data<float>(), dyc.data<float>(), dx.data<float>(),
                              maybe<float>(ds), maybe<float>(db), rows, k);
  return {dx, ds, db};
}

}  // namespace fx::nn::detail
