// Reference kernels for the three convolution primitives: direct loops over any strides, f32
// and f64. They define the results the oneDNN kernels (backend/cpu/conv.cpp) are tested
// against, and they are the f64 path (oneDNN has no f64 convolution).
#include <cstring>
#include <type_traits>

#include "backend/backends.hpp"
#include "backend/spatial5.hpp"
#include "ops/conv_geometry.hpp"

namespace fx::backend {
namespace {

using conv_detail::Geometry;

enum class Mode { forward, data, weights };

// One loop nest for the three: forward accumulates y += x w, data dx += dy w, weights
// dw += x dy. The output (one of the three) is contiguous and zeroed first.
template <Mode M>
bool conv_kernel(const KernelCall& c) {
  const Geometry g(c.attrs);
  const int nd = g.nd;
  const Tensor& out = c.out;
  // Which tensors play x, w and y.
  const Tensor& X = M == Mode::forward ? c.in[0] : M == Mode::data ? out : c.in[0];
  const Tensor& W = M == Mode::forward ? c.in[1] : M == Mode::data ? c.in[1] : out;
  const Tensor& Y = M == Mode::forward ? out : c.in[M == Mode::data ? 0 : 1];
  const View5 x(X, nd), w(W, nd), y(Y, nd);
  int64_t st[3], pl[3], dl[3];
  for (int d = 0; d < 3; ++d) {
    const int a = d - (3 - nd);
    st[d] = a >= 0 ? g.stride(a) : 1;
    pl[d] = a >= 0 ? g.pad_lo(a) : 0;
    dl[d] = a >= 0 ? g.dilation(a) : 1;
  }
  const int64_t groups = g.groups, cg = w.size[1], og = w.size[0] / groups;
  visit_dtype_all(out.dtype(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      std::memset(out.raw_data(), 0, size_t(out.numel()) * sizeof(T));
      T* xp = static_cast<T*>(X.raw_data());
      T* wp = static_cast<T*>(W.raw_data());
      T* yp = static_cast<T*>(Y.raw_data());
      int64_t p[3], k[3], i[3];
      for (int64_t n = 0; n < x.size[0]; ++n)
        for (int64_t o = 0; o < w.size[0]; ++o) {
          const int64_t grp = o / og;
          for (int64_t ci = 0; ci < cg; ++ci) {
            const int64_t ch = grp * cg + ci;
            for (p[0] = 0; p[0] < y.size[2]; ++p[0])
              for (p[1] = 0; p[1] < y.size[3]; ++p[1])
                for (p[2] = 0; p[2] < y.size[4]; ++p[2])
                  for (k[0] = 0; k[0] < w.size[2]; ++k[0])
                    for (k[1] = 0; k[1] < w.size[3]; ++k[1])
                      for (k[2] = 0; k[2] < w.size[4]; ++k[2]) {
                        bool inside = true;
                        for (int d = 0; d < 3; ++d) {
                          i[d] = p[d] * st[d] - pl[d] + k[d] * dl[d];
                          inside = inside && i[d] >= 0 && i[d] < x.size[2 + d];
                        }
                        if (!inside) continue;
                        T& xv = xp[x.at(n, ch, i)];
                        T& wv = wp[w.at(o, ci, k)];
                        T& yv = yp[y.at(n, o, p)];
                        if constexpr (M == Mode::forward) yv += xv * wv;
                        if constexpr (M == Mode::data) xv += yv * wv;
                        if constexpr (M == Mode::weights) wv += xv * yv;
                      }
          }
        }
      if (g.bias() && M == Mode::forward) {  // bias
        const Tensor& b = c.in[2];
        const T* bp = b.data<T>();
        const int64_t inner = y.size[2] * y.size[3] * y.size[4];
        for (int64_t n = 0; n < y.size[0]; ++n)
          for (int64_t o = 0; o < y.size[1]; ++o)
            for (int64_t j = 0; j < inner; ++j)
              yp[(n * y.size[1] + o) * inner + j] += bp[o * b.stride(0)];
      }
    }
  });
  return true;
}

}  // namespace

void register_reference_conv() {
  constexpr Device cpu = Device::cpu;
  constexpr int r = kReferenceRank;
  register_kernel(conv_p, cpu, r, conv_kernel<Mode::forward>);
  register_kernel(conv_backward_data_p, cpu, r, conv_kernel<Mode::data>);
  register_kernel(conv_backward_weights_p, cpu, r, conv_kernel<Mode::weights>);
}

}  // namespace fx::backend
