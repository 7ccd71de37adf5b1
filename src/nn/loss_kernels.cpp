// mse's fused kernels (loss_kernels.hpp): one pass each way, the sum an OpenMP SIMD reduction
// in T (one partial sum per vector lane).
#include "nn/loss_kernels.hpp"

#include <cstdint>

#include "fluxion/ops/create.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn::detail {
namespace {

template <class T>
double sum_squared_differences(const T* a, const T* b, int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
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
Tensor squared_error_backward(const Tensor& yhat, const Tensor& y, const Tensor& dy, double scale) {
  return yhat.dtype() == f64 ? backward_t<double>(yhat, y, dy, scale)
                             : backward_t<float>(yhat, y, dy, scale);
}

}  // namespace fx::nn::detail
