// Complex-specific primitives: building complex tensors from parts, taking them apart, conj,
// angle and |z|. Cotangents follow the convention dL/dx + i dL/dy (see fluxion/ops/complex.hpp):
// a function R^n -> C pulls back through the real and imaginary parts of the cotangent, and a
// function C -> R pushes its real cotangent into both parts.
#include "fluxion/ops/complex.hpp"

#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/primitives.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/batching.hpp"

namespace fx {

namespace {

// A complex input's parts as real tensors, output shaped and typed by `dtype`.
Tensor complex_to_real_forward(const Primitive& p, std::span<const Tensor> in, Attrs attrs) {
  Tensor out = Tensor::empty(in[0].shape(), real_dtype(in[0].dtype()), output_device(in));
  dispatch({p, in, out, attrs});
  return out;
}

// |z| > 0 ? dy / |z| : 0, the factor both angle's and abs's derivatives share.
Tensor safe_ratio(const Tensor& num, const Tensor& den) {
  return where(den > 0.0, num / where(den > 0.0, den, 1.0), 0.0);
}

}  // namespace

Primitive real_p{.name = "real",
                 .forward = complex_to_real_forward,
                 .pullback = [](const PullbackArgs&, const Tensor& dy,
                                Tensor* dx) { dx[0] = astype(dy, complex_dtype(dy.dtype())); },
                 .jvp = linear_jvp,
                 .batch = detail::batch_elementwise};

Primitive imag_p{.name = "imag",
                 .forward = complex_to_real_forward,
                 .pullback = [](const PullbackArgs&, const Tensor& dy,
                                Tensor* dx) { dx[0] = complex(expanded_zeros_like(dy), dy); },
                 .jvp = linear_jvp,
                 .batch = detail::batch_elementwise};

Primitive conj_p{
    .name = "conj",
    .forward = elementwise_forward,
    .pullback = [](const PullbackArgs&, const Tensor& dy, Tensor* dx) { dx[0] = conj(dy); },
    .jvp = linear_jvp,
    .batch = detail::batch_elementwise};

// arg z = atan2(y, x): d arg = (x dy - y dx) / |z|^2, so the cotangent is g (-y + i x).
Primitive angle_p{.name = "angle",
                  .forward = complex_to_real_forward,
                  .saves = saves::input(0),
                  .pullback =
                      [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
                        const Tensor& z = a.input(0);
                        Tensor x = real(z), y = imag(z);
                        Tensor g = safe_ratio(dy, x * x + y * y);
                        dx[0] = complex(neg(g * y), g * x);
                      },
                  .jvp = [](const JvpArgs& a, const Tensor* dz) -> Tensor {
                    const Tensor& z = a.input(0);
                    Tensor x = real(z), y = imag(z);
                    return safe_ratio(x * imag(dz[0]) - y * real(dz[0]), x * x + y * y);
                  },
                  .batch = detail::batch_elementwise};

// |z|: d|z| = (x dx + y dy) / |z|, so the cotangent is (dy / |z|) z (zero at z = 0).
Primitive complex_abs_p{.name = "complex_abs",
                        .forward = complex_to_real_forward,
                        .saves = saves::input(0) | saves::output,
                        .pullback =
                            [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
                              const Tensor& z = a.input(0);
                              Tensor g = safe_ratio(dy, a.output());
                              dx[0] = complex(g * real(z), g * imag(z));
                            },
                        .jvp = [](const JvpArgs& a, const Tensor* dz) -> Tensor {
                          const Tensor& z = a.input(0);
                          return safe_ratio(real(z) * real(dz[0]) + imag(z) * imag(dz[0]),
                                            a.output());
                        },
                        .batch = detail::batch_elementwise};

// re + i im from two real tensors of one shape and dtype.
Primitive complex_p{.name = "complex",
                    .forward =
                        [](const Primitive& p, std::span<const Tensor> in, Attrs pr) {
                          Tensor out = Tensor::empty(in[0].shape(), complex_dtype(in[0].dtype()),
                                                     output_device(in));
                          dispatch({p, in, out, pr});
                          return out;
                        },
                    .pullback =
                        [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
                          if (a.wants(0)) dx[0] = real(dy);
                          if (a.wants(1)) dx[1] = imag(dy);
                        },
                    .jvp = linear_jvp,
                    .batch = detail::batch_elementwise};

namespace {
void check_defined(const Tensor& x, const char* op) {
  FX_CHECK(x.defined(), "fx::", op, ": undefined tensor");
}
void check_complex(const Tensor& z, const char* op) {
  check_defined(z, op);
  FX_CHECK(is_complex(z.dtype()), "fx::", op, ": needs a complex tensor, got ",
           dtype_name(z.dtype()), " ", z.shape());
}
}  // namespace

Tensor complex(const Tensor& re, const Tensor& im) {
  check_defined(re, "complex");
  check_defined(im, "complex");
  FX_CHECK(!is_complex(re.dtype()) && !is_complex(im.dtype()) && re.dtype() != boolean &&
               im.dtype() != boolean,
           "fx::complex: needs real parts, got ", dtype_name(re.dtype()), " ", re.shape(), " and ",
           dtype_name(im.dtype()), " ", im.shape());
  // f64 parts make c128; anything else c64 (integers become f32 first).
  DType t = promote(re.dtype(), im.dtype()) == f64 ? f64 : f32;
  Tensor x = astype(re, t), y = astype(im, t);
  if (!(x.shape() == y.shape())) {
    Shape s = broadcast_shapes(x.shape(), y.shape(), "complex");
    x = expand(x, s);
    y = expand(y, s);
  }
  return bind(complex_p, {x, y});
}

Tensor real(const Tensor& z) {
  check_defined(z, "real");
  return is_complex(z.dtype()) ? bind(real_p, {z}) : z;
}

Tensor imag(const Tensor& z) {
  check_defined(z, "imag");
  return is_complex(z.dtype()) ? bind(imag_p, {z}) : expanded_zeros_like(z);
}

Tensor conj(const Tensor& z) {
  check_defined(z, "conj");
  return is_complex(z.dtype()) ? bind(conj_p, {z}) : z;
}

Tensor angle(const Tensor& z) {
  check_defined(z, "angle");
  if (is_complex(z.dtype())) return bind(angle_p, {z});
  FX_CHECK(z.dtype() != boolean, "fx::angle: not defined for bool ", z.shape());
  // arg of a real number: pi for negatives, 0 otherwise (a constant: no gradient).
  Tensor x = is_floating(z.dtype()) ? z : astype(z, f32);
  return where(x < 0.0, full_like(x, M_PI), 0.0);
}

Tensor abs2(const Tensor& z) {
  check_defined(z, "abs2");
  if (!is_complex(z.dtype())) return z * z;
  Tensor x = real(z), y = imag(z);
  return x * x + y * y;
}

Tensor polar(const Tensor& r, const Tensor& theta) {
  check_defined(r, "polar");
  check_defined(theta, "polar");
  FX_CHECK(!is_complex(r.dtype()) && !is_complex(theta.dtype()),
           "fx::polar: needs a real radius and angle, got ", dtype_name(r.dtype()), " ", r.shape(),
           " and ", dtype_name(theta.dtype()), " ", theta.shape());
  return complex(r * cos(theta), r * sin(theta));
}

namespace detail {
Tensor complex_abs(const Tensor& z) {
  check_complex(z, "abs");
  return bind(complex_abs_p, {z});
}
}  // namespace detail

}  // namespace fx
