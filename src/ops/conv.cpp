// conv, conv_backward_data and conv_backward_weights: three bilinear primitives, each one's
// pullback and pushforward written with the three of them, so every order of derivative is a
// convolution again (conv_backward_data is the transposed convolution, conv_transpose's
// primitive). Geometry packing: ops/conv_geometry.hpp.
#include "fluxion/ops/conv.hpp"

#include <string>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/primitives.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/conv_geometry.hpp"

namespace fx {

namespace {

using conv_detail::ConvAttrs;
using conv_detail::Geometry;

// The same geometry for another of the three primitives: out_shape is the adjoints' output
// shape; the bias flag is off (only conv_p's own application has a bias).
ConvAttrs with_shape(Attrs p, const Shape& out_shape) {
  ConvAttrs q = p.get<ConvAttrs>();
  q.shape = out_shape;
  q.bias = false;
  return q;
}

Tensor dense(const Tensor& t) { return t.is_contiguous() ? t : contiguous(t); }

Tensor conv_forward(const Primitive& p, std::span<const Tensor> in, Attrs pr) {
  const Geometry g(pr);
  const Shape &xs = in[0].shape(), &ws = in[1].shape();
  Shape ys = xs;
  ys[1] = ws[0];
  for (int a = 0; a < g.nd; ++a) ys[2 + a] = g.out_size(a, xs[2 + a], ws[2 + a]);
  Tensor out = Tensor::empty(ys, in[0].dtype(), output_device(in));
  dispatch({p, in, out, pr});
  return out;
}

// The adjoints' outputs have the shape their attributes name.
Tensor adjoint_forward(const Primitive& p, std::span<const Tensor> in, Attrs pr) {
  Tensor out = Tensor::empty(pr.get<ConvAttrs>().shape, in[0].dtype(), output_device(in));
  dispatch({p, in, out, pr});
  return out;
}

Tensor add_defined(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a + b;
}

}  // namespace

// Inputs (x, w[, b]).
Primitive conv_p{
    .name = "conv",
    .forward = conv_forward,
    .saves = saves::input(0) | saves::input(1),
    .pullback =
        [](const PullbackArgs& a, const Tensor& dy0, Tensor* dx) {
          const Tensor &x = a.input(0), &w = a.input(1);
          const Tensor dy = dense(dy0);
          if (a.wants(0))
            dx[0] = bind(conv_backward_data_p, {dy, w}, with_shape(a.attrs(), x.shape()));
          if (a.wants(1))
            dx[1] = bind(conv_backward_weights_p, {x, dy}, with_shape(a.attrs(), w.shape()));
          if (a.attrs<ConvAttrs>().bias && a.wants(2))
            // Over the contiguous spatial run first, then the batch: the CPU backend's
            // reductions take each of these, where the two axes at once fell to the reference
            // loops (a third of a LeNet first layer's training step).
            dx[2] = sum(sum(reshape(dy, {dy.shape()[0], dy.shape()[1], -1}), {2}), {0});
        },
    .jvp = [](const JvpArgs& a, const Tensor* dx) -> Tensor {
      const Tensor &x = a.input(0), &w = a.input(1);
      const ConvAttrs p = with_shape(a.attrs(), Shape{});
      Tensor t;
      if (dx[0].defined()) t = bind(conv_p, {dense(dx[0]), w}, p);
      if (dx[1].defined()) t = add_defined(t, bind(conv_p, {x, dense(dx[1])}, p));
      if (a.attrs<ConvAttrs>().bias && dx[2].defined()) {
        Shape s(std::vector<int64_t>(size_t(a.output().ndim()), 1));
        s[1] = a.output().shape()[1];
        t = add_defined(t, expand(reshape(dx[2], s), a.output().shape()));
      }
      return t;
    }};

// Inputs (dy, w) -> dx of ConvAttrs::shape: the transposed convolution.
Primitive conv_backward_data_p{
    .name = "conv_backward_data",
    .forward = adjoint_forward,
    .saves = saves::input(0) | saves::input(1),
    .pullback =
        [](const PullbackArgs& a, const Tensor& g0, Tensor* dx) {
          const Tensor &dy = a.input(0), &w = a.input(1);
          const Tensor g = dense(g0);
          if (a.wants(0)) dx[0] = bind(conv_p, {g, w}, with_shape(a.attrs(), Shape{}));
          if (a.wants(1))
            dx[1] = bind(conv_backward_weights_p, {g, dy}, with_shape(a.attrs(), w.shape()));
        },
    .jvp = [](const JvpArgs& a, const Tensor* dx) -> Tensor {
      const Tensor &dy = a.input(0), &w = a.input(1);
      Tensor t;
      if (dx[0].defined()) t = bind(conv_backward_data_p, {dense(dx[0]), w}, a.attrs());
      if (dx[1].defined())
        t = add_defined(t, bind(conv_backward_data_p, {dy, dense(dx[1])}, a.attrs()));
      return t;
    }};

// Inputs (x, dy) -> dw of ConvAttrs::shape.
Primitive conv_backward_weights_p{
    .name = "conv_backward_weights",
    .forward = adjoint_forward,
    .saves = saves::input(0) | saves::input(1),
    .pullback =
        [](const PullbackArgs& a, const Tensor& g0, Tensor* dx) {
          const Tensor &x = a.input(0), &dy = a.input(1);
          const Tensor g = dense(g0);
          if (a.wants(0))
            dx[0] = bind(conv_backward_data_p, {dy, g}, with_shape(a.attrs(), x.shape()));
          if (a.wants(1)) dx[1] = bind(conv_p, {x, g}, with_shape(a.attrs(), Shape{}));
        },
    .jvp = [](const JvpArgs& a, const Tensor* dx) -> Tensor {
      const Tensor &x = a.input(0), &dy = a.input(1);
      Tensor t;
      if (dx[0].defined()) t = bind(conv_backward_weights_p, {dense(dx[0]), dy}, a.attrs());
      if (dx[1].defined())
        t = add_defined(t, bind(conv_backward_weights_p, {x, dense(dx[1])}, a.attrs()));
      return t;
    }};

namespace {

// Checks the geometry against nd spatial axes and packs it (ops/conv_geometry.hpp).
ConvAttrs pack(const char* op, const ConvGeometry& g, int nd, bool bias = false,
               const Shape& shape = {}) {
  ConvAttrs c;
  c.nd = nd;
  c.groups = g.groups;
  c.bias = bias;
  c.shape = shape;
  auto fill = [&](const std::vector<int64_t>& v, std::array<int64_t, conv_detail::kMaxSpatial>& to,
                  int64_t dflt, int64_t lo, const char* what) {
    FX_CHECK(v.empty() || v.size() == 1 || v.size() == size_t(nd), op, ": ", what, " has ",
             v.size(), " values for ", nd, " spatial axes");
    for (int a = 0; a < nd; ++a) {
      const int64_t val = v.empty() ? dflt : v[v.size() == 1 ? 0 : size_t(a)];
      FX_CHECK(val >= lo, op, ": ", what, " must be at least ", lo, ", got ", val);
      to[size_t(a)] = val;
    }
  };
  fill(g.stride, c.stride, 1, 1, "stride");
  fill(g.padding, c.pad_lo, 0, 0, "padding");
  fill(g.padding_hi.empty() ? g.padding : g.padding_hi, c.pad_hi, 0, 0, "padding");
  fill(g.dilation, c.dilation, 1, 1, "dilation");
  FX_CHECK(g.groups >= 1, op, ": groups must be at least 1, got ", g.groups);
  return c;
}

DType float_type(const char* op, const Tensor& a, const Tensor& b, const Tensor& c) {
  DType t = promote(a.dtype(), b.dtype());
  if (c.defined()) t = promote(t, c.dtype());
  FX_CHECK(t == f32 || t == f64, op, ": needs f32 or f64 operands, got ", t);
  return t;
}

// Checks x (N, C, *spatial) against w (O, C / groups, *kernel) for `op`.
void check_operands(const char* op, const Tensor& x, const Tensor& w, const Tensor& b,
                    int64_t groups, int64_t in_channels_of_w, int64_t bias_size) {
  FX_CHECK(x.defined() && w.defined(), op, ": undefined ", x.defined() ? "weight" : "input");
  FX_CHECK(x.ndim() >= 3 && x.ndim() <= 5, op, ": input must be (N, C, ...) with 1 to 3 spatial ",
           "axes, got ", x.shape());
  FX_CHECK(w.ndim() == x.ndim(), op, ": weight ", w.shape(), " must have as many axes as input ",
           x.shape());
  FX_CHECK(x.shape()[1] % groups == 0 && w.shape()[0] % groups == 0, op, ": groups ", groups,
           " must divide the channels of input ", x.shape(), " and weight ", w.shape());
  FX_CHECK(in_channels_of_w == x.shape()[1], op, ": input ", x.shape(), " has ", x.shape()[1],
           " channels but weight ", w.shape(), " with groups ", groups, " expects ",
           in_channels_of_w);
  FX_CHECK(!b.defined() || b.shape() == Shape{bias_size}, op, ": bias ",
           b.defined() ? b.shape().to_string() : "", " must be (", bias_size, ",)");
}

}  // namespace

Shape conv_output_shape(const char* op, const Shape& x, const Shape& w, const ConvGeometry& geo) {
  const int nd = x.size() - 2;
  FX_CHECK(nd >= 1 && nd <= 3 && w.size() == x.size(), op, ": input ", x, " and weight ", w,
           " must be (N, C, ...) and (O, C / groups, ...) with 1 to 3 spatial axes");
  const ConvAttrs p = pack(op, geo, nd);
  const Geometry g(p);
  Shape y = x;
  y[1] = w[0];
  for (int a = 0; a < nd; ++a) {
    const int64_t padded = x[2 + a] + g.pad_lo(a) + g.pad_hi(a);
    const int64_t span = g.dilation(a) * (w[2 + a] - 1) + 1;
    FX_CHECK(span <= padded, op, ": kernel ", w, " (dilation ", g.dilation(a),
             ") is larger than the padded input ", x, " along spatial axis ", a, " (", span, " > ",
             padded, ")");
    y[2 + a] = g.out_size(a, x[2 + a], w[2 + a]);
  }
  return y;
}

Tensor conv(const Tensor& x0, const Tensor& w0, const Tensor& b0, const ConvGeometry& geo) {
  const char* op = "fx::conv";
  FX_CHECK(x0.defined() && w0.defined(), op, ": undefined ", x0.defined() ? "weight" : "input");
  FX_CHECK(geo.groups >= 1, op, ": groups must be at least 1, got ", geo.groups);
  check_operands(op, x0, w0, b0, geo.groups, w0.ndim() >= 2 ? w0.shape()[1] * geo.groups : -1,
                 w0.ndim() >= 1 ? w0.shape()[0] : -1);
  (void)conv_output_shape(op, x0.shape(), w0.shape(), geo);
  const DType t = float_type(op, x0, w0, b0);
  const ConvAttrs p = pack(op, geo, x0.ndim() - 2, b0.defined());
  const Tensor x = dense(astype(x0, t)), w = dense(astype(w0, t));
  if (b0.defined()) return bind(conv_p, {x, w, dense(astype(b0, t))}, p);
  return bind(conv_p, {x, w}, p);
}

Tensor conv_backward_data(const Tensor& dy0, const Tensor& w0, const Shape& xs,
                          const ConvGeometry& geo) {
  const char* op = "fx::conv_backward_data";
  FX_CHECK(dy0.defined() && w0.defined(), op, ": undefined operand");
  const Shape ys = conv_output_shape(op, xs, w0.shape(), geo);
  FX_CHECK(dy0.shape() == ys, op, ": cotangent ", dy0.shape(), " does not match conv's output ", ys,
           " for input ", xs, " and weight ", w0.shape());
  FX_CHECK(xs[1] % geo.groups == 0 && w0.shape()[0] % geo.groups == 0 &&
               w0.shape()[1] * geo.groups == xs[1],
           op, ": weight ", w0.shape(), " with groups ", geo.groups, " does not fit input ", xs);
  const DType t = float_type(op, dy0, w0, Tensor());
  return bind(conv_backward_data_p, {dense(astype(dy0, t)), dense(astype(w0, t))},
              pack(op, geo, xs.size() - 2, false, xs));
}

Tensor conv_backward_weights(const Tensor& x0, const Tensor& dy0, const Shape& ws,
                             const ConvGeometry& geo) {
  const char* op = "fx::conv_backward_weights";
  FX_CHECK(x0.defined() && dy0.defined(), op, ": undefined operand");
  const Shape ys = conv_output_shape(op, x0.shape(), ws, geo);
  FX_CHECK(dy0.shape() == ys, op, ": cotangent ", dy0.shape(), " does not match conv's output ", ys,
           " for input ", x0.shape(), " and weight ", ws);
  FX_CHECK(x0.shape()[1] % geo.groups == 0 && ws[0] % geo.groups == 0 &&
               ws[1] * geo.groups == x0.shape()[1],
           op, ": weight ", ws, " with groups ", geo.groups, " does not fit input ", x0.shape());
  const DType t = float_type(op, x0, dy0, Tensor());
  return bind(conv_backward_weights_p, {dense(astype(x0, t)), dense(astype(dy0, t))},
              pack(op, geo, x0.ndim() - 2, false, ws));
}

Tensor conv_transpose(const Tensor& x0, const Tensor& w0, const Tensor& b0, const ConvGeometry& geo,
                      const std::vector<int64_t>& output_padding) {
  const char* op = "fx::conv_transpose";
  FX_CHECK(x0.defined() && w0.defined(), op, ": undefined ", x0.defined() ? "weight" : "input");
  FX_CHECK(geo.groups >= 1, op, ": groups must be at least 1, got ", geo.groups);
  const int64_t c_out = w0.ndim() >= 2 ? w0.shape()[1] * geo.groups : -1;
  // x plays conv's output: its channels are the weight's first axis.
  FX_CHECK(x0.ndim() >= 3 && x0.ndim() <= 5 && w0.ndim() == x0.ndim(), op, ": input ", x0.shape(),
           " and weight ", w0.shape(),
           " must be (N, C_in, ...) and (C_in, C_out / groups, ...) with 1 to 3 spatial axes");
  FX_CHECK(w0.shape()[0] == x0.shape()[1], op, ": input ", x0.shape(), " has ", x0.shape()[1],
           " channels but weight ", w0.shape(), " expects ", w0.shape()[0]);
  FX_CHECK(x0.shape()[1] % geo.groups == 0, op, ": groups ", geo.groups,
           " must divide the channels of input ", x0.shape());
  FX_CHECK(!b0.defined() || b0.shape() == Shape{c_out}, op, ": bias ",
           b0.defined() ? b0.shape().to_string() : "", " must be (", c_out, ",)");
  const int nd = x0.ndim() - 2;
  ConvAttrs p0 = pack(op, geo, nd);
  const Geometry g(p0);
  FX_CHECK(
      output_padding.empty() || output_padding.size() == 1 || output_padding.size() == size_t(nd),
      op, ": output_padding has ", output_padding.size(), " values for ", nd, " spatial axes");
  Shape xs = x0.shape();
  xs[1] = c_out;
  for (int a = 0; a < nd; ++a) {
    const int64_t op_a =
        output_padding.empty() ? 0 : output_padding[output_padding.size() == 1 ? 0 : size_t(a)];
    FX_CHECK(op_a >= 0 && (op_a < g.stride(a) || op_a < g.dilation(a)), op, ": output_padding ",
             op_a, " must be non-negative and below the stride or the dilation");
    const int64_t k = w0.shape()[2 + a];
    xs[2 + a] = (x0.shape()[2 + a] - 1) * g.stride(a) - g.pad_lo(a) - g.pad_hi(a) +
                g.dilation(a) * (k - 1) + 1 + op_a;
    FX_CHECK(xs[2 + a] >= 1, op, ": input ", x0.shape(), " with weight ", w0.shape(),
             " and padding ", g.pad_lo(a), "+", g.pad_hi(a), " gives an empty output");
  }
  const DType t = float_type(op, x0, w0, b0);
  p0.shape = xs;
  Tensor y = bind(conv_backward_data_p, {dense(astype(x0, t)), dense(astype(w0, t))}, p0);
  if (!b0.defined()) return y;
  Shape bs(std::vector<int64_t>(size_t(xs.size()), 1));
  bs[1] = c_out;
  return y + reshape(astype(b0, t), bs);
}

}  // namespace fx
