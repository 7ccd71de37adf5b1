// Fused CPU kernels for the activations whose composed form makes many passes over memory:
// gelu (tanh and erf forms), softmax and logsoftmax over the last axis. activations.cpp uses them
// through one fx::custom_rule node when at most one reverse tape records (the pullback is a
// kernel, not ops, so it is not differentiated again); forward mode, second order and other
// devices take the composed form.
#pragma once
#include "fluxion/core/tensor.hpp"

namespace fx::nn::detail {

// Whether the fused kernels apply to x: a CPU tensor of f32 or f64, with no tape recording or one
// reverse tape.
bool activation_fusable(const Tensor& x);

enum class GeluForm { tanh, erf };
Tensor gelu_forward(const Tensor& x, GeluForm form);
Tensor gelu_backward(const Tensor& x, const Tensor& dy, GeluForm form);  // dy * gelu'(x)

// Over the last axis. y is the forward's output, which the backward reads instead of x.
Tensor softmax_forward(const Tensor& x, bool log);
Tensor softmax_backward(const Tensor& y, const Tensor& dy, bool log);

}  // namespace fx::nn::detail
