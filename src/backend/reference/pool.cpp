// Reference kernels for max and average pooling and their pullbacks: direct loops over any
// strides, f32 and f64. Max pooling picks each window's first maximum in row-major window
// order, as oneDNN and libtorch do; padding never wins.
#include <cstring>
#include <limits>
#include <type_traits>

#include "backend/backends.hpp"
#include "backend/spatial5.hpp"
#include "ops/pool_geometry.hpp"

namespace fx::backend {
namespace {

using pool_detail::Geometry;
using pool_detail::MaxMode;

// Calls fn(n, c, p, window) for every output position p of every (n, c) plane, where window
// visits the in-bounds input positions i of p's window in row-major order.
struct Windows {
  int64_t k[3] = {1, 1, 1}, st[3] = {1, 1, 1}, pl[3] = {0, 0, 0}, in[3], out[3], n, c;
  Windows(Attrs attrs, const Shape& x) {
    const Geometry g(attrs);
    const int nd = g.nd;
    n = x[0];
    c = x[1];
    for (int d = 0; d < 3; ++d) {
      const int a = d - (3 - nd);
      if (a >= 0) k[d] = g.kernel(a), st[d] = g.stride(a), pl[d] = g.pad_lo(a);
      in[d] = a >= 0 ? x[2 + a] : 1;
      out[d] = a >= 0 ? g.out_size(a, x[2 + a]) : 1;
    }
  }
  int64_t window_size() const { return k[0] * k[1] * k[2]; }
  template <class Fn>
  void for_each(Fn&& fn) const {
    int64_t p[3];
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (p[0] = 0; p[0] < out[0]; ++p[0])
          for (p[1] = 0; p[1] < out[1]; ++p[1])
            for (p[2] = 0; p[2] < out[2]; ++p[2]) {
              auto window = [&](auto&& visit) {
                int64_t i[3];
                for (int64_t a = 0; a < k[0]; ++a)
                  for (int64_t bb = 0; bb < k[1]; ++bb)
                    for (int64_t cc = 0; cc < k[2]; ++cc) {
                      i[0] = p[0] * st[0] - pl[0] + a;
                      i[1] = p[1] * st[1] - pl[1] + bb;
                      i[2] = p[2] * st[2] - pl[2] + cc;
                      if (i[0] < 0 || i[0] >= in[0] || i[1] < 0 || i[1] >= in[1] || i[2] < 0 ||
                          i[2] >= in[2])
                        continue;
                      visit(static_cast<const int64_t*>(i));
                    }
              };
              fn(b, ch, static_cast<const int64_t*>(p), window);
            }
  }
};

template <class T>
void zero(const Tensor& out) {
  std::memset(out.raw_data(), 0, size_t(out.numel()) * sizeof(T));
}

// max_pool (in: x) and max_pool_backward (in: x, t) in both modes.
template <bool Backward>
bool max_kernel(const KernelCall& c) {
  const Tensor& x = c.in[0];
  const int nd = x.ndim() - 2;
  const Windows w(c.attrs, x.shape());
  const MaxMode mode = c.attrs.get<pool_detail::PoolAttrs>().mode;
  visit_dtype_all(c.out.dtype(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      const View5 xv(x, nd), ov(c.out, nd);
      const T* xp = static_cast<const T*>(x.raw_data());
      T* op = static_cast<T*>(c.out.raw_data());
      const bool scatter = Backward && mode == MaxMode::scatter;
      if (scatter) zero<T>(c.out);
      const Tensor& t = Backward ? c.in[1] : x;
      const View5 tv(t, nd);
      const T* tp = static_cast<const T*>(t.raw_data());
      w.for_each([&](int64_t b, int64_t ch, const int64_t* p, auto&& window) {
        int64_t best = -1;
        const int64_t* best_i = nullptr;
        int64_t best_pos[3] = {0, 0, 0};
        T best_v = -std::numeric_limits<T>::infinity();
        window([&](const int64_t* i) {
          const T v = xp[xv.at(b, ch, i)];
          if (best < 0 || v > best_v) {
            best = 1, best_v = v;
            for (int d = 0; d < 3; ++d) best_pos[d] = i[d];
            best_i = best_pos;
          }
        });
        if (!best_i) return;
        if (!Backward) op[ov.at(b, ch, p)] = best_v;
        else if (scatter) op[ov.at(b, ch, best_i)] += tp[tv.at(b, ch, p)];
        else op[ov.at(b, ch, p)] = tp[tv.at(b, ch, best_i)];
      });
    }
  });
  return true;
}

// avg_pool (in: x, out pooled) and avg_pool_backward (in: dy, out x-shaped).
template <bool Backward>
bool avg_kernel(const KernelCall& c) {
  const Tensor& x = Backward ? c.out : c.in[0];
  const Tensor& y = Backward ? c.in[0] : c.out;
  const int nd = x.ndim() - 2;
  const Windows w(c.attrs, x.shape());
  const bool include_pad = c.attrs.get<pool_detail::PoolAttrs>().count_include_pad;
  visit_dtype_all(c.out.dtype(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      const View5 xv(x, nd), yv(y, nd);
      T* xp = static_cast<T*>(x.raw_data());
      T* yp = static_cast<T*>(y.raw_data());
      if (Backward) zero<T>(c.out);
      w.for_each([&](int64_t b, int64_t ch, const int64_t* p, auto&& window) {
        int64_t count = 0;
        window([&](const int64_t*) { ++count; });
        const T div = T(include_pad ? w.window_size() : count);
        if (!Backward) {
          T s = 0;
          window([&](const int64_t* i) { s += xp[xv.at(b, ch, i)]; });
          yp[yv.at(b, ch, p)] = s / div;
        } else {
          const T g = yp[yv.at(b, ch, p)] / div;
          window([&](const int64_t* i) { xp[xv.at(b, ch, i)] += g; });
        }
      });
    }
  });
  return true;
}

}  // namespace

void register_reference_pool() {
  constexpr Device cpu = Device::cpu;
  constexpr int r = kReferenceRank;
  register_kernel(max_pool_p, cpu, r, max_kernel<false>);
  register_kernel(max_pool_backward_p, cpu, r, max_kernel<true>);
  register_kernel(avg_pool_p, cpu, r, avg_kernel<false>);
  register_kernel(avg_pool_backward_p, cpu, r, avg_kernel<true>);
}

}  // namespace fx::backend
