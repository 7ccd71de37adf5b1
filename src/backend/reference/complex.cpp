// Reference kernels for complex tensors: one plain loop per element with per-operand offsets
// (the oracle the tuned kernels are compared with), and the DFT straight from its definition.
#include <cmath>

#include "backend/backends.hpp"
#include "backend/math.hpp"

namespace fx::backend {
namespace {

template <class F>
bool from_complex(const KernelCall& c) {
  const Tensor& x = c.in[0];
  if (!is_complex(x.dtype())) return false;
  visit_dtype_all(x.dtype(), [&]<class C>() {
    if constexpr (is_complex_v<C>) {
      using D = decltype(F{}(C{}));
      const C* xp = x.data<C>();
      D* op = c.out.data<D>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) op[i] = F{}(xp[offset_of(i, x)]);
    }
  });
  return true;
}

bool from_parts(const KernelCall& c) {
  const Tensor &re = c.in[0], &im = c.in[1];
  if (!is_floating(re.dtype())) return false;
  visit_floating(re.dtype(), "complex", [&]<class R>() {
    const R* rp = re.data<R>();
    const R* ip = im.data<R>();
    auto* op = c.out.data<std::complex<R>>();
    for (int64_t i = 0, n = c.out.numel(); i < n; ++i)
      op[i] = {rp[offset_of(i, re)], ip[offset_of(i, im)]};
  });
  return true;
}

// y[k] = scale * sum_n x[n] exp(sign 2 pi i k n / N) along axis params.i[0], in double
// precision; the angle uses (k n mod N) so large k n lose no accuracy.
bool dft(const KernelCall& c) {
  const Tensor& x = c.in[0];
  if (!is_complex(x.dtype())) return false;
  const FftAttrs& f = c.attrs.get<FftAttrs>();
  const int axis = int(f.axis);
  const double sign = double(f.sign), scale = f.scale;
  const int64_t len = x.shape()[axis];
  visit_dtype_all(x.dtype(), [&]<class C>() {
    if constexpr (is_complex_v<C>) {
      const C* xp = x.data<C>();
      C* op = c.out.data<C>();  // contiguous
      const Shape& s = x.shape();
      int64_t inner = 1;
      for (int d = axis + 1; d < s.size(); ++d) inner *= s[d];
      for (int64_t i = 0, total = c.out.numel(); i < total; ++i) {
        const int64_t k = (i / inner) % len;
        const int64_t first = i - k * inner;  // row-major index of element 0 along the axis
        std::complex<double> acc = 0;
        for (int64_t t = 0; t < len; ++t) {
          const double a = sign * 2 * M_PI * double((k * t) % len) / double(len);
          acc += std::complex<double>(xp[offset_of(first + t * inner, x)]) *
                 std::complex<double>(std::cos(a), std::sin(a));
        }
        op[i] = C(acc * scale);
      }
    }
  });
  return true;
}

}  // namespace

void register_reference_complex() {
  constexpr Device cpu = Device::cpu;
  constexpr int r = kReferenceRank;
  register_kernel(real_p, cpu, r, from_complex<math::Real>);
  register_kernel(imag_p, cpu, r, from_complex<math::Imag>);
  register_kernel(conj_p, cpu, r, from_complex<math::Conj>);
  register_kernel(angle_p, cpu, r, from_complex<math::Angle>);
  register_kernel(complex_abs_p, cpu, r, from_complex<math::ComplexAbs>);
  register_kernel(complex_p, cpu, r, from_parts);
  register_kernel(fft_p, cpu, r, dft);
}

}  // namespace fx::backend
