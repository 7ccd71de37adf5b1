// linear: act(x @ w^T + b) as one primitive, with a fused first-order pullback.
#include <string>

#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg.hpp"
#include "fluxion/ops/primitives.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/batching.hpp"
#include "ops/fused.hpp"

namespace fx {

namespace {

// t * act'(z), where y = act(z): every epilogue's derivative is a function of its output.
// Written as the activations' own pullbacks write it, so a recorded (higher-order) pass takes the
// same derivatives as the composed ops would.
Tensor times_derivative(Epilogue act, const Tensor& t, const Tensor& y) {
  switch (act) {
    case Epilogue::identity: return t;
    case Epilogue::relu: return where(y > 0.0, t, 0.0);
    case Epilogue::tanh: return t * (1.0 - y * y);
    case Epilogue::sigmoid: return t * (y * (1.0 - y));
  }
  return t;
}

Tensor activate(Epilogue act, const Tensor& z) {
  switch (act) {
    case Epilogue::identity: return z;
    case Epilogue::relu: return relu(z);
    case Epilogue::tanh: return tanh(z);
    case Epilogue::sigmoid: return sigmoid(z);
  }
  return z;
}

// Bits of LinearBackwardAttrs::wants: which cotangents to compute.
constexpr int64_t kWantX = 1, kWantW = 2, kWantB = 4;

// All wanted cotangents through linear_backward_p when nothing records: one pass computes
// dz = dy act'(y), the bias sum, dW = dz^T x (in w's layout) and dx = dz w, each thread on the
// columns of dz whose rows of dW it writes. Returns false where the composed rule must run.
bool fused_linear_pullback(const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
  if (detail::must_compose()) return false;
  const Tensor &x = a.input(0), &w = a.input(1), &y = a.output();
  const DType t = x.dtype();
  if ((t != f32 && t != f64) || dy.dtype() != t || dy.shape() != y.shape() ||
      !has_kernel(linear_backward_p, x.device()))
    return false;
  const LinearAttrs& la = a.attrs<LinearAttrs>();
  LinearBackwardAttrs p;
  p.epilogue = la.epilogue;
  p.wants =
      (a.wants(0) ? kWantX : 0) | (a.wants(1) ? kWantW : 0) | (la.bias && a.wants(2) ? kWantB : 0);
  // A cotangent only this backward pass holds (the next layer's dx, moved out of the tape's
  // slot) takes dz in place: no scratch as large as dy.
  p.dz_over_dy = sole_dense_handle(dy);
  Tensor out = bind(linear_backward_p, {dy, x, w, y}, p);
  int64_t off = out.offset();
  auto take = [&](int i, const Shape& s) {
    auto st = contiguous_strides(s);
    dx[i] = make_view(out, s, st.data(), off);
    off += s.numel();
  };
  if (p.wants & kWantX) take(0, x.shape());
  if (p.wants & kWantW) take(1, w.shape());
  if (p.wants & kWantB) take(2, Shape{w.shape()[0]});
  return true;
}

// Batching rule (fx::vmap). With a shared weight and bias the batch's rows stack into one
// product; a batched weight or bias (per-example parameters) takes the composed form.
Tensor linear_batch(const Primitive& p, const BatchArgs& a) {
  const Tensor& x = a.in[0];
  const LinearAttrs& la = a.attrs.get<LinearAttrs>();
  const bool bias = la.bias;
  if (!a.is_batched(1) && !(bias && a.is_batched(2))) {
    const int64_t m = x.shape()[1], k = x.shape()[2], n = a.in[1].shape()[0];
    const Tensor rows = reshape(x, {a.size * m, k});
    Tensor y =
        bias ? bind(p, {rows, a.in[1], a.in[2]}, a.attrs) : bind(p, {rows, a.in[1]}, a.attrs);
    return reshape(y, {a.size, m, n});
  }
  Tensor z = matmul(x, transpose(a.in[1], -2, -1));
  if (bias) z = z + (a.is_batched(2) ? unsqueeze(a.in[2], 1) : a.in[2]);
  return activate(la.epilogue, z);
}

}  // namespace

// Internal, no pullback: only used when nothing records (fused_linear_pullback above).
Primitive linear_backward_p{
    .name = "linear_backward",
    .forward = [](const Primitive& p, std::span<const Tensor> in, Attrs pr) {
      const int64_t m = in[1].shape()[0], k = in[1].shape()[1], n = in[2].shape()[0];
      const int64_t wants = pr.get<LinearBackwardAttrs>().wants;
      const int64_t size =
          (wants & kWantX ? m * k : 0) + (wants & kWantW ? n * k : 0) + (wants & kWantB ? n : 0);
      Tensor out = Tensor::empty({size}, in[1].dtype(), output_device(in));
      dispatch({p, in, out, pr});
      return out;
    }};

// Inputs (x (m, k), w (n, k)[, b (n,)]); LinearAttrs.
Primitive linear_p{.name = "linear",
                   .forward =
                       [](const Primitive& p, std::span<const Tensor> in, Attrs pr) {
                         Tensor out = Tensor::empty({in[0].shape()[0], in[1].shape()[0]},
                                                    in[0].dtype(), output_device(in));
                         dispatch({p, in, out, pr});
                         return out;
                       },
                   .saves = saves::input(0) | saves::input(1) | saves::output,
                   .pullback =
                       [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
                         if (fused_linear_pullback(a, dy, dx)) return;
                         const Tensor &x = a.input(0), &w = a.input(1);
                         // dW = dz^T x comes out in w's own (out, in) layout, as Dense's optimiser reads it.
                         const Tensor dz =
                             times_derivative(a.attrs<LinearAttrs>().epilogue, dy, a.output());
                         if (a.wants(0)) dx[0] = matmul(dz, w);
                         if (a.wants(1)) dx[1] = matmul(transpose(dz), x);
                         if (a.attrs<LinearAttrs>().bias && a.wants(2)) dx[2] = sum(dz, 0);
                       },
                   .jvp = [](const JvpArgs& a, const Tensor* dx) -> Tensor {
                     const Tensor &x = a.input(0), &w = a.input(1), &y = a.output();
                     Tensor dz;
                     auto add = [&](const Tensor& t) { dz = dz.defined() ? dz + t : t; };
                     if (dx[0].defined()) add(matmul(dx[0], transpose(w)));
                     if (dx[1].defined()) add(matmul(x, transpose(dx[1])));
                     if (a.attrs<LinearAttrs>().bias && dx[2].defined())
                       add(expand(dx[2], y.shape()));
                     if (!dz.defined()) return dz;
                     return times_derivative(a.attrs<LinearAttrs>().epilogue, dz, y);
                   },
                   .batch = linear_batch};

Tensor linear(const Tensor& x0, const Tensor& w0, const Tensor& b0, Epilogue act) {
  FX_CHECK(x0.defined() && w0.defined(), "fx::linear: undefined ",
           x0.defined() ? "weight" : "input");
  FX_CHECK(w0.ndim() == 2, "fx::linear: weight must be 2-d (out, in), got ", w0.shape());
  const int64_t in = w0.shape()[1], out = w0.shape()[0];
  FX_CHECK(x0.ndim() >= 1 && x0.shape()[x0.ndim() - 1] == in, "fx::linear: input ", x0.shape(),
           " does not fit weight ", w0.shape(), ": the last dimension must be ", in);
  FX_CHECK(!b0.defined() || b0.shape() == Shape{out}, "fx::linear: bias ",
           b0.defined() ? b0.shape().to_string() : "", " does not match weight ", w0.shape(),
           " (expected (", out, ",))");
  const int64_t code = int64_t(act);
  FX_CHECK(code >= 0 && code <= int64_t(Epilogue::sigmoid), "fx::linear: unknown epilogue ", code);
  DType t = promote(x0.dtype(), w0.dtype());
  if (b0.defined()) t = promote(t, b0.dtype());
  if (t != f32 && t != f64) {  // the composed ops define (or reject) the rest
    Tensor z = matmul(x0, transpose(w0));
    return activate(act, b0.defined() ? z + b0 : z);
  }
  const Tensor w = astype(w0, t);
  Tensor x = astype(x0, t);
  if (x.ndim() != 2) x = reshape(x, {-1, in});
  const LinearAttrs p{act, b0.defined()};
  Tensor y = b0.defined() ? bind(linear_p, {x, w, astype(b0, t)}, p) : bind(linear_p, {x, w}, p);
  if (x0.ndim() == 2) return y;
  Shape s = x0.shape();
  s[s.size() - 1] = out;
  return reshape(y, s);
}

}  // namespace fx
