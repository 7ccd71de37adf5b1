// The DFT primitive: y = scale * sum_n x[n] exp(sign * 2 pi i k n / N) along one axis.
// Linear in x, so the pushforward is the transform of the tangent and the pullback is the
// adjoint: the same scale with the opposite sign.
#include "fluxion/ops/fft.hpp"

#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/primitives.hpp"
#include "ops/batching.hpp"

namespace fx {

// FftAttrs: sign -1 forward, +1 inverse.
Primitive fft_p{.name = "fft",
                .forward =
                    [](const Primitive& p, std::span<const Tensor> in, Attrs pr) {
                      Tensor out = Tensor::empty(in[0].shape(), in[0].dtype(), output_device(in));
                      dispatch({p, in, out, pr});
                      return out;
                    },
                .pullback =
                    [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
                      FftAttrs adjoint = a.attrs<FftAttrs>();
                      adjoint.sign = -adjoint.sign;
                      dx[0] = bind(fft_p, {dy}, adjoint);
                    },
                .jvp = linear_jvp,
                .batch = detail::batch_along_axis<FftAttrs>};

namespace {

Tensor transform(const Tensor& x, int64_t axis, int sign, const char* op) {
  FX_CHECK(x.defined(), "fx::", op, ": undefined tensor");
  FX_CHECK(x.ndim() >= 1, "fx::", op, ": needs at least one dimension, got ", x.shape());
  FX_CHECK(x.dtype() != boolean, "fx::", op, ": not defined for bool ", x.shape());
  FX_CHECK(axis >= -x.ndim() && axis < x.ndim(), "fx::", op, ": axis ", axis, " out of range for ",
           x.shape());
  if (axis < 0) axis += x.ndim();
  Tensor z = astype(x, complex_dtype(x.dtype()));
  const int64_t n = x.shape()[int(axis)];
  return bind(fft_p, {z}, FftAttrs{axis, sign, sign > 0 && n > 0 ? 1.0 / double(n) : 1.0});
}

}  // namespace

Tensor fft(const Tensor& x, int64_t axis) { return transform(x, axis, -1, "fft"); }
Tensor ifft(const Tensor& x, int64_t axis) { return transform(x, axis, +1, "ifft"); }
Tensor fft2(const Tensor& x) {
  FX_CHECK(x.defined() && x.ndim() >= 2, "fx::fft2: needs at least two dimensions, got ",
           x.defined() ? x.shape().to_string() : std::string("undefined"));
  return fft(fft(x, -1), -2);
}
Tensor ifft2(const Tensor& x) {
  FX_CHECK(x.defined() && x.ndim() >= 2, "fx::ifft2: needs at least two dimensions, got ",
           x.defined() ? x.shape().to_string() : std::string("undefined"));
  return ifft(ifft(x, -1), -2);
}

}  // namespace fx
