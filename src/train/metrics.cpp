// count_equal: the integer comparison under fx::train::accuracy.
#include "fluxion/train/metrics.hpp"

#include <type_traits>

namespace fx::train {

int64_t count_equal(const Tensor& predicted, const Tensor& labels) {
  FX_CHECK(predicted.defined() && labels.defined(), "fx::train::count_equal: undefined tensor");
  FX_CHECK(predicted.shape() == labels.shape(), "fx::train::count_equal: predictions ",
           predicted.shape(), " and labels ", labels.shape(), " differ in shape");
  FX_CHECK(predicted.dtype() == i64, "fx::train::count_equal: predictions must be i64, got ",
           dtype_name(predicted.dtype()));
  Tensor p = predicted.contiguous(), l = labels.contiguous();
  int64_t n = 0;
  visit_dtype(l.dtype(), [&]<class T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const int64_t* pp = p.data<int64_t>();
      const T* lp = l.data<T>();
      for (int64_t i = 0, m = p.numel(); i < m; ++i) n += pp[i] == int64_t(lp[i]);
    } else {
      detail::fail("fx::train::count_equal: labels must be integers, got ", dtype_name(l.dtype()));
    }
  });
  return n;
}

}  // namespace fx::train
