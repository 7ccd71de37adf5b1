// Batching rules shared by several primitives (fx::vmap, fluxion/ad/vmap.hpp). A rule receives
// the stored values (batched ones carry the batch on axis 0) and applies the primitive to the
// whole batch with public ops or bind; primitives with a rule of their own define it beside
// their pullback.
#pragma once
#include <vector>

#include "fluxion/ops/primitive.hpp"

namespace fx::detail {

// Elementwise primitives, any number of inputs: logical shapes broadcast as the public op
// broadcasts them, so each batched input gets size-1 axes after its batch axis up to the
// largest logical rank, and every input is expanded to the common stored shape.
Tensor batch_elementwise(const Primitive& p, const BatchArgs& a);
// Reductions (ReduceAttrs): the mask moves past the batch axis.
Tensor batch_reduce(const Primitive& p, const BatchArgs& a);
// Primitives over any number of leading batch axes (linear algebra on (..., m, n)): the vmap
// batch is one more leading axis, so every input gets it and the primitive runs once.
Tensor batch_leading(const Primitive& p, const BatchArgs& a);
void batch_leading_n(const Primitive& p, const BatchArgs& a, Tensor* out);  // several outputs
// Every input with the batch on axis 0 (batched_input of each).
std::vector<Tensor> batched_inputs(const BatchArgs& a);
// Any primitive, example by example: each batched input's slice, the primitive bound on it, the
// results stacked. What vmap does for a primitive without a rule.
Tensor batch_by_loop(const Primitive& p, const BatchArgs& a);
// The same for a primitive with several outputs, into out[0 .. p.num_outputs).
void batch_by_loop_n(const Primitive& p, const BatchArgs& a, Tensor* out);

// Input i with the batch on axis 0: batched inputs as stored, shared ones expanded over it.
Tensor batched_input(const BatchArgs& a, size_t i);
// (b, s...)
Shape with_batch(int64_t b, const Shape& s);

// Primitives whose attributes A name an axis and, optionally, a whole operand's shape (slice and
// its adjoints, gather, scatter_add, concat, fft): every input gets the batch, the axis moves
// past it and the shape, if set, gains the batch.
template <class A>
Tensor batch_along_axis(const Primitive& p, const BatchArgs& a) {
  A q = a.attrs.get<A>();
  q.axis += 1;
  if constexpr (requires { q.shape; })
    if (q.shape.size() > 0) q.shape = with_batch(a.size, q.shape);
  const std::vector<Tensor> in = batched_inputs(a);
  return bind(p, std::span<const Tensor>(in), q);
}

}  // namespace fx::detail
