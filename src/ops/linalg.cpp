// matmul: one primitive on equal batch dims; the public function handles vectors and batch
// broadcasting with views so the pullback stays two matmuls.
#include "fluxion/ops/linalg.hpp"

#include "fluxion/ops/complex.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/primitives.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/batching.hpp"
#include "ops/fused.hpp"

namespace fx {

namespace {
// transpose(x, -2, -1) for the pullback. With nothing recording, the permute primitive would
// only build this same view, after validating an axis list: a first-order backward pass builds
// it directly. Under a tape the permute is bound, so the pullback differentiates again.
Tensor transposed(const Tensor& x) {
  const int nd = x.ndim();
  if (detail::must_compose() || nd < 2) return transpose(x, -2, -1);
  Shape s = x.shape();
  std::swap(s[nd - 2], s[nd - 1]);
  int64_t st[kMaxDims];
  for (int d = 0; d < nd; ++d) st[d] = x.stride(d);
  std::swap(st[nd - 2], st[nd - 1]);
  return make_view(x, s, st, x.offset());
}

// Whether x is a 2-d matrix stored column by column (the transpose of a dense one).
bool transposed_dense(const Tensor& x) {
  return x.ndim() == 2 && x.shape()[0] > 1 && x.shape()[1] > 1 && x.stride(0) == 1 &&
         x.stride(1) == x.shape()[0];
}

// Both adjoints of a batched real product through matmul_backward_p when nothing records: the
// two products of the composed rule each read all of dy (the GMM's (K, N, D) cotangent, larger
// than L2 from K = 25 at D = 10); batch by batch the second read comes from cache. A tiny 2-d
// product (the LSTM overhead benchmark's 4-wide cells) is fused too: there the two public
// matmuls' checks, transposed views, allocations and dispatches cost far more than the
// arithmetic. Returns false (and leaves dx alone) where the composed rule must run.
constexpr int64_t kFusedTinyMatmul = 4096;  // m * n * k of a 2-d product fused anyway
bool fused_matmul_pullback(const Tensor& dy, const Tensor& a, const Tensor& b, Tensor* dx) {
  if (detail::must_compose() || a.ndim() < 2) return false;
  if (a.ndim() == 2 && a.numel() * b.shape()[1] > kFusedTinyMatmul) return false;
  const DType t = a.dtype();
  if ((t != f32 && t != f64) || b.dtype() != t || dy.dtype() != t) return false;
  if (!has_kernel(matmul_backward_p, a.device())) return false;
  auto sa = contiguous_strides(a.shape()), sb = contiguous_strides(b.shape());
  // A batched cotangent that only this backward pass holds (made by the pullback before, moved
  // out of the tape's slot) and that is shaped like dA takes dA in place: the kernel skips a
  // fresh buffer as large as dy. (Tiny 2-d products gain nothing: their kernel path writes out.)
  MatmulBackwardAttrs p;
  p.dA_in_dy = a.ndim() >= 3 && dy.shape() == a.shape() && sole_dense_handle(dy);
  Tensor out = bind(matmul_backward_p, {dy, a, b}, p);
  if (p.dA_in_dy) {
    dx[0] = dy;
    dx[1] = make_view(out, b.shape(), sb.data(), out.offset());
    return true;
  }
  dx[0] = make_view(out, a.shape(), sa.data(), out.offset());
  dx[1] = make_view(out, b.shape(), sb.data(), out.offset() + a.numel());
  return true;
}
// Batching rule (fx::vmap). The logical operands have equal ranks, so the public matmul's
// broadcasting lines a shared operand up with the batched one's trailing batch axes; a batch
// of rows times one shared matrix is a single product of the stacked rows.
Tensor matmul_batch(const Primitive&, const BatchArgs& a) {
  const Tensor &x = a.in[0], &y = a.in[1];
  if (a.is_batched(0) && !a.is_batched(1) && x.ndim() == 3 && y.ndim() == 2) {
    const int64_t m = x.shape()[1], k = x.shape()[2], n = y.shape()[1];
    return reshape(matmul(reshape(x, {a.size * m, k}), y), {a.size, m, n});
  }
  return matmul(x, y);
}
}  // namespace

// Internal, no pullback: only used when nothing records (fused_matmul_pullback above).
// MatmulBackwardAttrs.
Primitive matmul_backward_p{
    .name = "matmul_backward",
    .forward = [](const Primitive& p, std::span<const Tensor> in, Attrs pr) {
      const int64_t n =
          (pr.get<MatmulBackwardAttrs>().dA_in_dy ? 0 : in[1].numel()) + in[2].numel();
      Tensor out = Tensor::empty({n}, in[1].dtype(), output_device(in));
      dispatch({p, in, out, pr});
      return out;
    }};

Primitive matmul_p{
    .name = "matmul",
    .forward =
        [](const Primitive& p, std::span<const Tensor> in, Attrs pr) {
          const Tensor &a = in[0], &b = in[1];
          // fx::matmul broadcasts and promotes; bound directly, the operands must already agree.
          const int nd = a.ndim();
          bool ok = nd >= 2 && b.ndim() == nd && a.dtype() == b.dtype() &&
                    a.shape()[nd - 1] == b.shape()[nd - 2];
          for (int d = 0; ok && d < nd - 2; ++d) ok = a.shape()[d] == b.shape()[d];
          if (!ok) [[unlikely]]
            detail::fail("fx::matmul: primitive bound with ", dtype_name(a.dtype()), " ", a.shape(),
                         " @ ", dtype_name(b.dtype()), " ", b.shape(),
                         ": needs matrices (or batches of one shape) of one dtype whose inner "
                         "dimensions match; fx::matmul broadcasts and promotes");
          Shape s = a.shape();
          s[s.size() - 1] = b.shape()[b.ndim() - 1];
          Tensor out = Tensor::empty(s, a.dtype(), output_device(in));
          dispatch({p, in, out, pr});
          return out;
        },
    .saves = saves::inputs,
    .pullback =
        [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
          // Adjoints: dA = dY B^H, dB = A^H dY (conj is the identity on real tensors).
          if (a.wants(0) && a.wants(1) && fused_matmul_pullback(dy, a.input(0), a.input(1), dx))
            return;
          // An input that is the transpose of a dense matrix (Dense's x @ W^T reads W that way) gets
          // its adjoint in the same layout, as the transpose of a dense product: W's gradient then
          // comes out dense in W's own layout, where the optimiser reads it in place.
          const Tensor &A = a.input(0), &B = a.input(1);
          if (a.wants(0))
            dx[0] = transposed_dense(A) ? transposed(matmul(conj(B), transposed(dy)))
                                        : matmul(dy, conj(transposed(B)));
          if (a.wants(1))
            dx[1] = transposed_dense(B) ? transposed(matmul(transposed(dy), conj(A)))
                                        : matmul(conj(transposed(A)), dy);
        },
    .jvp =
        [](const JvpArgs& a, const Tensor* dx) {
          Tensor l = dx[0].defined() ? matmul(dx[0], a.input(1)) : Tensor();
          Tensor r = dx[1].defined() ? matmul(a.input(0), dx[1]) : Tensor();
          if (!l.defined()) return r;
          return r.defined() ? l + r : l;
        },
    .batch = matmul_batch};

Tensor matmul(const Tensor& a0, const Tensor& b0) {
  FX_CHECK(a0.defined() && b0.defined(), "fx::matmul: undefined tensor");
  FX_CHECK(a0.ndim() >= 1 && b0.ndim() >= 1, "fx::matmul: ", a0.shape(), " @ ", b0.shape(),
           ": operands must have at least 1 dimension");
  DType t = promote(a0.dtype(), b0.dtype());
  FX_CHECK(t != boolean, "fx::matmul: ", a0.shape(), " @ ", b0.shape(), ": not defined for bool");
  // Two matrices of one dtype (the common case) go to bind as they are, without handle copies.
  if (a0.ndim() == 2 && b0.ndim() == 2 && a0.dtype() == t && b0.dtype() == t) {
    FX_CHECK(a0.shape()[1] == b0.shape()[0], "fx::matmul: ", a0.shape(), " @ ", b0.shape(),
             ": inner dimensions ", a0.shape()[1], " and ", b0.shape()[0], " differ");
    return bind(matmul_p, {a0, b0});
  }
  Tensor a = a0.ndim() == 1 ? unsqueeze(a0, 0) : a0;
  Tensor b = b0.ndim() == 1 ? unsqueeze(b0, 1) : b0;
  int64_t k = a.shape()[a.ndim() - 1], k2 = b.shape()[b.ndim() - 2];
  FX_CHECK(k == k2, "fx::matmul: ", a0.shape(), " @ ", b0.shape(), ": inner dimensions ", k,
           " and ", k2, " differ");
  a = astype(a, t);
  b = astype(b, t);
  if (a.ndim() > 2 || b.ndim() > 2) {
    Shape ba(std::span<const int64_t>(a.shape().data(), a.ndim() - 2));
    Shape bb(std::span<const int64_t>(b.shape().data(), b.ndim() - 2));
    Shape batch;
    try {
      batch = broadcast_shapes(ba, bb, "matmul");
    } catch (const Error&) {
      detail::fail("fx::matmul: ", a0.shape(), " @ ", b0.shape(), ": batch dimensions ", ba,
                   " and ", bb, " cannot broadcast");
    }
    Shape sa = batch, sb = batch;
    sa.push_back(a.shape()[a.ndim() - 2]);
    sa.push_back(k);
    sb.push_back(k);
    sb.push_back(b.shape()[b.ndim() - 1]);
    a = expand(a, sa);
    b = expand(b, sb);
  }
  Tensor y = bind(matmul_p, {a, b});
  if (b0.ndim() == 1) y = squeeze(y, -1);
  if (a0.ndim() == 1) y = squeeze(y, a0.ndim() == 1 && b0.ndim() == 1 ? 0 : -2);
  return y;
}

Tensor dot(const Tensor& a, const Tensor& b) {
  FX_CHECK(a.defined() && b.defined() && a.ndim() == 1 && b.ndim() == 1 && a.shape() == b.shape(),
           "fx::dot: needs two 1-d tensors of equal length, got ",
           a.defined() ? a.shape().to_string() : "undefined", " and ",
           b.defined() ? b.shape().to_string() : "undefined");
  return sum(a * b);
}

}  // namespace fx
