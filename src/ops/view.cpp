// Shape and layout primitives. reshape/permute/slice/expand are views (no kernel): their forward
// only builds new strides. pad_slice (the adjoint of slice) and concat write memory.
#include "fluxion/ops/view.hpp"

#include <numeric>

#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/primitives.hpp"
#include "fluxion/ops/reduce.hpp"
#include "ops/batching.hpp"

namespace fx {
namespace {

Tensor reshape_forward(const Primitive&, std::span<const Tensor> in, Attrs attrs) {
  const ReshapeAttrs& p = attrs.get<ReshapeAttrs>();
  auto st = contiguous_strides(p.shape);
  return make_view(in[0], p.shape, st.data(), in[0].offset());
}

Tensor permute_forward(const Primitive&, std::span<const Tensor> in, Attrs attrs) {
  const ShapeAttrs& p = attrs.get<ShapeAttrs>();
  const Tensor& x = in[0];
  Shape s;
  int64_t st[kMaxDims];
  for (int d = 0; d < p.shape.size(); ++d) {
    s.push_back(x.shape()[int(p.shape[d])]);
    st[d] = x.stride(int(p.shape[d]));
  }
  return make_view(x, s, st, x.offset());
}

Tensor slice_view(const Tensor& x, const SliceAttrs& p) {
  const int axis = int(p.axis);
  Shape s = x.shape();
  s[axis] = p.length;
  int64_t st[kMaxDims];
  for (int d = 0; d < s.size(); ++d) st[d] = x.stride(d);
  st[axis] *= p.step;
  return make_view(x, s, st, x.offset() + p.start * x.stride(axis));
}
Tensor slice_forward(const Primitive&, std::span<const Tensor> in, Attrs attrs) {
  return slice_view(in[0], attrs.get<SliceAttrs>());
}

// Writes memory: a kernel fills the zeros and the slice (SliceAttrs).
Tensor shaped_like_slice_base(const Primitive& prim, std::span<const Tensor> in, Attrs attrs) {
  Tensor out = Tensor::empty(attrs.get<SliceAttrs>().shape, in[0].dtype(), output_device(in));
  dispatch({prim, in, out, attrs});
  return out;
}

Tensor expand_forward(const Primitive&, std::span<const Tensor> in, Attrs attrs) {
  const ReshapeAttrs& p = attrs.get<ReshapeAttrs>();
  const Tensor& x = in[0];
  int lead = p.shape.size() - x.ndim();
  int64_t st[kMaxDims];
  for (int d = 0; d < p.shape.size(); ++d) {
    int xd = d - lead;
    st[d] = (xd < 0 || (x.shape()[xd] == 1 && p.shape[d] != 1)) ? 0 : x.stride(xd);
  }
  return make_view(x, p.shape, st, x.offset());
}

Tensor concat_forward(const Primitive& prim, std::span<const Tensor> in, Attrs attrs) {
  const ConcatAttrs& p = attrs.get<ConcatAttrs>();
  Shape s = in[0].shape();
  s[int(p.axis)] = std::accumulate(p.sizes.begin(), p.sizes.end(), int64_t(0));
  Tensor out = Tensor::empty(s, in[0].dtype(), output_device(in));
  dispatch({prim, in, out, attrs});
  return out;
}

#define FX_PULLBACK [](const PullbackArgs& a, const Tensor& dy, Tensor* dx)

// Batching rules (fx::vmap): the batch is axis 0 of every batched input, so axes move up by one.
Tensor reshape_batch(const Primitive&, const BatchArgs& a) {
  return reshape(a.in[0], detail::with_batch(a.size, a.attrs.get<ReshapeAttrs>().shape));
}
Tensor permute_batch(const Primitive&, const BatchArgs& a) {
  Shape perm{0};
  for (int64_t d : a.attrs.get<ShapeAttrs>().shape) perm.push_back(d + 1);
  return permute(a.in[0], perm);
}
Tensor expand_batch(const Primitive&, const BatchArgs& a) {
  Tensor x = a.in[0];
  const Shape& target = a.attrs.get<ReshapeAttrs>().shape;
  const int rank = target.size();
  if (x.ndim() - 1 < rank) {  // expand aligns on the right: size-1 axes after the batch axis
    Shape s{a.size};
    for (int k = x.ndim() - 1; k < rank; ++k) s.push_back(1);
    for (int d = 1; d < x.ndim(); ++d) s.push_back(x.shape()[d]);
    x = reshape(x, s);
  }
  return expand(x, detail::with_batch(a.size, target));
}

}  // namespace

Primitive reshape_p{
    .name = "reshape",
    .forward = reshape_forward,
    .pullback = FX_PULLBACK{dx[0] = reshape(dy, a.attrs<ReshapeAttrs>().input_shape);
}  // namespace fx
,
    // Not linear_jvp: the forward assumes a contiguous input, which a tangent need not be.
    .jvp = [](const JvpArgs& a, const Tensor* dx) { return reshape(dx[0], a.output().shape()); },
    .batch = reshape_batch
}
;
Primitive permute_p{.name = "permute",
                    .forward = permute_forward,
                    .pullback = FX_PULLBACK{const Shape& perm = a.attrs<ShapeAttrs>().shape;
Shape inv = perm;
for (int d = 0; d < perm.size(); ++d) inv[int(perm[d])] = d;
dx[0] = permute(dy, inv);
}
, .jvp = linear_jvp, .batch = permute_batch
}
;
// In a first-order pass a later slice of the same tensor (the four gates of an LSTM cell) adds
// dy into its part of the cotangent summed so far: one small add where pad_slice would fill a
// whole zero tensor and the tape would then add all of it.
namespace {
bool add_into_slice(Tensor& acc, const Tensor& dy, const SliceAttrs& p) {
  if (acc.dtype() != dy.dtype() || acc.device() != dy.device() || !(acc.shape() == p.shape))
    return false;
  Tensor part = slice_view(acc, p);
  detail::BorrowedTensors in({part, dy});
  dispatch({add_p, in.span(), part, {}});
  return true;
}
}  // namespace

Primitive slice_p{.name = "slice",
                  .forward = slice_forward,
                  .pullback = FX_PULLBACK{const SliceAttrs& p = a.attrs<SliceAttrs>();
if (Tensor* acc = a.accumulator(0); acc && add_into_slice(*acc, dy, p)) return;
dx[0] = bind(pad_slice_p, {dy}, p);
}
, .jvp = linear_jvp, .batch = detail::batch_along_axis<SliceAttrs>
}
;
// pad_slice(dy) = zeros(shape) with dy written at the slice: the adjoint of slice.
Primitive pad_slice_p{.name = "pad_slice",
                      .forward = shaped_like_slice_base,
                      .pullback = FX_PULLBACK{dx[0] = bind(slice_p, {dy}, a.attrs());
}
, .jvp = linear_jvp, .batch = detail::batch_along_axis<SliceAttrs>
}
;
// slice_set(base, value) = base with value written at a slice: what element and slice
// assignment record (fluxion/ops/inplace.hpp). Attributes as slice's; shape = base shape.
Primitive slice_set_p{.name = "slice_set",
                      .forward = shaped_like_slice_base,
                      .pullback = FX_PULLBACK{Tensor part = bind(slice_p, {dy}, a.attrs());
if (a.wants(0)) dx[0] = bind(slice_set_p, {dy, expanded_zeros_like(part)}, a.attrs());
if (a.wants(1)) dx[1] = part;
}
, .jvp = linear_jvp, .batch = detail::batch_along_axis<SliceAttrs>
}
;
Primitive expand_p{.name = "expand",
                   .forward = expand_forward,
                   .pullback = FX_PULLBACK{dx[0] = sum_to(dy, a.attrs<ReshapeAttrs>().input_shape);
}
, .jvp = linear_jvp, .batch = expand_batch
}
;
Primitive concat_p{.name = "concat",
                   .forward = concat_forward,
                   .pullback = FX_PULLBACK{const ConcatAttrs& p = a.attrs<ConcatAttrs>();
int64_t at = 0;
for (size_t i = 0; i < p.sizes.size(); ++i) {
  if (a.wants(int(i))) dx[i] = slice(dy, p.axis, at, at + p.sizes[i]);
  at += p.sizes[i];
}
}
, .jvp = linear_jvp, .batch = detail::batch_along_axis<ConcatAttrs>
}
;
#undef FX_PULLBACK

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  int n = std::max(a.size(), b.size());
  Shape s;
  s.resize(n);
  for (int d = 0; d < n; ++d) {
    int da = d - (n - a.size()), db = d - (n - b.size());
    int64_t x = da >= 0 ? a[da] : 1, y = db >= 0 ? b[db] : 1;
    FX_CHECK(x == y || x == 1 || y == 1, "fx::", op, ": shapes ", a, " and ", b,
             " cannot broadcast");
    s[d] = x == 1 ? y : x;
  }
  return s;
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  FX_CHECK(x.defined(), "fx::reshape: undefined tensor");
  FX_CHECK(shape.numel() == x.numel(), "fx::reshape: cannot reshape ", x.shape(), " (", x.numel(),
           " elements) to ", shape);
  if (shape == x.shape()) return x;
  Tensor c = contiguous(x);
  return bind(reshape_p, {c}, ReshapeAttrs{shape, c.shape()});
}

Tensor reshape(const Tensor& x, std::initializer_list<int64_t> dims) {
  FX_CHECK(x.defined(), "fx::reshape: undefined tensor");
  Shape s;
  int infer = -1;
  int64_t known = 1;
  for (int64_t d : dims) {
    if (d == -1) {
      FX_CHECK(infer < 0, "fx::reshape: more than one -1 in the target shape for ", x.shape());
      infer = s.size();
      s.push_back(1);
    } else {
      FX_CHECK(d >= 0, "fx::reshape: negative dimension ", d, " for ", x.shape());
      s.push_back(d);
      known *= d;
    }
  }
  if (infer >= 0) {
    FX_CHECK(known > 0 && x.numel() % known == 0, "fx::reshape: cannot infer -1 reshaping ",
             x.shape());
    s[infer] = x.numel() / known;
  }
  return reshape(x, s);
}

Tensor flatten(const Tensor& x, int64_t start_axis) {
  FX_CHECK(x.defined(), "fx::flatten: undefined tensor");
  int start = normalize_axis(start_axis, x.ndim(), "fx::flatten");
  Shape s;
  for (int d = 0; d < start; ++d) s.push_back(x.shape()[d]);
  int64_t rest = 1;
  for (int d = start; d < x.ndim(); ++d) rest *= x.shape()[d];
  s.push_back(rest);
  return reshape(x, s);
}

Tensor permute(const Tensor& x, const Shape& axes) {
  FX_CHECK(x.defined(), "fx::permute: undefined tensor");
  FX_CHECK(axes.size() == x.ndim(), "fx::permute: ", axes.size(), " axes for shape ", x.shape());
  bool seen[kMaxDims] = {};
  bool identity = true;
  for (int d = 0; d < axes.size(); ++d) {
    FX_CHECK(axes[d] < x.ndim() && !seen[axes[d]], "fx::permute: ", axes,
             " is not a permutation of the axes of ", x.shape());
    seen[axes[d]] = true;
    identity &= axes[d] == d;
  }
  if (identity) return x;
  return bind(permute_p, {x}, ShapeAttrs{axes});
}

Tensor permute(const Tensor& x, std::initializer_list<int64_t> axes) {
  Shape s;
  for (int64_t a : axes) s.push_back(normalize_axis(a, x.ndim(), "fx::permute"));
  return permute(x, s);
}

Tensor transpose(const Tensor& x, int64_t a, int64_t b) {
  FX_CHECK(x.defined(), "fx::transpose: undefined tensor");
  FX_CHECK(x.ndim() >= 2, "fx::transpose: needs at least 2 dimensions, got ", x.shape());
  int i = normalize_axis(a, x.ndim(), "fx::transpose"),
      j = normalize_axis(b, x.ndim(), "fx::transpose");
  Shape perm;
  for (int d = 0; d < x.ndim(); ++d) perm.push_back(d);
  std::swap(perm[i], perm[j]);
  return permute(x, perm);
}

Tensor squeeze(const Tensor& x, int64_t axis) {
  FX_CHECK(x.defined(), "fx::squeeze: undefined tensor");
  int a = normalize_axis(axis, x.ndim(), "fx::squeeze");
  FX_CHECK(x.shape()[a] == 1, "fx::squeeze: axis ", axis, " of ", x.shape(), " is not 1");
  Shape s;
  for (int d = 0; d < x.ndim(); ++d)
    if (d != a) s.push_back(x.shape()[d]);
  return reshape(x, s);
}

Tensor unsqueeze(const Tensor& x, int64_t axis) {
  FX_CHECK(x.defined(), "fx::unsqueeze: undefined tensor");
  int a = normalize_axis(axis, x.ndim() + 1, "fx::unsqueeze");
  Shape s;
  for (int d = 0; d < x.ndim(); ++d) {
    if (d == a) s.push_back(1);
    s.push_back(x.shape()[d]);
  }
  if (a == x.ndim()) s.push_back(1);
  return reshape(x, s);
}

namespace {
// slice's attributes; start and stop are clamped Python-style, negative values counting from
// the end.
SliceAttrs slice_attrs(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step,
                       const char* op) {
  int a = normalize_axis(axis, x.ndim(), op);
  FX_CHECK(step >= 1, op, ": step must be positive, got ", step);
  int64_t n = x.shape()[a];
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  start = std::clamp<int64_t>(start, 0, n);
  stop = std::clamp<int64_t>(stop, start, n);
  return {.axis = a,
          .start = start,
          .length = (stop - start + step - 1) / step,
          .step = step,
          .shape = x.shape()};
}
}  // namespace

Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step) {
  FX_CHECK(x.defined(), "fx::slice: undefined tensor");
  const SliceAttrs p = slice_attrs(x, axis, start, stop, step, "fx::slice");
  if (p.start == 0 && p.length == x.shape()[int(p.axis)] && p.step == 1) return x;
  return bind(slice_p, {x}, p);
}

Tensor slice_set(const Tensor& base, int64_t axis, int64_t start, int64_t stop, int64_t step,
                 const Tensor& value) {
  FX_CHECK(base.defined() && value.defined(), "fx::slice_set: undefined tensor");
  const SliceAttrs p = slice_attrs(base, axis, start, stop, step, "fx::slice_set");
  Shape region = base.shape();
  region[int(p.axis)] = p.length;
  Tensor v = astype(value, promote(base.dtype(), value.dtype()));
  FX_CHECK(broadcast_shapes(v.shape(), region, "slice_set") == region, "fx::slice_set: value ",
           value.shape(), " does not fit the slice ", region, " of ", base.shape());
  return bind(slice_set_p, {astype(base, v.dtype()), expand(v, region)}, p);
}

Tensor select(const Tensor& x, int64_t axis, int64_t index) {
  FX_CHECK(x.defined(), "fx::select: undefined tensor");
  int a = normalize_axis(axis, x.ndim(), "fx::select");
  index = normalize_index(index, a, x.shape(), "fx::select");
  return squeeze(slice(x, a, index, index + 1), a);
}

Tensor expand(const Tensor& x, const Shape& shape) {
  FX_CHECK(x.defined(), "fx::expand: undefined tensor");
  if (x.shape() == shape) return x;
  bool ok = shape.size() >= x.ndim();
  for (int d = 0; ok && d < x.ndim(); ++d) {
    int64_t xd = x.shape()[d], td = shape[d + shape.size() - x.ndim()];
    ok = xd == td || xd == 1;
  }
  FX_CHECK(ok, "fx::expand: ", x.shape(), " cannot expand to ", shape);
  return bind(expand_p, {x}, ReshapeAttrs{shape, x.shape()});
}

Tensor contiguous(const Tensor& x) {
  FX_CHECK(x.defined(), "fx::contiguous: undefined tensor");
  if (x.is_contiguous()) return x;
  return bind(copy_p, {x});
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  FX_CHECK(!xs.empty(), "fx::concat: no tensors");
  const Tensor& x0 = xs[0];
  FX_CHECK(x0.defined(), "fx::concat: undefined tensor");
  FX_CHECK(x0.ndim() > 0, "fx::concat: cannot concatenate 0-d tensors; use fx::stack");
  int a = normalize_axis(axis, x0.ndim(), "fx::concat");
  std::vector<int64_t> sizes;
  std::vector<Tensor> ins;
  ins.reserve(xs.size());
  DType t = x0.dtype();
  for (const Tensor& x : xs) {
    FX_CHECK(x.defined(), "fx::concat: undefined tensor");
    t = promote(t, x.dtype());
  }
  for (const Tensor& x : xs) {
    FX_CHECK(x.defined() && x.ndim() == x0.ndim(), "fx::concat: shapes ", x0.shape(), " and ",
             x.defined() ? x.shape().to_string() : "undefined", " differ in rank");
    for (int d = 0; d < x0.ndim(); ++d)
      FX_CHECK(d == a || x.shape()[d] == x0.shape()[d], "fx::concat: shapes ", x0.shape(), " and ",
               x.shape(), " differ outside axis ", a);
    sizes.push_back(x.shape()[a]);
    ins.push_back(astype(x, t));
  }
  if (ins.size() == 1) return ins[0];
  return bind(concat_p, std::span<const Tensor>(ins), ConcatAttrs{a, sizes});
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis) {
  FX_CHECK(!xs.empty(), "fx::stack: no tensors");
  FX_CHECK(xs[0].defined(), "fx::stack: undefined tensor");
  int a = normalize_axis(axis, xs[0].ndim() + 1, "fx::stack");
  std::vector<Tensor> parts;
  for (const Tensor& x : xs) {
    FX_CHECK(x.defined() && x.shape() == xs[0].shape(), "fx::stack: shapes ", xs[0].shape(),
             " and ", x.defined() ? x.shape().to_string() : "undefined", " differ");
    parts.push_back(unsqueeze(x, a));
  }
  return concat(parts, a);
}

// Tensor member helpers.
Tensor Tensor::contiguous() const { return fx::contiguous(*this); }
Tensor Tensor::reshape(const Shape& s) const { return fx::reshape(*this, s); }
Tensor Tensor::reshape(std::initializer_list<int64_t> dims) const {
  return fx::reshape(*this, dims);
}
Tensor Tensor::t() const { return fx::transpose(*this, -2, -1); }
Tensor Tensor::astype(DType t) const { return fx::astype(*this, t); }
Tensor Tensor::clone() const {
  FX_CHECK(defined(), "fx::Tensor::clone: undefined tensor");
  return bind(copy_p, {*this});
}

}  // namespace fx
