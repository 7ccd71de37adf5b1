// Fused CPU kernels for mse with the mean or sum (losses.cpp): the composed form made three passes
// and three temporaries forward and as many back, 1.5x libtorch's mse_loss (bench/layer_table).
#pragma once
#include "fluxion/core/tensor.hpp"

namespace fx::nn::detail {

// sum((yhat - y)^2) * scale as a 0-d tensor of yhat's dtype; yhat, y CPU f32/f64 of one shape.
Tensor squared_error_forward(const Tensor& yhat, const Tensor& y, double scale);
// 2 scale dy (yhat - y), yhat's shape; dy 0-d.
Tensor squared_error_backward(const Tensor& yhat, const Tensor& y, const Tensor& dy, double scale);

}  // namespace fx::nn::detail
