// max_pool, avg_pool and their pullbacks as primitives. Every rule is written with these four
// primitives, so pooling differentiates to any order: max_pool_backward's two modes
// (ops/pool_geometry.hpp) are each other's transposes, and the average pooling pair is linear.
#include "fluxion/ops/pool.hpp"

#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/ops/primitives.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/pool_geometry.hpp"

namespace fx {

namespace {

using pool_detail::Geometry;
using pool_detail::MaxMode;
using pool_detail::PoolAttrs;

Tensor dense(const Tensor& t) { return t.is_contiguous() ? t : contiguous(t); }

Shape pooled(const Shape& x, Attrs p) {
  const Geometry g(p);
  Shape y = x;
  for (int a = 0; a < g.nd; ++a) y[2 + a] = g.out_size(a, x[2 + a]);
  return y;
}

Tensor allocate_and_run(const Primitive& p, std::span<const Tensor> in, Attrs pr, const Shape& s) {
  Tensor out = Tensor::empty(s, in[0].dtype(), output_device(in));
  dispatch({p, in, out, pr});
  return out;
}

PoolAttrs with_mode(Attrs p, MaxMode m) {
  PoolAttrs q = p.get<PoolAttrs>();
  q.mode = m;
  return q;
}

MaxMode mode_of(Attrs p) { return p.get<PoolAttrs>().mode; }

}  // namespace

Primitive max_pool_p{
    .name = "max_pool",
    .forward = [](const Primitive& p, std::span<const Tensor> in,
                  Attrs pr) { return allocate_and_run(p, in, pr, pooled(in[0].shape(), pr)); },
    .saves = saves::input(0),
    .pullback =
        [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
          dx[0] = bind(max_pool_backward_p, {a.input(0), dense(dy)},
                       with_mode(a.attrs(), MaxMode::scatter));
        },
    .jvp = [](const JvpArgs& a, const Tensor* dx) -> Tensor {
      if (!dx[0].defined()) return Tensor();
      return bind(max_pool_backward_p, {a.input(0), dense(dx[0])},
                  with_mode(a.attrs(), MaxMode::gather));
    }};

// Inputs (x, t): linear in t, piecewise constant in x (no cotangent for x).
Primitive max_pool_backward_p{
    .name = "max_pool_backward",
    .forward =
        [](const Primitive& p, std::span<const Tensor> in, Attrs pr) {
          const Shape& xs = pr.get<PoolAttrs>().shape;
          const Shape s = mode_of(pr) == MaxMode::scatter ? xs : pooled(xs, pr);
          return allocate_and_run(p, in, pr, s);
        },
    .saves = saves::input(0),
    .pullback =
        [](const PullbackArgs& a, const Tensor& g, Tensor* dx) {
          if (!a.wants(1)) return;
          const MaxMode flip =
              mode_of(a.attrs()) == MaxMode::scatter ? MaxMode::gather : MaxMode::scatter;
          dx[1] = bind(max_pool_backward_p, {a.input(0), dense(g)}, with_mode(a.attrs(), flip));
        },
    .jvp = [](const JvpArgs& a, const Tensor* dx) -> Tensor {
      if (!dx[1].defined()) return Tensor();
      return bind(max_pool_backward_p, {a.input(0), dense(dx[1])}, a.attrs());
    }};

Primitive avg_pool_p{
    .name = "avg_pool",
    .forward = [](const Primitive& p, std::span<const Tensor> in,
                  Attrs pr) { return allocate_and_run(p, in, pr, pooled(in[0].shape(), pr)); },
    .saves = saves::nothing,
    .pullback = [](const PullbackArgs& a, const Tensor& dy,
                   Tensor* dx) { dx[0] = bind(avg_pool_backward_p, {dense(dy)}, a.attrs()); },
    .jvp = linear_jvp};

// Input dy (pooled shape) -> dx (PoolAttrs::shape): the adjoint of avg_pool.
Primitive avg_pool_backward_p{
    .name = "avg_pool_backward",
    .forward = [](const Primitive& p, std::span<const Tensor> in,
                  Attrs pr) { return allocate_and_run(p, in, pr, pr.get<PoolAttrs>().shape); },
    .saves = saves::nothing,
    .pullback = [](const PullbackArgs& a, const Tensor& g,
                   Tensor* dx) { dx[0] = bind(avg_pool_p, {dense(g)}, a.attrs()); },
    .jvp = linear_jvp};

namespace {

PoolAttrs pack(const char* op, const PoolGeometry& g, int nd, const Shape& x = {}) {
  PoolAttrs p;
  p.nd = nd;
  p.count_include_pad = g.count_include_pad;
  p.shape = x;
  FX_CHECK(!g.kernel.empty(), op, ": the kernel size is missing");
  auto fill = [&](const std::vector<int64_t>& v, std::array<int64_t, pool_detail::kMaxSpatial>& to,
                  int64_t lo, const char* what) {
    FX_CHECK(v.size() == 1 || v.size() == size_t(nd), op, ": ", what, " has ", v.size(),
             " values for ", nd, " spatial axes");
    for (int a = 0; a < nd; ++a) {
      const int64_t val = v[v.size() == 1 ? 0 : size_t(a)];
      FX_CHECK(val >= lo, op, ": ", what, " must be at least ", lo, ", got ", val);
      to[size_t(a)] = val;
    }
  };
  const std::vector<int64_t> zero = {0};
  fill(g.kernel, p.kernel, 1, "kernel");
  fill(g.stride.empty() ? g.kernel : g.stride, p.stride, 1, "stride");
  fill(g.padding.empty() ? zero : g.padding, p.pad_lo, 0, "padding");
  fill(g.padding_hi.empty() ? (g.padding.empty() ? zero : g.padding) : g.padding_hi, p.pad_hi, 0,
       "padding");
  return p;
}

Tensor pool(const char* op, const Primitive& prim, const Tensor& x, const PoolGeometry& g) {
  FX_CHECK(x.defined(), op, ": undefined input");
  (void)pool_output_shape(op, x.shape(), g);
  FX_CHECK(x.dtype() == f32 || x.dtype() == f64, op, ": needs an f32 or f64 input, got ",
           x.dtype());
  return bind(prim, {dense(x)}, pack(op, g, x.ndim() - 2, x.shape()));
}

}  // namespace

Shape pool_output_shape(const char* op, const Shape& x, const PoolGeometry& geo) {
  const int nd = x.size() - 2;
  FX_CHECK(nd >= 1 && nd <= 3, op, ": input must be (N, C, ...) with 1 to 3 spatial axes, got ", x);
  const PoolAttrs p = pack(op, geo, nd);
  const Geometry g(p);
  Shape y = x;
  for (int a = 0; a < nd; ++a) {
    FX_CHECK(g.pad_lo(a) < g.kernel(a) && g.pad_hi(a) < g.kernel(a), op, ": padding ", g.pad_lo(a),
             "+", g.pad_hi(a), " must be below the kernel size ", g.kernel(a));
    const int64_t padded = x[2 + a] + g.pad_lo(a) + g.pad_hi(a);
    FX_CHECK(g.kernel(a) <= padded, op, ": kernel ", g.kernel(a),
             " is larger than the padded input ", x, " along spatial axis ", a, " (", padded, ")");
    y[2 + a] = g.out_size(a, x[2 + a]);
  }
  return y;
}

Tensor max_pool(const Tensor& x, const PoolGeometry& g) {
  return pool("fx::max_pool", max_pool_p, x, g);
}
Tensor avg_pool(const Tensor& x, const PoolGeometry& g) {
  return pool("fx::avg_pool", avg_pool_p, x, g);
}

Tensor max_pool_backward(const Tensor& x, const Tensor& dy, const PoolGeometry& g) {
  const char* op = "fx::max_pool_backward";
  FX_CHECK(x.defined() && dy.defined(), op, ": undefined operand");
  const Shape ys = pool_output_shape(op, x.shape(), g);
  FX_CHECK(dy.shape() == ys, op, ": cotangent ", dy.shape(), " does not match the pooled shape ",
           ys, " of input ", x.shape());
  FX_CHECK(x.dtype() == dy.dtype() && (x.dtype() == f32 || x.dtype() == f64), op,
           ": needs f32 or f64 operands of one dtype, got ", x.dtype(), " and ", dy.dtype());
  return bind(max_pool_backward_p, {dense(x), dense(dy)}, pack(op, g, x.ndim() - 2, x.shape()));
}

Tensor avg_pool_backward(const Tensor& dy, const Shape& xs, const PoolGeometry& g) {
  const char* op = "fx::avg_pool_backward";
  FX_CHECK(dy.defined(), op, ": undefined cotangent");
  const Shape ys = pool_output_shape(op, xs, g);
  FX_CHECK(dy.shape() == ys, op, ": cotangent ", dy.shape(), " does not match the pooled shape ",
           ys, " of input ", xs);
  FX_CHECK(dy.dtype() == f32 || dy.dtype() == f64, op, ": needs f32 or f64, got ", dy.dtype());
  return bind(avg_pool_backward_p, {dense(dy)}, pack(op, g, xs.size() - 2, xs));
}

}  // namespace fx
