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

Tensor dense(const Tensor& t) { return t.is_contiguous() ? t : contiguous(t); }

Shape pooled(const Shape& x, const Params& p) {
  const Geometry g(p);
  Shape y = x;
  for (int a = 0; a < g.nd; ++a) y[2 + a] = g.out_size(a, x[2 + a]);
  return y;
}

Tensor allocate_and_run(const Primitive& p, std::span<const Tensor> in, const Params& pr,
                        const Shape& s) {
  Tensor out = Tensor::empty(s, in[0].dtype(), output_device(in));
  dispatch({p, in, out, pr});
  return out;
}

Params with_mode(const Params& p, MaxMode m) {
  Params q = p;
  q.i[2] = int64_t(m);
  return q;
}

MaxMode mode_of(const Params& p) { return MaxMode(p.i[2]); }

}  // namespace

Primitive max_pool_p{.name = "max_pool",
                     .forward =
                         [](const Primitive& p, std::span<const Tensor> in, const Params& pr) {
                           return allocate_and_run(p, in, pr, pooled(in[0].shape(), pr));
                         },
                     .saves = saves::input(0),
                     .pullback =
                         [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
                           dx[0] = bind(max_pool_backward_p, {a.input(0), dense(dy)},
                                        with_mode(a.params(), MaxMode::scatter));
                         },
                     .jvp = [](const JvpArgs& a, const Tensor* dx) -> Tensor {
                       if (!dx[0].defined()) return Tensor();
                       return bind(max_pool_backward_p, {a.input(0), dense(dx[0])},
                                   with_mode(a.params(), MaxMode::gather));
                     }};

// Inputs (x, t): linear in t, piecewise constant in x (no cotangent for x).
Primitive max_pool_backward_p{
    .name = "max_pool_backward",
    .forward =
        [](const Primitive& p, std::span<const Tensor> in, const Params& pr) {
          const Shape s = mode_of(pr) == MaxMode::scatter ? pr.shape : pooled(pr.shape, pr);
          return allocate_and_run(p, in, pr, s);
        },
    .saves = saves::input(0),
    .pullback =
        [](const PullbackArgs& a, const Tensor& g, Tensor* dx) {
          if (!a.wants(1)) return;
          const MaxMode flip =
              mode_of(a.params()) == MaxMode::scatter ? MaxMode::gather : MaxMode::scatter;
          dx[1] = bind(max_pool_backward_p, {a.input(0), dense(g)}, with_mode(a.params(), flip));
        },
    .jvp = [](const JvpArgs& a, const Tensor* dx) -> Tensor {
      if (!dx[1].defined()) return Tensor();
      return bind(max_pool_backward_p, {a.input(0), dense(dx[1])}, a.params());
    }};

Primitive avg_pool_p{
    .name = "avg_pool",
    .forward =
        [](const Primitive& p, std::span<const Tensor> in, const Params& pr) {
          return allocate_and_run(p, in, pr, pooled(in[0].shape(), pr));
        },
    .saves = saves::nothing,
    .pullback = [](const PullbackArgs& a, const Tensor& dy,
                   Tensor* dx) { dx[0] = bind(avg_pool_backward_p, {dense(dy)}, a.params()); },
    .jvp = linear_jvp};

// Input dy (pooled shape) -> dx (params.shape): the adjoint of avg_pool.
Primitive avg_pool_backward_p{
    .name = "avg_pool_backward",
    .forward = [](const Primitive& p, std::span<const Tensor> in,
                  const Params& pr) { return allocate_and_run(p, in, pr, pr.shape); },
    .saves = saves::nothing,
    .pullback = [](const PullbackArgs& a, const Tensor& g,
                   Tensor* dx) { dx[0] = bind(avg_pool_p, {dense(g)}, a.params()); },
    .jvp = linear_jvp};

namespace {

std::vector<int64_t> pack(const char* op, const PoolGeometry& g, int nd) {
  std::vector<int64_t> list(size_t(4 * nd));
  FX_CHECK(!g.kernel.empty(), op, ": the kernel size is missing");
  auto fill = [&](const std::vector<int64_t>& v, int slot, int64_t lo, const char* what) {
    FX_CHECK(v.size() == 1 || v.size() == size_t(nd), op, ": ", what, " has ", v.size(),
             " values for ", nd, " spatial axes");
    for (int a = 0; a < nd; ++a) {
      const int64_t val = v[v.size() == 1 ? 0 : size_t(a)];
      FX_CHECK(val >= lo, op, ": ", what, " must be at least ", lo, ", got ", val);
      list[size_t(slot * nd + a)] = val;
    }
  };
  const std::vector<int64_t> zero = {0};
  fill(g.kernel, 0, 1, "kernel");
  fill(g.stride.empty() ? g.kernel : g.stride, 1, 1, "stride");
  fill(g.padding.empty() ? zero : g.padding, 2, 0, "padding");
  fill(g.padding_hi.empty() ? (g.padding.empty() ? zero : g.padding) : g.padding_hi, 3, 0,
       "padding");
  return list;
}

Params make_params(const std::vector<int64_t>& list, const PoolGeometry& g, const Shape& x) {
  Params p;
  p.list = list;
  p.i[0] = g.count_include_pad;
  p.shape = x;
  return p;
}

Tensor pool(const char* op, const Primitive& prim, const Tensor& x, const PoolGeometry& g) {
  FX_CHECK(x.defined(), op, ": undefined input");
  (void)pool_output_shape(op, x.shape(), g);
  FX_CHECK(x.dtype() == f32 || x.dtype() == f64, op, ": needs an f32 or f64 input, got ",
           x.dtype());
  const auto list = pack(op, g, x.ndim() - 2);
  return bind(prim, {dense(x)}, make_params(list, g, x.shape()));
}

}  // namespace

Shape pool_output_shape(const char* op, const Shape& x, const PoolGeometry& geo) {
  const int nd = x.size() - 2;
  FX_CHECK(nd >= 1 && nd <= 3, op, ": input must be (N, C, ...) with 1 to 3 spatial axes, got ", x);
  const auto list = pack(op, geo, nd);
  Params p;
  p.list = list;
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
  const auto list = pack(op, g, x.ndim() - 2);
  return bind(max_pool_backward_p, {dense(x), dense(dy)},
              with_mode(make_params(list, g, x.shape()), MaxMode::scatter));
}

Tensor avg_pool_backward(const Tensor& dy, const Shape& xs, const PoolGeometry& g) {
  const char* op = "fx::avg_pool_backward";
  FX_CHECK(dy.defined(), op, ": undefined cotangent");
  const Shape ys = pool_output_shape(op, xs, g);
  FX_CHECK(dy.shape() == ys, op, ": cotangent ", dy.shape(), " does not match the pooled shape ",
           ys, " of input ", xs);
  FX_CHECK(dy.dtype() == f32 || dy.dtype() == f64, op, ": needs f32 or f64, got ", dy.dtype());
  const auto list = pack(op, g, xs.size() - 2);
  return bind(avg_pool_backward_p, {dense(dy)}, make_params(list, g, xs));
}

}  // namespace fx
