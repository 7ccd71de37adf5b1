// Elementwise primitives (table entries with their pullbacks) and the public functions.
#include "fluxion/ops/elementwise.hpp"

#include <cmath>

#include "fluxion/ops/complex.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/primitives.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/batching.hpp"
#include "ops/fused.hpp"

namespace fx {
// astype: the dtype converted to and the one converted from (the pullback's).
struct AstypeAttrs {
  DType to = DType::f32, from = DType::f32;
  FX_ATTRS(AstypeAttrs, to, from)
};

#define FX_PULLBACK [](const PullbackArgs& a, const Tensor& dy, Tensor* dx)

#define FX_JVP [](const JvpArgs& a, const Tensor* dx) -> Tensor

namespace {
// Sum of two tangents where undefined means zero.
Tensor plus(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a + b;
}
// dy * conj(x) and dy / conj(x): a holomorphic op's pullback. Real x (the hot path) is used
// as it is, without the handle copy that conj's identity result would cost.
Tensor mul_conj(const Tensor& dy, const Tensor& x) {
  return is_complex(x.dtype()) ? dy * conj(x) : dy * x;
}
Tensor div_conj(const Tensor& dy, const Tensor& x) {
  return is_complex(x.dtype()) ? dy / conj(x) : dy / x;
}
// Tangent i, or an allocation-free zero of input i's shape.
Tensor or_zeros(const JvpArgs& a, const Tensor* dx, int i) {
  return dx[i].defined() ? dx[i] : expanded_zeros_like(a.input(i));
}
}  // namespace

// ---- unary: dx = dy * f'(x), written in public ops so it differentiates again.
Primitive neg_p{
    .name = "neg", .forward = elementwise_forward, .pullback = FX_PULLBACK{dx[0] = neg(dy);
(void)a;
}  // namespace fx
, .jvp = linear_jvp, .batch = detail::batch_elementwise
}
;
// relu' is taken as 0 at 0 (as in PyTorch and Flux).
Primitive relu_p{.name = "relu",
                 .forward = elementwise_forward,
                 .saves = saves::output,
                 .pullback = FX_PULLBACK{const Tensor& y = a.output();
if (!fused_pullback(relu_backward_p, dy, y, dx[0])) dx[0] = where(y > 0.0, dy, 0.0);
}
, .jvp = FX_JVP { return where(a.output() > 0.0, dx[0], 0.0); }
, .batch = detail::batch_elementwise
}
;
Primitive abs_p{.name = "abs",
                .forward = elementwise_forward,
                .saves = saves::input(0),
                .pullback = FX_PULLBACK{dx[0] = dy * sign(a.input(0));
}
, .jvp = FX_JVP { return dx[0] * sign(a.input(0)); }
, .batch = detail::batch_elementwise
}
;
// square is x * x as one entry: its pullback is one pass (dy * 2x, fused when nothing records)
// where x * x's was two products and their sum, over tensors as large as x.
Primitive square_p{.name = "square",
                   .forward = elementwise_forward,
                   .saves = saves::input(0),
                   .pullback = FX_PULLBACK{const Tensor& x = a.input(0);
if (!fused_pullback(square_backward_p, dy, x, dx[0], a.reusable_input(0)))
  dx[0] = mul_conj(dy, x * 2.0);
}
, .jvp = FX_JVP { return dx[0] * (a.input(0) * 2.0); }
, .batch = detail::batch_elementwise
}
;
// sign is piecewise constant: no pullback, so its output is never tracked (a zero cotangent).
Primitive sign_p{
    .name = "sign", .forward = elementwise_forward, .batch = detail::batch_elementwise};

// ---- with a number: ScalarAttrs
Primitive add_scalar_p{
    .name = "add_scalar", .forward = elementwise_forward, .pullback = FX_PULLBACK{dx[0] = dy;
(void)a;
}
, .jvp = FX_JVP {
  (void)a;
  return dx[0];
}
, .batch = detail::batch_elementwise
}
;
Primitive mul_scalar_p{.name = "mul_scalar",
                       .forward = elementwise_forward,
                       .pullback = FX_PULLBACK{dx[0] = dy * a.attrs<ScalarAttrs>().s;
}
, .jvp = linear_jvp, .batch = detail::batch_elementwise
}
;
Primitive pow_scalar_p{.name = "pow_scalar",
                       .forward = elementwise_forward,
                       .saves = saves::input(0),
                       .pullback = FX_PULLBACK{double s = a.attrs<ScalarAttrs>().s;
if (s != 0) dx[0] = mul_conj(dy, pow(a.input(0), s - 1) * s);
}
, .jvp = FX_JVP {
  double s = a.attrs<ScalarAttrs>().s;
  return s == 0 ? Tensor() : dx[0] * (pow(a.input(0), s - 1) * s);
}
, .batch = detail::batch_elementwise
}
;

// ---- binary on equal shapes (the public functions expand first)
Primitive add_p{.name = "add", .forward = elementwise_forward, .pullback = FX_PULLBACK{(void)a;
dx[0] = dy;
dx[1] = dy;
}
, .jvp = FX_JVP {
  (void)a;
  return plus(dx[0], dx[1]);
}
, .batch = detail::batch_elementwise
}
;
Primitive sub_p{.name = "sub", .forward = elementwise_forward, .pullback = FX_PULLBACK{dx[0] = dy;
if (a.wants(1)) dx[1] = neg(dy);
}
, .jvp = FX_JVP {
  (void)a;
  return plus(dx[0], dx[1].defined() ? neg(dx[1]) : Tensor());
}
, .batch = detail::batch_elementwise
}
;
Primitive mul_p{
    .name = "mul",
    .forward = elementwise_forward,
    .saves = saves::inputs,
    .pullback = FX_PULLBACK{
        if (a.wants(0) && a.wants(1) && fused_mul_pullback(dy, a.input(0), a.input(1), dx)) return;
if (a.wants(0)) dx[0] = mul_conj(dy, a.input(1));
if (a.wants(1)) dx[1] = mul_conj(dy, a.input(0));
}
, .jvp = FX_JVP {
  return plus(dx[0].defined() ? dx[0] * a.input(1) : Tensor(),
              dx[1].defined() ? a.input(0) * dx[1] : Tensor());
}
, .batch = detail::batch_elementwise
}
;
Primitive div_p{.name = "div",
                .forward = elementwise_forward,
                .saves = saves::input(1) | saves::output,
                .pullback = FX_PULLBACK{Tensor g = div_conj(dy, a.input(1));
if (a.wants(1)) dx[1] = neg(mul_conj(g, a.output()));
dx[0] = std::move(g);
}
, .jvp = FX_JVP {
  const Tensor& b = a.input(1);
  return plus(dx[0].defined() ? dx[0] / b : Tensor(),
              dx[1].defined() ? neg(dx[1] * a.output() / b) : Tensor());
}
, .batch = detail::batch_elementwise
}
;
Primitive pow_p{.name = "pow",
                .forward = elementwise_forward,
                .saves = saves::inputs | saves::output,
                .pullback = FX_PULLBACK{const Tensor& x = a.input(0), &e = a.input(1);
if (a.wants(0)) dx[0] = dy * (e * pow(x, e - 1.0));
// d/de x^e = x^e log x, taken as 0 where x <= 0 (as PyTorch does)
if (a.wants(1)) dx[1] = where(x > 0.0, dy*(a.output() * log(x)), 0.0);
}
, .jvp = FX_JVP {
  const Tensor &x = a.input(0), &e = a.input(1);
  return plus(dx[0].defined() ? dx[0] * (e * pow(x, e - 1.0)) : Tensor(),
              dx[1].defined() ? where(x > 0.0, dx[1] * (a.output() * log(x)), 0.0) : Tensor());
}
, .batch = detail::batch_elementwise
}
;
Primitive maximum_p{.name = "maximum",
                    .forward = elementwise_forward,
                    .saves = saves::inputs,
                    .pullback = FX_PULLBACK{Tensor first = a.input(0) >= a.input(1);
if (a.wants(0)) dx[0] = where(first, dy, 0.0);
if (a.wants(1)) dx[1] = where(first, 0.0, dy);
}
, .jvp = FX_JVP { return where(a.input(0) >= a.input(1), or_zeros(a, dx, 0), or_zeros(a, dx, 1)); }
, .batch = detail::batch_elementwise
}
;
Primitive minimum_p{.name = "minimum",
                    .forward = elementwise_forward,
                    .saves = saves::inputs,
                    .pullback = FX_PULLBACK{Tensor first = a.input(0) <= a.input(1);
if (a.wants(0)) dx[0] = where(first, dy, 0.0);
if (a.wants(1)) dx[1] = where(first, 0.0, dy);
}
, .jvp = FX_JVP { return where(a.input(0) <= a.input(1), or_zeros(a, dx, 0), or_zeros(a, dx, 1)); }
, .batch = detail::batch_elementwise
}
;

// ---- comparisons: bool outputs, never differentiated
Primitive eq_p{.name = "eq", .forward = compare_forward, .batch = detail::batch_elementwise};
Primitive ne_p{.name = "ne", .forward = compare_forward, .batch = detail::batch_elementwise};
Primitive lt_p{.name = "lt", .forward = compare_forward, .batch = detail::batch_elementwise};
Primitive le_p{.name = "le", .forward = compare_forward, .batch = detail::batch_elementwise};
Primitive gt_p{.name = "gt", .forward = compare_forward, .batch = detail::batch_elementwise};
Primitive ge_p{.name = "ge", .forward = compare_forward, .batch = detail::batch_elementwise};

// ---- finiteness: bool outputs shaped like the input, never differentiated
Primitive isnan_p{.name = "isnan", .forward = compare_forward, .batch = detail::batch_elementwise};
Primitive isinf_p{.name = "isinf", .forward = compare_forward, .batch = detail::batch_elementwise};
Primitive isfinite_p{
    .name = "isfinite", .forward = compare_forward, .batch = detail::batch_elementwise};

// ---- selection and conversion
Primitive where_p{.name = "where",
                  .forward =
                      [](const Primitive& p, std::span<const Tensor> in, Attrs pr) {
                        Tensor out = Tensor::empty(in[1].shape(), in[1].dtype(), output_device(in));
                        dispatch({p, in, out, pr});
                        return out;
                      },
                  .saves = saves::input(0),
                  .pullback = FX_PULLBACK{if (a.wants(1)) dx[1] = where(a.input(0), dy, 0.0);
if (a.wants(2)) dx[2] = where(a.input(0), 0.0, dy);
}
, .jvp = linear_jvp, .batch = detail::batch_elementwise
}
;
Primitive astype_p{
    .name = "astype",
    .forward =
        [](const Primitive& p, std::span<const Tensor> in, Attrs pr) {
          Tensor out = Tensor::empty(in[0].shape(), pr.get<AstypeAttrs>().to, output_device(in));
          dispatch({p, in, out, pr});
          return out;
        },
    .pullback = FX_PULLBACK{// real -> complex pulls back the real part of the cotangent.
                            dx[0] = astype(real(dy), a.attrs<AstypeAttrs>().from);
}
, .jvp = linear_jvp, .batch = detail::batch_elementwise
}
;
Primitive copy_p{.name = "copy", .forward = elementwise_forward, .pullback = FX_PULLBACK{dx[0] = dy;
(void)a;
}
, .jvp = FX_JVP {
  (void)a;
  return dx[0];
}
, .batch = detail::batch_elementwise
}
;

// ---- the math functions of the table (fluxion/ops/elementwise_defs.hpp): entry, pullback,
// pushforward, fused first-order pullback and public function, all from Op::value/derivative.
namespace {

// f'(x) as a tensor, from what Op reads (the other argument is undefined: reading it throws).
template <class Op>
Tensor derivative_of(const Tensor& x, const Tensor& y) {
  return Op::derivative(x, y);
}

// An op whose derivative has no tensor form (elem::tensor_derivative): an fx::Error, in both
// directions and even where the fused kernel could compute it, so that every order and mode
// agree on what is differentiable.
template <class Op>
void check_tensor_derivative(const Primitive& p, const Tensor& x) {
  FX_CHECK(elem::tensor_derivative<Op>, "fx::", p.name,
           ": its derivative is not implemented for tensors (numbers, fx::Real and fx::Dual "
           "have it); got ",
           dtype_name(x.dtype()), " ", x.shape());
}

// dx = dy * f'(x) (conj(f'(x)) for complex: the pullback of a holomorphic function), in one
// fused kernel when nothing records and the dtype is real, in public ops (differentiable
// again) otherwise.
template <class Op, Primitive& Backward>
void table_pullback(const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
  if constexpr (!elem::tensor_derivative<Op>) {
    check_tensor_derivative<Op>(a.primitive(), dy);
  } else {
    constexpr bool reads_y = Op::reads == elem::Reads::output;
    const Tensor& s = reads_y ? a.output() : a.input(0);
    if (fused_pullback(Backward, dy, s, dx[0], reads_y ? nullptr : a.reusable_input(0))) return;
    const Tensor d = reads_y ? derivative_of<Op>(Tensor(), s) : derivative_of<Op>(s, Tensor());
    dx[0] = mul_conj(dy, d);
  }
}

template <class Op>
Tensor table_jvp(const JvpArgs& a, const Tensor* dx) {
  if constexpr (!elem::tensor_derivative<Op>) {
    check_tensor_derivative<Op>(a.primitive(), a.input(0));
    return Tensor();
  } else {
    return dx[0] * derivative_of<Op>(a.input(0), a.output());
  }
}

template <class Op>
void table_binary_pullback(const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
  const Tensor &x = a.input(0), &z = a.input(1), &y = a.output();
  if (a.wants(0)) dx[0] = dy * Op::da(x, z, y);
  if constexpr (elem::has_db<Op>)
    if (a.wants(1)) dx[1] = dy * Op::db(x, z, y);
}

template <class Op>
Tensor table_binary_jvp(const JvpArgs& a, const Tensor* dx) {
  const Tensor &x = a.input(0), &z = a.input(1), &y = a.output();
  Tensor t0 = dx[0].defined() ? dx[0] * Op::da(x, z, y) : Tensor();
  if constexpr (elem::has_db<Op>)
    return plus(t0, dx[1].defined() ? dx[1] * Op::db(x, z, y) : Tensor());
  else return t0;
}

constexpr uint32_t saves_of(elem::Reads r) {
  return r == elem::Reads::output ? saves::output : saves::input(0);
}

}  // namespace

#define FX_DEFINE_UNARY(op)                                                           \
  Primitive op##_backward_p{.name = #op "_backward", .forward = elementwise_forward}; \
  Primitive op##_p{.name = #op,                                                       \
                   .forward = elementwise_forward,                                    \
                   .saves = saves_of(elem::op##_op::reads),                           \
                   .pullback = table_pullback<elem::op##_op, op##_backward_p>,        \
                   .jvp = table_jvp<elem::op##_op>,                                   \
                   .batch = detail::batch_elementwise};
#define FX_DEFINE_BINARY(op)                                         \
  Primitive op##_p{.name = #op,                                      \
                   .forward = elementwise_forward,                   \
                   .saves = saves::inputs | saves::output,           \
                   .pullback = table_binary_pullback<elem::op##_op>, \
                   .jvp = table_binary_jvp<elem::op##_op>,           \
                   .batch = detail::batch_elementwise};
FX_ELEMENTWISE_UNARY(FX_DEFINE_UNARY)
FX_ELEMENTWISE_BINARY(FX_DEFINE_BINARY)
#undef FX_DEFINE_UNARY
#undef FX_DEFINE_BINARY

#undef FX_PULLBACK
#undef FX_JVP

// ---- fused first-order pullbacks (src/ops/fused.hpp): no pullback of their own, never tracked
Primitive square_backward_p{.name = "square_backward", .forward = elementwise_forward};
Primitive relu_backward_p{.name = "relu_backward", .forward = elementwise_forward};

bool has_kernel(const Primitive& p, Device d) {
  for (KernelFn k : p.kernels[int(d.kind)])
    if (k) return true;
  return false;
}

bool sole_dense_handle(const Tensor& t) {
  const TensorImpl* p = t.impl();
  return p->refs.load(std::memory_order_acquire) == 1 &&
         p->storage->refs.load(std::memory_order_acquire) == 1 && p->ntags == 0 &&
         t.is_contiguous();
}

// [dy * b | dy * a], one buffer of two dense halves.
Primitive mul_backward_p{.name = "mul_backward",
                         .forward = [](const Primitive& p, std::span<const Tensor> in, Attrs pr) {
                           Tensor out =
                               Tensor::empty({2 * in[0].numel()}, in[0].dtype(), in[0].device());
                           dispatch({p, in, out, pr});
                           return out;
                         }};

bool fused_mul_pullback(const Tensor& dy, const Tensor& a, const Tensor& b, Tensor* dx) {
  if (detail::must_compose()) return false;
  const DType t = dy.dtype();
  if ((t != f32 && t != f64) || a.dtype() != t || b.dtype() != t) return false;
  // Expanded operands (a bias broadcast over a batch) keep the composed rule: their cotangents
  // are summed back to the smaller shape anyway.
  if (!dy.is_contiguous() || !a.is_contiguous() || !b.is_contiguous()) return false;
  if (!has_kernel(mul_backward_p, dy.device())) return false;
  Tensor both = bind(mul_backward_p, {dy, a, b});
  const auto st = contiguous_strides(dy.shape());
  dx[0] = make_view(both, dy.shape(), st.data(), both.offset());
  dx[1] = make_view(both, dy.shape(), st.data(), both.offset() + dy.numel());
  return true;
}

bool fused_pullback(const Primitive& p, const Tensor& dy, const Tensor& y, Tensor& dx,
                    Tensor* reusable_y) {
  // Under any recording the result must stay differentiable (or carry a tangent): compose.
  if (detail::must_compose()) return false;
  if (!dy.defined() || !y.defined() || dy.dtype() != y.dtype() || !(dy.shape() == y.shape()))
    return false;
  if (dy.dtype() != f32 && dy.dtype() != f64) return false;
  if (!has_kernel(p, dy.device())) return false;
  if (sole_dense_handle(dy)) {
    // A cotangent that only this backward pass holds takes the result in place: no fresh
    // buffer, and for a large dy the write lands on lines the read just brought into cache.
    detail::BorrowedTensors in({dy, y});
    dispatch({p, in.span(), dy, {}});
    dx = dy;
    return true;
  }
  if (reusable_y) {  // an elementwise kernel may write over an input it reads at the same index
    detail::BorrowedTensors in({dy, y});
    dispatch({p, in.span(), y, {}});
    dx = std::move(*reusable_y);
    return true;
  }
  dx = bind(p, {dy, y});
  return true;
}

// ---- public functions
namespace {

void check_defined(const Tensor& x, const char* op) {
  FX_CHECK(x.defined(), "fx::", op, ": undefined tensor");
}

void check_not_complex(const Tensor& x, const char* op) {
  FX_CHECK(!is_complex(x.dtype()), "fx::", op, ": not defined for complex tensors, got ",
           dtype_name(x.dtype()), " ", x.shape());
}

// Unary functions of real numbers that are also holomorphic functions of complex numbers.
Tensor inexact_unary(Primitive& p, const Tensor& x) {
  check_defined(x, p.name);
  FX_CHECK(is_inexact(x.dtype()), "fx::", p.name, ": needs a floating or complex tensor, got ",
           dtype_name(x.dtype()), " ", x.shape());
  return bind(p, {x});
}

Tensor floating_unary(Primitive& p, const Tensor& x) {
  check_defined(x, p.name);
  FX_CHECK(is_floating(x.dtype()), "fx::", p.name, ": needs a floating tensor, got ",
           dtype_name(x.dtype()), " ", x.shape());
  return bind(p, {x});
}

Tensor numeric_unary(Primitive& p, const Tensor& x, bool complex_ok = false) {
  check_defined(x, p.name);
  FX_CHECK(x.dtype() != boolean, "fx::", p.name, ": not defined for bool ", x.shape());
  if (!complex_ok) check_not_complex(x, p.name);
  return bind(p, {x});
}

Tensor with_number(Primitive& p, const Tensor& x, double s) {
  check_defined(x, p.name);
  FX_CHECK(x.dtype() != boolean, "fx::", p.name, ": not defined for bool ", x.shape());
  return bind(p, {x}, ScalarAttrs{s});
}

// Promotes and broadcasts a, b to a common dtype and shape.
std::pair<Tensor, Tensor> align(const Tensor& a, const Tensor& b, const char* op) {
  check_defined(a, op);
  check_defined(b, op);
  DType t = promote(a.dtype(), b.dtype());
  Tensor x = a.dtype() == t ? a : astype(a, t);
  Tensor y = b.dtype() == t ? b : astype(b, t);
  if (!(x.shape() == y.shape())) {
    Shape s = broadcast_shapes(x.shape(), y.shape(), op);
    x = expand(x, s);
    y = expand(y, s);
  }
  return {std::move(x), std::move(y)};
}

// Equal dtypes and shapes need neither conversion nor broadcasting: the caller's handles can go
// to bind as they are, with no handle copies (the common case inside a model).
bool aligned(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.dtype() == b.dtype() && a.shape() == b.shape();
}

Tensor binary(Primitive& p, const Tensor& a, const Tensor& b, bool floating_only = false) {
  if (aligned(a, b) && a.dtype() != boolean && (!floating_only || is_floating(a.dtype())))
    return bind(p, {a, b});
  auto [x, y] = align(a, b, p.name);
  FX_CHECK(x.dtype() != boolean, "fx::", p.name, ": not defined for bool ", a.shape(), " and ",
           b.shape());
  FX_CHECK(!floating_only || is_floating(x.dtype()), "fx::", p.name,
           ": needs floating tensors, got ", dtype_name(a.dtype()), " ", a.shape(), " and ",
           dtype_name(b.dtype()), " ", b.shape());
  return bind(p, {x, y});
}

// Functions of ordered (real) values: max, min.
Tensor real_binary(Primitive& p, const Tensor& a, const Tensor& b) {
  check_defined(a, p.name);
  check_defined(b, p.name);
  FX_CHECK(!is_complex(a.dtype()) && !is_complex(b.dtype()), "fx::", p.name,
           ": not defined for complex tensors, got ", dtype_name(a.dtype()), " ", a.shape(),
           " and ", dtype_name(b.dtype()), " ", b.shape());
  return binary(p, a, b);
}

Tensor compare(Primitive& p, const Tensor& a, const Tensor& b) {
  if (aligned(a, b) && !is_complex(a.dtype())) return bind(p, {a, b});
  auto [x, y] = align(a, b, p.name);
  check_not_complex(x, p.name);  // complex numbers are not ordered (and == is rarely meant)
  return bind(p, {x, y});
}

}  // namespace

#define FX_DEFINE_UNARY(name)                                                              \
  Tensor name(const Tensor& x) {                                                           \
    return elem::name##_op::domain == elem::Domain::inexact ? inexact_unary(name##_p, x)   \
                                                            : floating_unary(name##_p, x); \
  }
#define FX_DEFINE_BINARY(name) \
  Tensor name(const Tensor& a, const Tensor& b) { return binary(name##_p, a, b, true); }
FX_ELEMENTWISE_UNARY(FX_DEFINE_UNARY)
FX_ELEMENTWISE_BINARY(FX_DEFINE_BINARY)
#undef FX_DEFINE_UNARY
#undef FX_DEFINE_BINARY

Tensor neg(const Tensor& x) { return numeric_unary(neg_p, x, true); }
Tensor relu(const Tensor& x) { return numeric_unary(relu_p, x); }
namespace detail {
Tensor complex_abs(const Tensor& z);  // src/ops/complex.cpp
}
Tensor abs(const Tensor& x) {
  check_defined(x, "abs");
  return is_complex(x.dtype()) ? detail::complex_abs(x) : numeric_unary(abs_p, x);
}
Tensor sign(const Tensor& x) { return numeric_unary(sign_p, x); }

Tensor square(const Tensor& x) { return numeric_unary(square_p, x, true); }
// reciprocal and rsqrt divide rather than call pow(x, -1) / pow(x, -0.5): a libm pow per
// element costs ~30x a division. The 1 is a 0-d tensor that the division expands (stride 0), so
// the kernel divides a constant by each element, and its pullback gives -dy / conj(x)^2 (times
// sqrt's for rsqrt). Integer tensors stay an error, as they were through pow.
Tensor reciprocal(const Tensor& x) {
  check_defined(x, "reciprocal");
  FX_CHECK(is_inexact(x.dtype()), "fx::reciprocal: needs a floating or complex tensor, got ",
           dtype_name(x.dtype()), " ", x.shape());
  return div(scalar(1, x.dtype(), x.device()), x);
}
Tensor rsqrt(const Tensor& x) {
  check_defined(x, "rsqrt");
  FX_CHECK(is_inexact(x.dtype()), "fx::rsqrt: needs a floating or complex tensor, got ",
           dtype_name(x.dtype()), " ", x.shape());
  return div(scalar(1, x.dtype(), x.device()), sqrt(x));
}
Tensor softplus(const Tensor& x) {
  // log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large |x|.
  return relu(x) + log1p(exp(neg(abs(x))));
}
Tensor identity(const Tensor& x) { return x; }

Tensor add(const Tensor& a, const Tensor& b) { return binary(add_p, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) {
  // A subtrahend broadcast to a larger result (x - mu: (N, D) - (K, 1, D)) is negated at its
  // own size and added: the backward pass then negates its cotangent after expand has summed
  // it, instead of negating the whole broadcast cotangent first. Same bits (a - b = a + -b).
  if (a.defined() && b.defined() && !(a.shape() == b.shape()) && a.dtype() != boolean &&
      b.dtype() != boolean && broadcast_shapes(a.shape(), b.shape(), "sub").numel() > b.numel())
    return binary(add_p, a, neg(b));
  return binary(sub_p, a, b);
}
Tensor mul(const Tensor& a, const Tensor& b) { return binary(mul_p, a, b); }
Tensor div(const Tensor& a, const Tensor& b) {
  // True division: integer operands become f32 first (no integer division by zero traps).
  if (a.defined() && b.defined() && !is_inexact(promote(a.dtype(), b.dtype())))
    return binary(div_p, astype(a, f32), astype(b, f32));
  return binary(div_p, a, b);
}
Tensor pow(const Tensor& a, const Tensor& b) { return binary(pow_p, a, b, true); }
Tensor maximum(const Tensor& a, const Tensor& b) { return real_binary(maximum_p, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return real_binary(minimum_p, a, b); }

Tensor add(const Tensor& a, double b) { return with_number(add_scalar_p, a, b); }
Tensor mul(const Tensor& a, double b) { return with_number(mul_scalar_p, a, b); }
Tensor pow(const Tensor& a, double b) {
  check_defined(a, "pow_scalar");
  FX_CHECK(is_inexact(a.dtype()), "fx::pow: needs a floating or complex tensor, got ",
           dtype_name(a.dtype()), " ", a.shape());
  return with_number(pow_scalar_p, a, b);
}
Tensor clamp(const Tensor& x, double lo, double hi) {
  check_defined(x, "clamp");
  FX_CHECK(lo <= hi, "fx::clamp: lower bound ", lo, " exceeds upper bound ", hi);
  return minimum(maximum(x, scalar(lo, x.dtype(), x.device())), scalar(hi, x.dtype(), x.device()));
}

Tensor eq(const Tensor& a, const Tensor& b) { return compare(eq_p, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(ne_p, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(lt_p, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(le_p, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(gt_p, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(ge_p, a, b); }
Tensor isnan(const Tensor& x) {
  check_defined(x, "isnan");
  return bind(isnan_p, {x});
}
Tensor isinf(const Tensor& x) {
  check_defined(x, "isinf");
  return bind(isinf_p, {x});
}
Tensor isfinite(const Tensor& x) {
  check_defined(x, "isfinite");
  return bind(isfinite_p, {x});
}
Tensor operator==(const Tensor& a, double b) {
  check_defined(a, "eq");
  return eq(a, scalar(b, a.dtype(), a.device()));
}
Tensor operator<(const Tensor& a, double b) {
  check_defined(a, "lt");
  return lt(a, scalar(b, a.dtype(), a.device()));
}
Tensor operator>(const Tensor& a, double b) {
  check_defined(a, "gt");
  return gt(a, scalar(b, a.dtype(), a.device()));
}
Tensor operator<=(const Tensor& a, double b) {
  check_defined(a, "le");
  return le(a, scalar(b, a.dtype(), a.device()));
}
Tensor operator>=(const Tensor& a, double b) {
  check_defined(a, "ge");
  return ge(a, scalar(b, a.dtype(), a.device()));
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_defined(cond, "where");
  FX_CHECK(cond.dtype() == boolean, "fx::where: condition must be bool, got ",
           dtype_name(cond.dtype()), " ", cond.shape());
  auto [x, y] = align(a, b, "where");
  Tensor c = cond;
  Shape s = broadcast_shapes(c.shape(), x.shape(), "where");
  if (!(c.shape() == s)) c = expand(c, s);
  if (!(x.shape() == s)) {
    x = expand(x, s);
    y = expand(y, s);
  }
  return bind(where_p, {c, x, y});
}
Tensor where(const Tensor& cond, const Tensor& a, double b) {
  check_defined(a, "where");
  return where(cond, a, scalar(b, a.dtype(), a.device()));
}
Tensor where(const Tensor& cond, double a, const Tensor& b) {
  check_defined(b, "where");
  return where(cond, scalar(a, b.dtype(), b.device()), b);
}

Tensor astype(const Tensor& x, DType dtype) {
  check_defined(x, "astype");
  if (x.dtype() == dtype) return x;
  FX_CHECK(!is_complex(x.dtype()) || is_complex(dtype), "fx::astype: ", dtype_name(x.dtype()), " ",
           x.shape(), " to ", dtype_name(dtype),
           " would drop the imaginary part; use fx::real, fx::imag or fx::abs");
  const AstypeAttrs p{dtype, x.dtype()};
  // Conversions to an integer or bool type are not differentiable.
  if (!is_inexact(dtype) && !detail::intercepted()) {
    Tensor out = Tensor::empty(x.shape(), dtype, x.device());
    Tensor in[] = {x};
    dispatch({astype_p, in, out, p});
    return out;
  }
  return bind(astype_p, {x}, p);
}

Tensor stop_gradient(const Tensor& x) {
  check_defined(x, "stop_gradient");
  return untagged_view(x);
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (!(a.shape() == b.shape())) return false;
  // Complex tensors compare as complex numbers (|a - b| is the modulus); real ones as reals.
  auto va = to_vector<std::complex<double>>(a), vb = to_vector<std::complex<double>>(b);
  for (size_t i = 0; i < va.size(); ++i) {
    bool na = std::isnan(va[i].real()) || std::isnan(va[i].imag());
    bool nb = std::isnan(vb[i].real()) || std::isnan(vb[i].imag());
    if (na != nb) return false;
    if (!na && std::abs(va[i] - vb[i]) > atol + rtol * std::abs(vb[i])) return false;
  }
  return true;
}

}  // namespace fx
