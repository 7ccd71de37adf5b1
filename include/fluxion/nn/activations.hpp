// Activation functions: the primitives from fluxion/ops (relu, sigmoid, tanh, softplus, identity)
// plus composites written with public ops, so none of them needs a gradient rule of its own.
//
//   auto layer = fx::nn::Dense(784, 256, fx::gelu);      // any Activation fits a layer
//   fx::Tensor x = fx::randn({32, 784}), logits = fx::randn({32, 10});
//   auto p = fx::softmax(logits);                        // rows sum to 1 (last axis)
//   auto lp = fx::logsoftmax(logits, 0);                 // or along a chosen axis
//   auto y = fx::leakyrelu(x, 0.2);                      // with a non-default slope
//
// Functions with a parameter (axis, slope) also have a one-argument overload with the default,
// so `fx::Activation a = fx::softmax;` picks that one and it can be stored in a layer.
#pragma once
#include <cstdint>

#include "fluxion/core/tensor.hpp"
#include "fluxion/ops/elementwise.hpp"

namespace fx {

// What a layer stores as its nonlinearity: a plain function pointer keeps layers copyable,
// comparable and printable, and costs nothing to call through.
using Activation = Tensor (*)(const Tensor&);

// exp(x) / sum(exp(x)) along `axis`, shifted by the max so exp never overflows.
Tensor softmax(const Tensor& x, int64_t axis);
Tensor softmax(const Tensor& x);  // last axis
// x - logsumexp(x): finite even where softmax underflows to 0.
Tensor logsoftmax(const Tensor& x, int64_t axis);
Tensor logsoftmax(const Tensor& x);  // last axis

Tensor leakyrelu(const Tensor& x, double slope);
Tensor leakyrelu(const Tensor& x);  // slope 0.01
Tensor elu(const Tensor& x, double alpha);
Tensor elu(const Tensor& x);  // alpha 1
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the tanh approximation used by GPT-2 and Flux.
Tensor gelu(const Tensor& x);
// x * sigmoid(x), also called SiLU.
Tensor swish(const Tensor& x);

}  // namespace fx
