// Batching rules shared by several primitives (fx::vmap, fluxion/ad/vmap.hpp). A rule receives
// the stored values (batched ones carry the batch on axis 0) and applies the primitive to the
// whole batch with public ops or bind; primitives with a rule of their own define it beside
// their pullback.
#pragma once
#include "fluxion/ops/primitive.hpp"

namespace fx::detail {

// Elementwise primitives, any number of inputs: logical shapes broadcast as the public op
// broadcasts them, so each batched input gets size-1 axes after its batch axis up to the
// largest logical rank, and every input is expanded to the common stored shape.
Tensor batch_elementwise(const Primitive& p, const BatchArgs& a);
// Reductions (params: i[0] the axes mask, shape the input's shape): the mask moves past the
// batch axis.
Tensor batch_reduce(const Primitive& p, const BatchArgs& a);
// Primitives whose params.i[0] is an axis and params.shape, if set, a whole operand's shape
// (slice and its adjoints, gather, scatter_add, concat, fft): every input gets the batch, the
// axis moves past it.
Tensor batch_along_axis(const Primitive& p, const BatchArgs& a);
// Any primitive, example by example: each batched input's slice, the primitive bound on it, the
// results stacked. What vmap does for a primitive without a rule.
Tensor batch_by_loop(const Primitive& p, const BatchArgs& a);

// Input i with the batch on axis 0: batched inputs as stored, shared ones expanded over it.
Tensor batched_input(const BatchArgs& a, size_t i);
// (b, s...)
Shape with_batch(int64_t b, const Shape& s);
// params with axis field i[k] moved past the batch axis and params.shape, if set, given the batch.
Params shifted_axis_params(const BatchArgs& a, int k = 0);

}  // namespace fx::detail
