// In-place updates and element/slice assignment, differentiable.
//
//   int n = 5;
//   fx::Tensor x = fx::randn({n});
//   auto f = [&](const fx::Tensor& x) {
//     fx::Tensor buf = fx::zeros({n});
//     for (int i = 0; i < n; ++i) buf.at({i}) = fx::sin(fx::select(x, 0, i)) * i;  // fill a buffer
//     return fx::sum(buf);
//   };
//   fx::Tensor g = fx::gradient(f, x);   // g[i] = i cos(x[i]): gradients flow through writes
//   fx::Tensor h = fx::randn({3, 4}), m = fx::zeros({3, 8}), z = fx::empty({3, 4});
//   fx::Tensor w = fx::ones({4});
//   h += fx::tanh(h);   m.slice_assign(1, 0, 4, fx::ones({4}));   z.copy_(h);   w.fill_(0);
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
