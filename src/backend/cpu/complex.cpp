// Tuned CPU kernels for complex tensors: parts, conj, angle, |z|, building from parts
// (collapsed strided rows, OpenMP for large tensors, as the real elementwise kernels).
#include "backend/backends.hpp"
#include "backend/cpu/loops.hpp"
#include "backend/math.hpp"

namespace fx::backend::cpu {
namespace {

// out (element type D) = f(x) for complex x of element type C.
template <class D, class C, class F>
void map_complex(const Tensor& out, const Tensor& x, F f) {
  D* o = out.data<D>();
  const C* xp = x.data<C>();
  run_rows<2>(layout_of<2>(out, {&x}), [&](const int64_t* off, int64_t n, const int64_t* st) {
    D* op = o + off[0];
    const C* ip = xp + off[1];
    for (int64_t j = 0; j < n; ++j) op[j * st[0]] = f(ip[j * st[1]]);
  });
}

// Complex input to real (F gives the part type) or to complex (conj).
template <class F>
bool from_complex(const KernelCall& c) {
  const Tensor& x = c.in[0];
  auto run = [&]<class R>() {
    using C = std::complex<R>;
    using D = decltype(F{}(C{}));
    map_complex<D, C>(c.out, x, F{});
  };
  if (x.dtype() == c64) return run.template operator()<float>(), true;
  if (x.dtype() == c128) return run.template operator()<double>(), true;
  return false;
}

// re + i im, both real of one dtype.
bool from_parts(const KernelCall& c) {
  const Tensor &re = c.in[0], &im = c.in[1];
  auto run = [&]<class R>() {
    using C = std::complex<R>;
    C* o = c.out.data<C>();
    const R* rp = re.data<R>();
    const R* ip = im.data<R>();
    run_rows<3>(layout_of<3>(c.out, {&re, &im}),
                [&](const int64_t* off, int64_t n, const int64_t* st) {
                  for (int64_t j = 0; j < n; ++j)
                    o[off[0] + j * st[0]] = C(rp[off[1] + j * st[1]], ip[off[2] + j * st[2]]);
                });
  };
  if (re.dtype() == f32) return run.template operator()<float>(), true;
  if (re.dtype() == f64) return run.template operator()<double>(), true;
  return false;
}

}  // namespace

void register_complex() {
  constexpr Device dev = Device::cpu;
  constexpr int r = kCpuRank;
  register_kernel(real_p, dev, r, from_complex<math::Real>);
  register_kernel(imag_p, dev, r, from_complex<math::Imag>);
  register_kernel(conj_p, dev, r, from_complex<math::Conj>);
  register_kernel(angle_p, dev, r, from_complex<math::Angle>);
  register_kernel(complex_abs_p, dev, r, from_complex<math::ComplexAbs>);
  register_kernel(complex_p, dev, r, from_parts);
}

}  // namespace fx::backend::cpu
