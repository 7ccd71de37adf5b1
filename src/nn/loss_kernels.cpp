// mse's fused kernels (loss_kernels.hpp): one pass each way, sums in 16 lanes of T (so they
// vectorise) that meet in double.
#include "nn/loss_kernels.hpp"

#include <cstdint>

#include "fluxion/ops/create.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn::detail {
namespace {

constexpr int kLanes = 16;

template <class T>
double sum_squared_differences(const T* a, const T* b, int64_t n) {
  T acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const T d = a[i + l] - b[i + l];
      acc[l] += d * d;
    }
  double s = 0;
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  for (; i < n; ++i) s += double(a[i] - b[i]) * double(a[i] - b[i]);
  return s;
}

template <class T>
Tensor forward_t(const Tensor& yhat, const Tensor& y, double scale) {
  Tensor a = contiguous(yhat), b = contiguous(y), out = empty({}, yhat.dtype());
  *out.data<T>() = T(scale * sum_squared_differences(a.data<T>(), b.data<T>(), a.numel()));
  return out;
}

template <class T>
Tensor backward_t(const Tensor& yhat, const Tensor& y, const Tensor& dy, double scale) {
  Tensor a = contiguous(yhat), b = contiguous(y), dx = empty(yhat.shape(), yhat.dtype());
  const T g = T(2 * scale * double(*contiguous(dy).data<T>()));
  const T *pa = a.data<T>(), *pb = b.data<T>();
  T* o = dx.data<T>();
  const int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) o[i] = g * (pa[i] - pb[i]);
  return dx;
}

}  // namespace

Tensor squared_error_forward(const Tensor& yhat, const Tensor& y, double scale) {
  return yhat.dtype() == f64 ? forward_t<double>(yhat, y, scale) : forward_t<float>(yhat, y, scale);
}
Tensor squared_error_backward(const Tensor& yhat, const Tensor& y, const Tensor& dy,
                              double scale) {
  return yhat.dtype() == f64 ? backward_t<double>(yhat, y, dy, scale)
                             : backward_t<float>(yhat, y, dy, scale);
}

}  // namespace fx::nn::detail
