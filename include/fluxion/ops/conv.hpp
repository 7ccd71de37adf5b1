// Convolution as primitives: cross-correlation over 1, 2 or 3 spatial axes of an (N, C, ...)
// row-major tensor (PyTorch's and ONNX's layout), its two adjoints, and the transposed
// convolution, which is the adjoint with respect to the input.
//
//   fx::Tensor x = fx::randn({8, 3, 28, 28});          // (N, C_in, H, W)
//   fx::Tensor w = fx::randn({16, 3, 5, 5});           // (C_out, C_in / groups, kH, kW)
//   fx::Tensor b = fx::zeros({16});
//   fx::Tensor y = fx::conv(x, w, b, {.stride = {2}, .padding = {2}});      // (8, 16, 14, 14)
//   fx::Tensor u = fx::conv_transpose(y, w, fx::Tensor(),
//                                     {.stride = {2}, .padding = {2}}, {1});  // (8, 3, 28, 28)
//
// Each of the three primitives (conv, conv_backward_data, conv_backward_weights) is bilinear, and
// the pullback of each is written with the other two, so gradients of gradients (and jvps of
// them) are convolutions again. f32 runs on oneDNN; f64 on plain reference loops.
#pragma once
#include <cstdint>
#include <vector>

#include "fluxion/core/tensor.hpp"

namespace fx {

// The geometry of a convolution, per spatial axis. A list of one value applies to every axis;
// an empty list means the default (stride 1, padding 0, dilation 1). `padding` pads both sides;
// `padding_hi`, when given, replaces it on the high side (asymmetric padding). Dilation 1 is an
// ordinary convolution (PyTorch's convention).
struct ConvGeometry {
  std::vector<int64_t> stride = {};
  std::vector<int64_t> padding = {};
  std::vector<int64_t> padding_hi = {};
  std::vector<int64_t> dilation = {};
  int64_t groups = 1;
};

// y[n, o, p] = b[o] + sum over c in o's group, k: x[n, c, p*stride - pad_lo + k*dilation] w[o, c, k].
// x (N, C_in, *spatial), w (C_out, C_in / groups, *kernel), b (C_out,) or undefined.
Tensor conv(const Tensor& x, const Tensor& w, const Tensor& b = Tensor(),
            const ConvGeometry& geometry = {});

// The transposed convolution (PyTorch's conv_transposeNd): the adjoint of conv with respect to
// its input, plus a bias. x (N, C_in, *spatial), w (C_in, C_out / groups, *kernel); the output's
// spatial size is (i - 1) stride - pad_lo - pad_hi + dilation (k - 1) + 1 + output_padding, with
// output_padding < max(stride, dilation) choosing among the sizes that conv maps to i.
Tensor conv_transpose(const Tensor& x, const Tensor& w, const Tensor& b = Tensor(),
                      const ConvGeometry& geometry = {},
                      const std::vector<int64_t>& output_padding = {});

// conv's output shape for input shape x and weight shape w, checking the geometry (an fx::Error
// naming `op` for a bad stride, padding or dilation, or a kernel larger than the padded input).
// The shape rule of conv, exposed for layers and outputsize.
Shape conv_output_shape(const char* op, const Shape& x, const Shape& w,
                        const ConvGeometry& geometry);

// The adjoints themselves. conv_backward_data(dy, w, x_shape): the cotangent of conv's input;
// conv_backward_weights(x, dy, w_shape): the cotangent of its weight.
Tensor conv_backward_data(const Tensor& dy, const Tensor& w, const Shape& x_shape,
                          const ConvGeometry& geometry = {});
Tensor conv_backward_weights(const Tensor& x, const Tensor& dy, const Shape& w_shape,
                             const ConvGeometry& geometry = {});

}  // namespace fx
