// FFTs through FFTW's guru interface (built only with -DFLUXION_WITH_FFTW=ON: FFTW is GPL, so
// the default build uses fft_eigen.cpp instead). One plan covers every transform of a call,
// reading the input through its own strides (views need no copy) and writing the contiguous
// output.
//
// FFTW's planner is not thread-safe (execution is), so planning and destroying plans hold one
// lock. Plans use FFTW_ESTIMATE: planning then costs microseconds, does not touch the arrays,
// and an out-of-place complex transform leaves its input unchanged.
#include <fftw3.h>

#include <mutex>

#include "backend/backends.hpp"

namespace fx::backend::cpu {
namespace {

std::mutex& planner_lock() {
  static std::mutex m;
  return m;
}

// The transform's length and strides, plus every other axis as a "howmany" loop.
struct Geometry {
  fftw_iodim64 dim;
  fftw_iodim64 loops[kMaxDims];
  int nloops = 0;
};

Geometry geometry(const Tensor& in, const Tensor& out, int axis) {
  Geometry g;
  for (int d = 0; d < in.ndim(); ++d) {
    fftw_iodim64 io{in.shape()[d], in.stride(d), out.stride(d)};
    if (d == axis) g.dim = io;
    else g.loops[g.nloops++] = io;
  }
  return g;
}

template <class R>
void run(const KernelCall& c, const Geometry& g, int sign) {
  auto* in = const_cast<std::complex<R>*>(c.in[0].data<std::complex<R>>());
  auto* out = c.out.data<std::complex<R>>();
  if constexpr (std::is_same_v<R, double>) {
    fftw_plan plan;
    {
      std::lock_guard<std::mutex> lock(planner_lock());
      plan = fftw_plan_guru64_dft(1, &g.dim, g.nloops, g.loops, reinterpret_cast<fftw_complex*>(in),
                                  reinterpret_cast<fftw_complex*>(out), sign, FFTW_ESTIMATE);
    }
    FX_CHECK(plan, "fx::fft: FFTW could not plan a transform of ", c.in[0].shape());
    fftw_execute(plan);
    std::lock_guard<std::mutex> lock(planner_lock());
    fftw_destroy_plan(plan);
  } else {
    fftwf_plan plan;
    {
      std::lock_guard<std::mutex> lock(planner_lock());
      plan =
          fftwf_plan_guru64_dft(1, &g.dim, g.nloops, g.loops, reinterpret_cast<fftwf_complex*>(in),
                                reinterpret_cast<fftwf_complex*>(out), sign, FFTW_ESTIMATE);
    }
    FX_CHECK(plan, "fx::fft: FFTW could not plan a transform of ", c.in[0].shape());
    fftwf_execute(plan);
    std::lock_guard<std::mutex> lock(planner_lock());
    fftwf_destroy_plan(plan);
  }
}

bool fft(const KernelCall& c) {
  const Tensor& x = c.in[0];
  if (!is_complex(x.dtype()) || c.out.numel() == 0) return false;  // the reference does nothing
  const FftAttrs& f = c.attrs.get<FftAttrs>();
  const int axis = int(f.axis);
  const int sign = f.sign < 0 ? FFTW_FORWARD : FFTW_BACKWARD;
  Geometry g = geometry(x, c.out, axis);
  if (x.dtype() == c64) run<float>(c, g, sign);
  else run<double>(c, g, sign);
  if (f.scale != 1.0) {  // FFTW's transforms are unnormalised
    visit_dtype_all(c.out.dtype(), [&]<class C>() {
      if constexpr (is_complex_v<C>) {
        C* o = c.out.data<C>();
        const typename C::value_type s(f.scale);
        for (int64_t i = 0, n = c.out.numel(); i < n; ++i) o[i] *= s;
      }
    });
  }
  return true;
}

}  // namespace

void register_fft() { register_kernel(fft_p, Device::cpu, kCpuRank, fft); }

}  // namespace fx::backend::cpu
