// Reductions: sum, max, min (differentiable), argmax/argmin and any/all, plus composites on top.
#include "fluxion/ops/reduce.hpp"

#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/primitives.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/batching.hpp"
#include "ops/fused.hpp"

namespace fx {

Axes::Axes(std::initializer_list<int64_t> axes) {
  FX_CHECK(axes.size() <= size_t(kMaxDims), "fx::Axes: too many axes");
  for (int64_t a : axes) a_[n_++] = a;
}

uint64_t Axes::mask(int ndim, const char* op) const {
  if (n_ == 0) return ndim == 0 ? 0 : (uint64_t(1) << ndim) - 1;
  uint64_t m = 0;
  for (int k = 0; k < n_; ++k) {
    int a = normalize_axis(a_[k], ndim, op);
    FX_CHECK(!((m >> a) & 1u), op, ": axis ", a_[k], " given twice");
    m |= uint64_t(1) << a;
  }
  return m;
}

namespace {

// Axis errors from Axes::mask / normalize_axis, completed with the fx:: prefix and x's shape.
uint64_t checked_mask(const Axes& axes, const Tensor& x, const char* op) {
  try {
    return axes.mask(x.ndim(), op);
  } catch (const Error& e) {
    detail::fail("fx::", e.what(), " (input shape ", x.shape(), ")");
  }
}

Shape reduced_shape(const Shape& s, uint64_t mask, bool keepdim) {
  Shape r;
  for (int d = 0; d < s.size(); ++d) {
    if (!((mask >> d) & 1u)) r.push_back(s[d]);
    else if (keepdim) r.push_back(1);
  }
  return r;
}

// ReduceAttrs. The output, of dtype t over the kept axes, is filled by the kernel.
Tensor reduce_into(const Primitive& p, std::span<const Tensor> in, Attrs pr, DType t) {
  const ReduceAttrs& r = pr.get<ReduceAttrs>();
  Tensor out =
      Tensor::empty(reduced_shape(in[0].shape(), r.axes, r.keepdims), t, output_device(in));
  dispatch({p, in, out, pr});
  return out;
}
Tensor reduce_forward(const Primitive& p, std::span<const Tensor> in, Attrs pr) {
  return reduce_into(p, in, pr, in[0].dtype());
}
Tensor arg_forward(const Primitive& p, std::span<const Tensor> in, Attrs pr) {
  return reduce_into(p, in, pr, i64);
}
Tensor bool_reduce_forward(const Primitive& p, std::span<const Tensor> in, Attrs pr) {
  return reduce_into(p, in, pr, boolean);
}

// A reduced tensor brought back to the input's rank (size-1 reduced axes), then expanded.
Tensor unreduce(const Tensor& y, const ReduceAttrs& p) {
  Shape keep = reduced_shape(p.input_shape, p.axes, true);
  return expand(reshape(y, keep), p.input_shape);
}

void extremum_pullback(const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
  const ReduceAttrs& p = a.attrs<ReduceAttrs>();
  const Tensor& x = a.input(0);
  // Ties share the cotangent equally (as PyTorch's amax/amin do).
  Tensor mask = astype(x == unreduce(a.output(), p), x.dtype());
  Shape keep = reduced_shape(p.input_shape, p.axes, true);
  ReduceAttrs keepdim = p;
  keepdim.keepdims = true;
  Tensor count = bind(sum_p, {mask}, keepdim);
  dx[0] = mask * expand(reshape(dy, keep) / count, p.input_shape);
}

// d max = the mean of the tangents at the maximising positions (ties share, as in the pullback).
Tensor extremum_jvp(const JvpArgs& a, const Tensor* dx) {
  const ReduceAttrs& p = a.attrs<ReduceAttrs>();
  const Tensor& x = a.input(0);
  Tensor mask = astype(x == unreduce(a.output(), p), x.dtype());
  ReduceAttrs keepdim = p;
  keepdim.keepdims = true;
  Tensor mean_dx = bind(sum_p, {mask * dx[0]}, keepdim) / bind(sum_p, {mask}, keepdim);
  return reshape(mean_dx, a.output().shape());
}

// Applies a reduction primitive over the axes in `mask`.
Tensor bind_reduction(Primitive& prim, const Tensor& x, uint64_t mask, bool keepdim) {
  return bind(prim, {x}, ReduceAttrs{mask, keepdim, x.shape()});
}

Tensor reduce(Primitive& prim, const Tensor& x, const Axes& axes, bool keepdim) {
  FX_CHECK(x.defined(), "fx::", prim.name, ": undefined tensor");
  FX_CHECK(x.dtype() != boolean || &prim == &sum_p, "fx::", prim.name, ": not defined for bool ",
           x.shape());
  const uint64_t mask = checked_mask(axes, x, prim.name);
  FX_CHECK(&prim == &sum_p || !is_complex(x.dtype()), "fx::", prim.name,
           ": not defined for complex tensors (they are not ordered), got ", dtype_name(x.dtype()),
           " ", x.shape());
  if (&prim != &sum_p && &prim != &sum_squares_p && x.numel() == 0)
    detail::fail("fx::", prim.name, ": reduction of an empty tensor ", x.shape());
  return bind_reduction(prim, x, mask, keepdim);
}

}  // namespace

Primitive sum_p{.name = "sum",
                .forward = reduce_forward,
                .pullback = [](const PullbackArgs& a, const Tensor& dy,
                               Tensor* dx) { dx[0] = unreduce(dy, a.attrs<ReduceAttrs>()); },
                .jvp = linear_jvp,
                .batch = detail::batch_reduce};
Primitive max_p{.name = "max",
                .forward = reduce_forward,
                .saves = saves::input(0) | saves::output,
                .pullback = extremum_pullback,
                .jvp = extremum_jvp,
                .batch = detail::batch_reduce};
Primitive min_p{.name = "min",
                .forward = reduce_forward,
                .saves = saves::input(0) | saves::output,
                .pullback = extremum_pullback,
                .jvp = extremum_jvp,
                .batch = detail::batch_reduce};
// dy exp(x - y) for logsumexp's pullback, with dy and y already expanded to x's shape: one
// fused kernel (no x - y and exp(x - y) temporaries) when nothing records the backward pass and
// the device has it, else the composed, differentiable form (see ops/fused.hpp).
Tensor logsumexp_grad(const Tensor& dy, const Tensor& x, const Tensor& y) {
  if (!detail::must_compose() && (x.dtype() == f32 || x.dtype() == f64) &&
      dy.dtype() == x.dtype()) {
    if (has_kernel(logsumexp_backward_p, x.device())) return bind(logsumexp_backward_p, {dy, x, y});
  }
  return dy * exp(x - y);
}

// logsumexp as one entry: one kernel (maximum, shifted sum of exponentials, log) where the
// composite ran six ops and their temporaries, and a pullback dy exp(x - y) of three ops where
// the composite's backward went back through add, log, sum, exp and sub.
Primitive logsumexp_p{
    .name = "logsumexp",
    .forward = reduce_forward,
    .saves = saves::input(0) | saves::output,
    .pullback =
        [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
          const ReduceAttrs& p = a.attrs<ReduceAttrs>();
          dx[0] = logsumexp_grad(unreduce(dy, p), a.input(0), unreduce(a.output(), p));
        },
    .jvp =
        [](const JvpArgs& a, const Tensor* dx) {
          const ReduceAttrs& p = a.attrs<ReduceAttrs>();
          return bind(sum_p, {dx[0] * exp(a.input(0) - unreduce(a.output(), p))}, p);
        },
    .batch = detail::batch_reduce};
// sum(x^2) as one reduction: the composite's squared temporary (a write and a read as large as
// x, the GMM's (K, N, D)) is never made. The pullback is square's, dy (brought back over the
// reduced axes) * 2x: one fused pass when nothing records.
Primitive sum_squares_p{
    .name = "sum_squares",
    .forward = reduce_forward,
    .saves = saves::input(0),
    .pullback =
        [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
          const Tensor& x = a.input(0);
          Tensor d = unreduce(dy, a.attrs<ReduceAttrs>());
          // d is expanded, so it cannot take the result; x can when the tape alone holds it (a
          // (K, N, D) GMM temporary): no fresh buffer, and the write lands on lines just read.
          if (!fused_pullback(square_backward_p, d, x, dx[0], a.reusable_input(0)))
            dx[0] = d * (x * 2.0);
        },
    .jvp = [](const JvpArgs& a,
              const Tensor* dx) { return bind(sum_p, {dx[0] * (a.input(0) * 2.0)}, a.attrs()); },
    .batch = detail::batch_reduce};
// any and all: bool outputs over the reduced axes, never differentiated.
Primitive any_p{.name = "any", .forward = bool_reduce_forward, .batch = detail::batch_reduce};
Primitive all_p{.name = "all", .forward = bool_reduce_forward, .batch = detail::batch_reduce};
Primitive argmax_p{.name = "argmax", .forward = arg_forward, .batch = detail::batch_reduce};
// Internal, no pullback: only used when nothing records (logsumexp_grad above).
Primitive logsumexp_backward_p{.name = "logsumexp_backward", .forward = elementwise_forward};
Primitive argmin_p{.name = "argmin", .forward = arg_forward, .batch = detail::batch_reduce};

Tensor sum(const Tensor& x, Axes axes, bool keepdim) {
  if (x.defined() && x.dtype() == boolean) return reduce(sum_p, astype(x, i64), axes, keepdim);
  return reduce(sum_p, x, axes, keepdim);
}
Tensor max(const Tensor& x, Axes axes, bool keepdim) { return reduce(max_p, x, axes, keepdim); }
Tensor min(const Tensor& x, Axes axes, bool keepdim) { return reduce(min_p, x, axes, keepdim); }

// Any dtype: the kernels read "non-zero" (so NaN is true) without a conversion to bool first.
static Tensor bool_reduce(Primitive& prim, const Tensor& x, const Axes& axes, bool keepdim) {
  FX_CHECK(x.defined(), "fx::", prim.name, ": undefined tensor");
  return bind_reduction(prim, x, checked_mask(axes, x, prim.name), keepdim);
}
Tensor any(const Tensor& x, Axes axes, bool keepdim) {
  return bool_reduce(any_p, x, axes, keepdim);
}
Tensor all(const Tensor& x, Axes axes, bool keepdim) {
  return bool_reduce(all_p, x, axes, keepdim);
}

Tensor mean(const Tensor& x, Axes axes, bool keepdim) {
  FX_CHECK(x.defined(), "fx::mean: undefined tensor");
  FX_CHECK(is_inexact(x.dtype()), "fx::mean: needs a floating or complex tensor, got ",
           dtype_name(x.dtype()), " ", x.shape());
  (void)checked_mask(axes, x, "mean");
  Tensor s = sum(x, axes, keepdim);
  int64_t count = s.numel() == 0 ? 0 : x.numel() / s.numel();
  return s * (1.0 / double(count));
}

Tensor logsumexp(const Tensor& x, Axes axes, bool keepdim) {
  FX_CHECK(x.defined(), "fx::logsumexp: undefined tensor");
  FX_CHECK(is_floating(x.dtype()), "fx::logsumexp: needs a floating tensor, got ",
           dtype_name(x.dtype()), " ", x.shape());
  return reduce(logsumexp_p, x, axes, keepdim);
}

Tensor sum_squares(const Tensor& x, Axes axes, bool keepdim) {
  FX_CHECK(x.defined(), "fx::sum_squares: undefined tensor");
  FX_CHECK(is_floating(x.dtype()), "fx::sum_squares: needs a real floating tensor, got ",
           dtype_name(x.dtype()), " ", x.shape(),
           is_complex(x.dtype()) ? " (for |z|^2 use fx::abs first)" : "");
  return reduce(sum_squares_p, x, axes, keepdim);
}

static Tensor arg_reduce(Primitive& prim, const Tensor& x, int64_t axis, bool keepdim) {
  FX_CHECK(x.defined(), "fx::", prim.name, ": undefined tensor");
  FX_CHECK(x.ndim() > 0 && x.numel() > 0, "fx::", prim.name, ": needs a non-empty tensor, got ",
           x.shape());
  FX_CHECK(!is_complex(x.dtype()), "fx::", prim.name,
           ": not defined for complex tensors (they are not ordered), got ", dtype_name(x.dtype()),
           " ", x.shape());
  return bind_reduction(prim, x, checked_mask(Axes(axis), x, prim.name), keepdim);
}
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim) {
  return arg_reduce(argmax_p, x, axis, keepdim);
}
Tensor argmin(const Tensor& x, int64_t axis, bool keepdim) {
  return arg_reduce(argmin_p, x, axis, keepdim);
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  FX_CHECK(x.defined(), "fx::sum_to: undefined tensor");
  if (x.shape() == shape) return x;
  int lead = x.ndim() - shape.size();
  FX_CHECK(lead >= 0, "fx::sum_to: cannot sum ", x.shape(), " to ", shape);
  uint64_t mask = 0;
  for (int d = 0; d < x.ndim(); ++d) {
    int sd = d - lead;
    if (sd < 0 || (shape[sd] == 1 && x.shape()[d] != 1)) mask |= uint64_t(1) << d;
    else FX_CHECK(shape[sd] == x.shape()[d], "fx::sum_to: cannot sum ", x.shape(), " to ", shape);
  }
  // Summing only leading axes (a bias's cotangent: (B, n) -> (n)) drops them; summing only
  // inner ones keeps them as 1s. Either way the sum has the target shape, and only a mix needs
  // the reshape (an op of its own in a pass where every op counts).
  const bool only_leading = (mask >> lead) == 0;
  Tensor s = bind(sum_p, {x}, ReduceAttrs{mask, !only_leading, x.shape()});
  return lead == 0 || only_leading ? s : reshape(s, shape);
}

}  // namespace fx
