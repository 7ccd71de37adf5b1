// Fused first-order pullbacks: internal primitives (not in the public table) that compute a
// pullback's result in one kernel when nothing will differentiate that result.
//
//   Tensor dx;
//   if (!fused_pullback(tanh_backward_p, dy, y, dx)) dx = dy * (1.0 - y * y);
//
// A pullback written in public ops is differentiable again, but in an ordinary first-order
// backward pass no tape records it, and its intermediates (1 - y*y: three ops, three temporaries
// for tanh; a bool mask and a select for relu) cost more than the arithmetic. These entries have no pullback, so
// they are only used when no differentiation is recording.
#pragma once
#include "fluxion/ops/elementwise_defs.hpp"
#include "fluxion/ops/primitive.hpp"

namespace fx {

// (dy, s) -> dy * f' for each math function f of the table (fluxion/ops/elementwise_defs.hpp),
// s being what its derivative reads (x, or y = f(x)): tanh_backward_p, exp_backward_p, ...
#define FX_DECLARE_BACKWARD(name) extern Primitive name##_backward_p;
FX_ELEMENTWISE_UNARY(FX_DECLARE_BACKWARD)
#undef FX_DECLARE_BACKWARD
extern Primitive square_backward_p;  // (dy, x) -> dy * (2 x), for y = x^2 (reads x, not y)
// (dy, x, y) -> dy * exp(x - y), y = logsumexp(x), with dy and y expanded to x's shape.
extern Primitive logsumexp_backward_p;
// (dy, x, labels) -> (softmax(x) - onehot(labels)) dy / N for l = logitcrossentropy(x, labels):
// dy 0-d, x (N, C) dense, labels (N,) dense i64 or i32.
extern Primitive logitcrossentropy_backward_p;
extern Primitive relu_backward_p;  // (dy, y) -> y > 0 ? dy : 0, y = relu(x)
// (dy, a, b) -> [dy * b | dy * a] for y = a * b (real, one shape, all dense): both cotangents
// of a product in one allocation and one pass over dy.
extern Primitive mul_backward_p;
// (dy, a, b) -> [dA | dB] for y = a @ b (real, equal batch dims): dA = dy b^T and dB = a^T dy
// flat in one buffer, dA first, each row-major. Batch by batch, so each batch of dy is read
// from memory once and again from cache. With params.i[0] set, dA is written over dy (which
// must be contiguous, shaped like a, and held by nothing else) and the output is dB alone.
extern Primitive matmul_backward_p;
// (dy, x, w, y) -> [dx | dW | db] for y = linear(x, w, b, act) (2-d x, f32 or f64): dz = dy act'(y),
// then dx = dz w, dW = dz^T x and db = the column sums of dz, flat in one buffer in that order,
// each row-major; params.i[0] is the Epilogue, params.i[1] the bits 1, 2, 4 of the cotangents to
// compute (dx, dW, db). With params.i[2] set, dz is written over dy (contiguous, held by nothing
// else).
extern Primitive linear_backward_p;

// Whether device d has a kernel for p (fused entries may lack one on some devices; the caller
// then runs the composed rule).
bool has_kernel(const Primitive& p, Device d);

// Whether t is the one handle on a dense buffer that no other tensor views and no tape tracks:
// a first-order backward pass may then write it in place (cotangent accumulation, dA over dy).
bool sole_dense_handle(const Tensor& t);

// Sets dx = p(dy, y) and returns true when no differentiation is recording, dy and y are f32 or
// f64 of one shape and dtype, and the device has a kernel for p; otherwise returns false and the
// caller runs the composed (differentiable) form. A dy that is a sole dense handle
// (sole_dense_handle) is overwritten with the result, and dx is dy; failing that, a reusable y
// (PullbackArgs::reusable_input, the same tensor as y) is, and dx takes it over.
bool fused_pullback(const Primitive& p, const Tensor& dy, const Tensor& y, Tensor& dx,
                    Tensor* reusable_y = nullptr);
// Sets dx[0] = dy * b and dx[1] = dy * a through mul_backward_p (views of one buffer) and
// returns true under the same conditions, with a and b dense; otherwise returns false.
bool fused_mul_pullback(const Tensor& dy, const Tensor& a, const Tensor& b, Tensor* dx);

}  // namespace fx
