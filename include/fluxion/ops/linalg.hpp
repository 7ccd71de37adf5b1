// Matrix products through OpenBLAS and oneDNN, and the fused affine map of a dense layer.
//
//   fx::Tensor x = fx::randn({32, 64}), w = fx::randn({16, 64}), bias = fx::zeros({16});
//   auto y = fx::matmul(x, w.t());   // (N, in) @ (in, out); transposed views cost no copy
//   fx::Tensor a = fx::randn({5, 3, 4}), b = fx::randn({4, 2}), m = fx::randn({16, 32});
//   auto z = fx::matmul(a, b);       // (B, m, k) @ (k, n): batch dims broadcast -> (5, 3, 2)
//   auto v = fx::matmul(m, fx::ones({32}));          // (m, k) @ (k,) -> (m,)
//   auto h = fx::linear(x, w, bias, fx::Epilogue::relu);   // relu(x @ w^T + b), one primitive
#pragma once
#include "fluxion/core/tensor.hpp"
#include "fluxion/ops/attrs.hpp"

namespace fx {

Tensor matmul(const Tensor& a, const Tensor& b);
Tensor dot(const Tensor& a, const Tensor& b);  // 1-d inner product -> 0-d

// The activation fx::linear applies to the product (a GEMM epilogue, as cuBLASLt and oneDNN
// call it). Each is computed, and differentiated, from its output alone.
enum class Epilogue : int64_t { identity, relu, tanh, sigmoid };

// Attributes of the linear primitive and of its fused backward (kernels read them).
struct LinearAttrs {
  Epilogue epilogue = Epilogue::identity;
  bool bias = false;
  FX_ATTRS(LinearAttrs, epilogue, bias)
};
struct LinearBackwardAttrs {
  Epilogue epilogue = Epilogue::identity;
  int64_t wants = 0;        // bits: 1 dx, 2 dW, 4 db
  bool dz_over_dy = false;  // dy is the backward pass's own buffer: dz may overwrite it
  FX_ATTRS(LinearBackwardAttrs, epilogue, wants, dz_over_dy)
};
// matmul's fused backward: with dA_in_dy, dA overwrites dy and the output is dB alone.
struct MatmulBackwardAttrs {
  bool dA_in_dy = false;
  FX_ATTRS(MatmulBackwardAttrs, dA_in_dy)
};

// act(x @ w^T + b) for x (..., in), w (out, in) and b (out,) or undefined: a fully connected
// layer (fx::nn::Dense) as one primitive. The same values as the composed ops, at less cost:
// each thread adds the bias and applies act to the block of the product it has just computed,
// and the reverse pass (act', the bias sum, dW in w's layout and dx) is one pass as well, so a
// layer's step runs as two parallel regions rather than five or six, with no intermediate
// tensors. Leading dimensions of x fold into one product. Integer and complex operands run the
// composed ops instead.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b = Tensor(),
              Epilogue act = Epilogue::identity);

}  // namespace fx
