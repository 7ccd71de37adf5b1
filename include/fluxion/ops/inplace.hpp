// In-place updates and element/slice assignment, differentiable.
//
//   fx::Tensor buf = fx::zeros({n});
//   for (int i = 0; i < n; ++i) buf.at({i}) = fx::sin(fx::select(x, 0, i)) * i;  // fill a buffer
//   h += fx::tanh(h);   m.slice_assign(1, 0, 4, fx::ones({4}));   z.copy_(y);   w.fill_(0);
//
// Each update writes the tensor's storage (so views of it see the change) and, when a
// differentiation is watching, records the new value as a function of the old value and the
// operands: gradients flow through mutation, unlike in Zygote. The old value of a tracked tensor
// is snapshotted when the update's own derivative needs it (x *= y). If an earlier operation
// saved the overwritten value for its backward pass (y = tanh(x) keeps y; then y *= 2), the
// backward pass throws fx::Error naming that operation, never a silently wrong gradient; so does
// using another view of the storage that was tracked before the write.
//
// The members are declared on fx::Tensor (core/tensor.hpp) and implemented with the ops here.
#pragma once
#include "fluxion/core/tensor.hpp"
#include "fluxion/ops/view.hpp"
