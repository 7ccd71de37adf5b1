// Reference reductions: for each output element, a plain loop over the reduced elements.
#include <cmath>
#include <type_traits>

#include "backend/backends.hpp"
#include "ops/fused.hpp"

namespace fx::backend {
namespace {

// Splits x's dims into kept and reduced (by mask) and calls fn(base_offset, reduced_offsets...)
// once per output element in row-major output order.
struct ReduceLayout {
  Shape kept, reduced;
  int64_t kept_stride[kMaxDims], red_stride[kMaxDims];

  ReduceLayout(const Tensor& x, uint64_t mask) {
    for (int d = 0; d < x.ndim(); ++d) {
      if ((mask >> d) & 1u) {
        red_stride[reduced.size()] = x.stride(d);
        reduced.push_back(x.shape()[d]);
      } else {
        kept_stride[kept.size()] = x.stride(d);
        kept.push_back(x.shape()[d]);
      }
    }
  }
  static int64_t off(int64_t linear, const Shape& s, const int64_t* st) {
    int64_t o = 0;
    for (int d = s.size() - 1; d >= 0; --d) {
      o += (linear % s[d]) * st[d];
      linear /= s[d];
    }
    return o;
  }
};

// Sum of a complex tensor, accumulated in std::complex<double>.
bool complex_sum(const KernelCall& c) {
  const Tensor& x = c.in[0];
  ReduceLayout L(x, c.attrs.get<ReduceAttrs>().axes);
  visit_dtype_all(x.dtype(), [&]<class T>() {
    if constexpr (is_complex_v<T>) {
      const T* xp = x.data<T>();
      T* op = c.out.data<T>();
      for (int64_t o = 0, nout = L.kept.numel(); o < nout; ++o) {
        int64_t base = ReduceLayout::off(o, L.kept, L.kept_stride);
        std::complex<double> acc = 0;
        for (int64_t r = 0, nred = L.reduced.numel(); r < nred; ++r)
          acc += std::complex<double>(xp[base + ReduceLayout::off(r, L.reduced, L.red_stride)]);
        op[o] = T(acc);
      }
    }
  });
  return true;
}

template <class Acc>
bool reduce(const KernelCall& c) {
  const Tensor& x = c.in[0];
  if (is_complex(x.dtype())) {  // only sums are defined: complex numbers are not ordered
    if constexpr (Acc::is_sum) return complex_sum(c);
    else return false;
  }
  ReduceLayout L(x, c.attrs.get<ReduceAttrs>().axes);
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* xp = x.data<T>();
    T* op = c.out.data<T>();
    int64_t nout = L.kept.numel(), nred = L.reduced.numel();
    for (int64_t o = 0; o < nout; ++o) {
      int64_t base = ReduceLayout::off(o, L.kept, L.kept_stride);
      Acc acc;
      for (int64_t r = 0; r < nred; ++r)
        acc.add(double(xp[base + ReduceLayout::off(r, L.reduced, L.red_stride)]), r);
      op[o] = static_cast<T>(acc.value);
    }
  });
  return true;
}

struct SumAcc {
  static constexpr bool is_sum = true;
  double value = 0;
  void add(double v, int64_t) { value += v; }
};
struct SumSquaresAcc {  // real tensors only (the ops layer refuses complex ones)
  static constexpr bool is_sum = false;
  double value = 0;
  void add(double v, int64_t) { value += v * v; }
};
struct MaxAcc {
  static constexpr bool is_sum = false;
  double value = -INFINITY;
  void add(double v, int64_t) { value = (v > value || std::isnan(v)) ? v : value; }
};
struct MinAcc {
  static constexpr bool is_sum = false;
  double value = INFINITY;
  void add(double v, int64_t) { value = (v < value || std::isnan(v)) ? v : value; }
};

// log sum exp, shifted by the maximum; at an infinite maximum the shift is 0, so the result is
// that infinity (as in PyTorch) rather than inf - inf = NaN. Accumulated in double.
bool logsumexp(const KernelCall& c) {
  const Tensor& x = c.in[0];
  if (!is_floating(x.dtype())) return false;
  ReduceLayout L(x, c.attrs.get<ReduceAttrs>().axes);
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* xp = x.data<T>();
    T* op = c.out.data<T>();
    int64_t nout = L.kept.numel(), nred = L.reduced.numel();
    for (int64_t o = 0; o < nout; ++o) {
      int64_t base = ReduceLayout::off(o, L.kept, L.kept_stride);
      auto at = [&](int64_t r) {
        return double(xp[base + ReduceLayout::off(r, L.reduced, L.red_stride)]);
      };
      MaxAcc m;
      for (int64_t r = 0; r < nred; ++r) m.add(at(r), r);
      const double shift = std::isinf(m.value) ? 0.0 : m.value;
      double s = 0;
      for (int64_t r = 0; r < nred; ++r) s += std::exp(at(r) - shift);
      op[o] = static_cast<T>(std::log(s) + shift);
    }
  });
  return true;
}

// (dy, x, y) -> dy * exp(x - y): logsumexp's fused pullback (ops/fused.hpp).
bool logsumexp_backward(const KernelCall& c) {
  const Tensor &dy = c.in[0], &x = c.in[1], &y = c.in[2];
  if (!is_floating(x.dtype())) return false;
  visit_dtype(x.dtype(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      const T *dp = dy.data<T>(), *xp = x.data<T>(), *yp = y.data<T>();
      T* op = c.out.data<T>();
      for (int64_t i = 0, n = c.out.numel(); i < n; ++i)
        op[i] = dp[offset_of(i, dy)] * T(std::exp(xp[offset_of(i, x)] - yp[offset_of(i, y)]));
    }
  });
  return true;
}

// Label i of a 1-d i64 or i32 tensor (any stride), checked against `classes`.
int64_t label_at(const Tensor& labels, int64_t i, int64_t classes) {
  const int64_t at = i * labels.stride(0);
  const int64_t v =
      labels.dtype() == i64 ? labels.data<int64_t>()[at] : int64_t(labels.data<int32_t>()[at]);
  FX_CHECK(v >= 0 && v < classes, "fx::logitcrossentropy: label ", v, " at position ", i,
           " is out of range for ", classes, " classes");
  return v;
}

// Row i's log sum exp, as logsumexp above (double, shifted by the maximum).
template <class T>
double row_logsumexp(const Tensor& x, const T* xp, int64_t i) {
  const int64_t classes = x.shape()[1];
  auto at = [&](int64_t j) { return double(xp[i * x.stride(0) + j * x.stride(1)]); };
  MaxAcc m;
  for (int64_t j = 0; j < classes; ++j) m.add(at(j), j);
  const double shift = std::isinf(m.value) ? 0.0 : m.value;
  double s = 0;
  for (int64_t j = 0; j < classes; ++j) s += std::exp(at(j) - shift);
  return std::log(s) + shift;
}

bool is_class_problem(const Tensor& x, const Tensor& labels) {
  return (x.dtype() == f32 || x.dtype() == f64) && x.ndim() == 2 && labels.ndim() == 1 &&
         (labels.dtype() == i64 || labels.dtype() == i32) && labels.shape()[0] == x.shape()[0];
}

// (x, labels) -> the mean over rows of logsumexp(x_i) - x_i[labels_i].
bool logitcrossentropy(const KernelCall& c) {
  const Tensor &x = c.in[0], &labels = c.in[1];
  if (!is_class_problem(x, labels)) return false;
  visit_dtype(x.dtype(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      const T* xp = x.data<T>();
      const int64_t n = x.shape()[0];
      double total = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t y = label_at(labels, i, x.shape()[1]);
        total += row_logsumexp(x, xp, i) - double(xp[i * x.stride(0) + y * x.stride(1)]);
      }
      *c.out.data<T>() = static_cast<T>(total / double(n));
    }
  });
  return true;
}

// (dy, x, labels) -> (softmax(x) - onehot(labels)) dy / N: the loss's fused pullback.
bool logitcrossentropy_backward(const KernelCall& c) {
  const Tensor &dy = c.in[0], &x = c.in[1], &labels = c.in[2];
  if (!is_class_problem(x, labels) || dy.dtype() != x.dtype()) return false;
  visit_dtype(x.dtype(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      const T* xp = x.data<T>();
      T* op = c.out.data<T>();
      const int64_t n = x.shape()[0], classes = x.shape()[1];
      const double g = double(*dy.data<T>()) / double(n);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t y = label_at(labels, i, classes);
        const double lse = row_logsumexp(x, xp, i);
        for (int64_t j = 0; j < classes; ++j) {
          const double p = std::exp(double(xp[i * x.stride(0) + j * x.stride(1)]) - lse);
          op[offset_of(i * classes + j, c.out)] = static_cast<T>((p - (j == y)) * g);
        }
      }
    }
  });
  return true;
}

// any (Any) or all over the reduced axes, of any dtype: an element counts as true when non-zero.
template <bool Any>
bool any_all(const KernelCall& c) {
  const Tensor& x = c.in[0];
  ReduceLayout L(x, c.attrs.get<ReduceAttrs>().axes);
  visit_dtype_all(x.dtype(), [&]<class T>() {
    const T* xp = x.data<T>();
    bool* op = c.out.data<bool>();
    for (int64_t o = 0, nout = L.kept.numel(); o < nout; ++o) {
      const int64_t base = ReduceLayout::off(o, L.kept, L.kept_stride);
      bool acc = !Any;
      for (int64_t r = 0, nred = L.reduced.numel(); r < nred; ++r) {
        const bool nonzero = xp[base + ReduceLayout::off(r, L.reduced, L.red_stride)] != T(0);
        acc = Any ? acc || nonzero : acc && nonzero;
      }
      op[o] = acc;
    }
  });
  return true;
}

template <bool Max>
bool arg_reduce(const KernelCall& c) {
  const Tensor& x = c.in[0];
  if (is_complex(x.dtype())) return false;
  ReduceLayout L(x, c.attrs.get<ReduceAttrs>().axes);
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* xp = x.data<T>();
    int64_t* op = c.out.data<int64_t>();
    int64_t nout = L.kept.numel(), nred = L.reduced.numel();
    for (int64_t o = 0; o < nout; ++o) {
      int64_t base = ReduceLayout::off(o, L.kept, L.kept_stride);
      int64_t best = 0;
      double bv = double(xp[base]);
      for (int64_t r = 1; r < nred; ++r) {
        double v = double(xp[base + ReduceLayout::off(r, L.reduced, L.red_stride)]);
        // NaN wins (once), so that x[argmax] is max(x), which propagates NaN too.
        if ((Max ? v > bv : v < bv) || (std::isnan(v) && !std::isnan(bv))) {
          bv = v;
          best = r;
        }
      }
      op[o] = best;
    }
  });
  return true;
}

}  // namespace

void register_reference_reduce() {
  constexpr Device cpu = Device::cpu;
  constexpr int r = kReferenceRank;
  register_kernel(sum_p, cpu, r, reduce<SumAcc>);
  register_kernel(max_p, cpu, r, reduce<MaxAcc>);
  register_kernel(min_p, cpu, r, reduce<MinAcc>);
  register_kernel(logsumexp_p, cpu, r, logsumexp);
  register_kernel(sum_squares_p, cpu, r, reduce<SumSquaresAcc>);
  register_kernel(logsumexp_backward_p, cpu, r, logsumexp_backward);
  register_kernel(logitcrossentropy_p, cpu, r, logitcrossentropy);
  register_kernel(logitcrossentropy_backward_p, cpu, r, logitcrossentropy_backward);
  register_kernel(any_p, cpu, r, any_all<true>);
  register_kernel(all_p, cpu, r, any_all<false>);
  register_kernel(argmax_p, cpu, r, arg_reduce<true>);
  register_kernel(argmin_p, cpu, r, arg_reduce<false>);
}

}  // namespace fx::backend
