// Activation functions: NNlib's whole list. The primitives from fluxion/ops (relu, sigmoid, tanh,
// softplus, identity) plus composites written with public ops, so none of them needs a gradient
// rule of its own and every one differentiates again (second order, forward mode).
//
//   auto layer = fx::nn::Dense(784, 256, fx::gelu);      // any Activation fits a layer
//   fx::Tensor x = fx::randn({32, 784}), logits = fx::randn({32, 10});
//   auto p = fx::softmax(logits);                        // rows sum to 1 (last axis)
//   auto lp = fx::logsoftmax(logits, 0);                 // or along a chosen axis
//   auto q = fx::softmax(fx::randn({4, 3, 5}), {1, 2});  // or over a set of axes
//   auto y = fx::leakyrelu(x, 0.2);                      // with a non-default slope
//   auto g = fx::glu(x, -1);                             // (32, 784) -> (32, 392)
//   fx::Generator gen(7);
//   auto r = fx::rrelu(x, 1.0 / 8, 1.0 / 3, gen);        // training: a random slope per element
//
// Functions with a parameter (axis, slope) also have a one-argument overload with the default,
// so `fx::Activation a = fx::softmax;` picks that one and it can be stored in a layer.
// Definitions are NNlib's (a, b, theta, lambda named as there); where PyTorch has the same function
// its values agree (tests/oracle/nn_functions_oracle_test.cpp).
#pragma once
#include <cstdint>

#include "fluxion/core/tensor.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/reduce.hpp"

namespace fx {

// What a layer stores as its nonlinearity: a plain function pointer keeps layers copyable,
// comparable and printable, and costs nothing to call through.
using Activation = Tensor (*)(const Tensor&);

// exp(x) / sum(exp(x)) along `axis`, shifted by the max so exp never overflows.
Tensor softmax(const Tensor& x, int64_t axis);
Tensor softmax(const Tensor& x);  // last axis
// The same over a set of axes (normalised jointly); an empty set means every axis.
Tensor softmax(const Tensor& x, Axes axes);
// x - logsumexp(x): finite even where softmax underflows to 0.
Tensor logsoftmax(const Tensor& x, int64_t axis);
Tensor logsoftmax(const Tensor& x);  // last axis
Tensor logsoftmax(const Tensor& x, Axes axes);
// (logsumexp over any set of axes is fx::logsumexp in fluxion/ops/reduce.hpp.)

// --- piecewise linear -------------------------------------------------------------------------
// max(0, min(1, (x + 3) / 6))
Tensor hardsigmoid(const Tensor& x);
// max(-1, min(1, x))
Tensor hardtanh(const Tensor& x);
// min(max(x, 0), 6)
Tensor relu6(const Tensor& x);
// x where x > 0, else slope x.
Tensor leakyrelu(const Tensor& x, double slope);
Tensor leakyrelu(const Tensor& x);  // slope 0.01
// Randomised leaky relu: x where x >= 0, else a x. With a generator (training) a is drawn
// U(lo, hi) for each element; without (evaluation) a is the mean slope (lo + hi) / 2, as PyTorch.
Tensor rrelu(const Tensor& x, double lo, double hi, Generator& gen);
Tensor rrelu(const Tensor& x, double lo, double hi);
Tensor rrelu(const Tensor& x);  // lo 1/8, hi 1/3, evaluation
// x where x > theta, else 0 (thresholded relu).
Tensor trelu(const Tensor& x, double theta);
Tensor trelu(const Tensor& x);  // theta 1
// x - lambda where x > lambda, x + lambda where x < -lambda, else 0.
Tensor softshrink(const Tensor& x, double lambda);
Tensor softshrink(const Tensor& x);  // lambda 0.5

// --- exponential ------------------------------------------------------------------------------
// x where x > 0, else alpha (exp(x) - 1).
Tensor elu(const Tensor& x, double alpha);
Tensor elu(const Tensor& x);  // alpha 1
// x where x > 0, else alpha (exp(x / alpha) - 1).
Tensor celu(const Tensor& x, double alpha);
Tensor celu(const Tensor& x);  // alpha 1
// lambda elu(x, alpha) with the self-normalising constants lambda ~ 1.0507, alpha ~ 1.6733.
Tensor selu(const Tensor& x);

// --- smooth gates -----------------------------------------------------------------------------
// NNlib's default gelu is the tanh form.
Tensor gelu(const Tensor& x);
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the approximation used by GPT-2 and Flux.
Tensor gelu_tanh(const Tensor& x);
// x sigmoid(sqrt(8/pi) (x + 0.044715 x^3)): the same function as gelu_tanh, written with sigmoid.
Tensor gelu_sigmoid(const Tensor& x);
// 0.5 x (1 + erf(x / sqrt 2)) = x Phi(x), the exact GELU (PyTorch's default).
Tensor gelu_erf(const Tensor& x);
// x * sigmoid(x), also called SiLU.
Tensor swish(const Tensor& x);
// x * hardsigmoid(x)
Tensor hardswish(const Tensor& x);
// x * tanh(softplus(x))
Tensor mish(const Tensor& x);
// x * tanh(x)
Tensor lisht(const Tensor& x);
// x / (1 + |x|)
Tensor softsign(const Tensor& x);
// log(sigmoid(x)) = -softplus(-x): no overflow for large |x|.
Tensor logsigmoid(const Tensor& x);
// log(cosh(x)) = x + softplus(-2x) - log 2: no overflow for large |x|.
Tensor logcosh(const Tensor& x);
// x - tanh(x)
Tensor tanhshrink(const Tensor& x);

// Gated linear unit: a * sigmoid(b), where a and b are the first and second half of x along
// `axis` (whose length must be even).
Tensor glu(const Tensor& x, int64_t axis);
Tensor glu(const Tensor& x);  // last axis (PyTorch's default; NNlib's first axis is its features)

}  // namespace fx
