// The fused group normalisation kernels behind fx::nn::GroupNorm and InstanceNorm: one pass for
// the statistics and one for the output, and a backward that reads x, dy and the saved
// statistics once per group. oneDNN 2.6 has no group normalisation, so these are our own loops.
#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/nn/groupnorm.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn::detail {
namespace {

// x: (n, c, s) contiguous, groups of cg = c / g channels. Accumulates in double, so f32 inputs
// get their statistics without cancellation across large groups.
template <class T>
void forward_kernel(const T* x, const T* scale, const T* bias, T* y, T* mean_out, T* rstd_out,
                    int64_t n, int64_t c, int64_t s, int64_t g, double eps) {
  const int64_t cg = c / g, m = cg * s;
  for (int64_t ng = 0; ng < n * g; ++ng) {
    const T* xg = x + ng * m;
    double sum = 0;
    for (int64_t i = 0; i < m; ++i) sum += xg[i];
    const double mu = sum / static_cast<double>(m);
    double ss = 0;
    for (int64_t i = 0; i < m; ++i) {
      const double d = xg[i] - mu;
      ss += d * d;
    }
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
// dscale[c] = sum over (n, s) of dy xhat; dbias[c] = sum of dy.
template <class T>
void backward_kernel(const T* x, const T* scale, const T* mean, const T* rstd, const T* dy, T* dx,
                     T* dscale, T* dbias, int64_t n, int64_t c, int64_t s, int64_t g) {
  const int64_t cg = c / g, m = cg * s;
  std::vector<double> ds(static_cast<size_t>(c), 0), db(static_cast<size_t>(c), 0);
  for (int64_t ng = 0; ng < n * g; ++ng) {
    const T* xg = x + ng * m;
    const T* dyg = dy + ng * m;
    const double mu = mean[ng], r = rstd[ng];
    const int64_t c0 = (ng % g) * cg;
    double sum_dyw = 0, sum_dyw_xhat = 0;
    for (int64_t k = 0; k < cg; ++k) {
      const double w = scale ? static_cast<double>(scale[c0 + k]) : 1.0;
      double sdy = 0, sdyx = 0;  // this channel's sums of dy and dy * (x - mu)
      const T* xr = xg + k * s;
      const T* dr = dyg + k * s;
      for (int64_t i = 0; i < s; ++i) {
        sdy += dr[i];
        sdyx += dr[i] * (xr[i] - mu);
      }
      ds[c0 + k] += sdyx * r;
      db[c0 + k] += sdy;
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
    for (int64_t k = 0; k < c; ++k) dscale[k] = static_cast<T>(ds[k]), dbias[k] = static_cast<T>(db[k]);
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
  Tensor w = scale.defined() ? contiguous(scale) : Tensor(), b = bias.defined() ? contiguous(bias) : Tensor();
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

}  // namespace fx::nn::detail
