// Integer indexing: index_select/index_add and gather/scatter_add, each the other's adjoint.
#include "fluxion/ops/index.hpp"

#include <vector>

#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/primitives.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/batching.hpp"

namespace fx {
namespace {

Tensor shaped_forward(const Primitive& p, std::span<const Tensor> in, Attrs pr, const Shape& s,
                      DType t) {
  Tensor out = Tensor::empty(s, t, output_device(in));
  dispatch({p, in, out, pr});
  return out;
}

void check_index(const Tensor& idx, const char* op) {
  FX_CHECK(idx.defined(), "fx::", op, ": undefined index tensor");
  FX_CHECK(idx.dtype() == i64 || idx.dtype() == i32, "fx::", op, ": index must be i64 or i32, got ",
           dtype_name(idx.dtype()), " ", idx.shape());
}

AxisAttrs axis_params(int axis, const Shape& shape) { return {axis, shape}; }

// Batching rule (fx::vmap) of index_select and index_add, which take one list of indices for
// the whole tensor: shared indices batch like slice (batch_along_axis, as gather and
// scatter_add do), per-example ones run example by example.
Tensor batch_shared_index(const Primitive& p, const BatchArgs& a) {
  if (a.is_batched(1)) return detail::batch_by_loop(p, a);
  std::vector<Tensor> in;
  for (size_t i = 0; i < a.in.size(); ++i)
    in.push_back(i == 1 ? a.in[i] : detail::batched_input(a, i));
  AxisAttrs q = a.attrs.get<AxisAttrs>();
  q.axis += 1;
  q.shape = detail::with_batch(a.size, q.shape);
  return bind(p, std::span<const Tensor>(in), q);
}

}  // namespace

// AxisAttrs: the axis, and the shape of the indexed (larger) tensor.
Primitive index_select_p{.name = "index_select",
                         .forward =
                             [](const Primitive& p, std::span<const Tensor> in, Attrs pr) {
                               Shape s = in[0].shape();
                               s[int(pr.get<AxisAttrs>().axis)] = in[1].numel();
                               return shaped_forward(p, in, pr, s, in[0].dtype());
                             },
                         .saves = saves::input(1),
                         .pullback =
                             [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
                               const AxisAttrs& p = a.attrs<AxisAttrs>();
                               dx[0] =
                                   index_add(expand(scalar(0, dy.dtype(), dy.device()), p.shape),
                                             p.axis, a.input(1), dy);
                             },
                         .jvp = linear_jvp,
                         .batch = batch_shared_index};
Primitive index_add_p{
    .name = "index_add",
    .forward = [](const Primitive& p, std::span<const Tensor> in,
                  Attrs pr) { return shaped_forward(p, in, pr, in[0].shape(), in[0].dtype()); },
    .saves = saves::input(1),
    .pullback =
        [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
          if (a.wants(0)) dx[0] = dy;
          if (a.wants(2)) dx[2] = index_select(dy, a.attrs<AxisAttrs>().axis, a.input(1));
        },
    .jvp = linear_jvp,
    .batch = batch_shared_index};
Primitive gather_p{
    .name = "gather",
    .forward = [](const Primitive& p, std::span<const Tensor> in,
                  Attrs pr) { return shaped_forward(p, in, pr, in[1].shape(), in[0].dtype()); },
    .saves = saves::input(1),
    .pullback =
        [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
          const AxisAttrs& p = a.attrs<AxisAttrs>();
          dx[0] = scatter_add(expand(scalar(0, dy.dtype(), dy.device()), p.shape), p.axis,
                              a.input(1), dy);
        },
    .jvp = linear_jvp,
    .batch = detail::batch_along_axis<AxisAttrs>};
Primitive scatter_add_p{
    .name = "scatter_add",
    .forward = [](const Primitive& p, std::span<const Tensor> in,
                  Attrs pr) { return shaped_forward(p, in, pr, in[0].shape(), in[0].dtype()); },
    .saves = saves::input(1),
    .pullback =
        [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
          if (a.wants(0)) dx[0] = dy;
          if (a.wants(2)) dx[2] = gather(dy, a.attrs<AxisAttrs>().axis, a.input(1));
        },
    .jvp = linear_jvp,
    .batch = detail::batch_along_axis<AxisAttrs>};

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index) {
  FX_CHECK(x.defined(), "fx::index_select: undefined tensor");
  check_index(index, "index_select");
  FX_CHECK(index.ndim() == 1, "fx::index_select: index must be 1-d, got ", index.shape());
  int a = normalize_axis(axis, x.ndim(), "fx::index_select");
  return bind(index_select_p, {x, contiguous(index)}, axis_params(a, x.shape()));
}

Tensor index_add(const Tensor& base, int64_t axis, const Tensor& index, const Tensor& src) {
  FX_CHECK(base.defined() && src.defined(), "fx::index_add: undefined tensor");
  check_index(index, "index_add");
  FX_CHECK(index.ndim() == 1, "fx::index_add: index must be 1-d, got ", index.shape());
  int a = normalize_axis(axis, base.ndim(), "fx::index_add");
  Shape want = base.shape();
  want[a] = index.numel();
  FX_CHECK(src.shape() == want, "fx::index_add: source ", src.shape(), " does not match ", want,
           " (base ", base.shape(), ", ", index.numel(), " indices on axis ", a, ")");
  DType t = promote(base.dtype(), src.dtype());
  return bind(index_add_p, {astype(base, t), contiguous(index), astype(src, t)},
              axis_params(a, base.shape()));
}

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  FX_CHECK(x.defined(), "fx::gather: undefined tensor");
  check_index(index, "gather");
  // A 0-d input has no axis to index (the kernel would never read, let alone check, the index).
  FX_CHECK(x.ndim() > 0, "fx::gather: cannot index a 0-d tensor ", x.shape());
  int a = normalize_axis(axis, x.ndim(), "fx::gather");
  FX_CHECK(index.ndim() == x.ndim(), "fx::gather: index ", index.shape(), " and input ", x.shape(),
           " differ in rank");
  for (int d = 0; d < x.ndim(); ++d)
    FX_CHECK(d == a || index.shape()[d] <= x.shape()[d], "fx::gather: index ", index.shape(),
             " exceeds input ", x.shape(), " on axis ", d);
  return bind(gather_p, {x, index}, axis_params(a, x.shape()));
}

Tensor scatter_add(const Tensor& base, int64_t axis, const Tensor& index, const Tensor& src) {
  FX_CHECK(base.defined() && src.defined(), "fx::scatter_add: undefined tensor");
  check_index(index, "scatter_add");
  FX_CHECK(base.ndim() > 0, "fx::scatter_add: cannot index a 0-d tensor ", base.shape());
  int a = normalize_axis(axis, base.ndim(), "fx::scatter_add");
  FX_CHECK(index.shape() == src.shape() && index.ndim() == base.ndim(), "fx::scatter_add: index ",
           index.shape(), ", source ", src.shape(), " and base ", base.shape(),
           " must have equal rank, and index the source's shape");
  for (int d = 0; d < base.ndim(); ++d)
    FX_CHECK(d == a || index.shape()[d] <= base.shape()[d], "fx::scatter_add: index ",
             index.shape(), " exceeds base ", base.shape(), " on axis ", d);
  DType t = promote(base.dtype(), src.dtype());
  return bind(scatter_add_p, {astype(base, t), index, astype(src, t)},
              axis_params(a, base.shape()));
}

}  // namespace fx
