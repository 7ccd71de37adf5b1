// Conv, ConvTranspose and DepthwiseConv: convolution layers over 1, 2 or 3 spatial axes of an
// (N, C, ...) input (PyTorch's layout), on the fx::conv primitives (fluxion/ops/conv.hpp).
//
//   auto c = fx::nn::Conv({5, 5}, 1, 6, fx::relu, {.padding = {2}});  // weight (6, 1, 5, 5)
//   fx::Tensor x = fx::randn({32, 1, 28, 28});
//   fx::Tensor y = c(x);                                             // (32, 6, 28, 28)
//   auto s = fx::nn::Conv({3, 3}, 6, 8, fx::identity, {.stride = {2}, .same = true});
//   auto t = fx::nn::ConvTranspose({3, 3}, 8, 6, fx::identity,
//                                  {.stride = {2}, .padding = {1}, .output_padding = {1}});
//   fx::Tensor u = t(s(y));                                          // (32, 6, 28, 28)
//   auto d = fx::nn::DepthwiseConv({3, 3}, 6, 12);                   // groups = 6
//
// Cross-correlation, as PyTorch; `flipped` turns the kernel around first, as Flux's Conv does
// without `Flux.CrossCor` (a true convolution). `same` pads so that a stride-1 output keeps the
// input's size (Flux's SamePad: dilation (k - 1) split, the odd unit at the high end). The weight
// starts glorot_uniform with the fan convention of fluxion/nn/init.hpp, the bias at zero.
// A wrong channel count, groups not dividing the channels, a negative padding and a kernel
// larger than the padded input raise an fx::Error naming the layer and the shapes.
#pragma once
#include <cstdint>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/nn/activations.hpp"
#include "fluxion/nn/init.hpp"
#include "fluxion/ops/conv.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/index.hpp"

namespace fx::nn {

struct ConvOptions {
  std::vector<int64_t> stride = {};      // per spatial axis, or one for all; default 1
  std::vector<int64_t> padding = {};     // both sides; default 0
  std::vector<int64_t> padding_hi = {};  // the high side, when it differs (asymmetric)
  std::vector<int64_t> dilation = {};    // default 1
  int64_t groups = 1;
  bool same = false;     // pad so that stride 1 keeps the size (overrides padding)
  bool flipped = false;  // true convolution (Flux's default) instead of cross-correlation
  bool bias = true;
  std::vector<int64_t> output_padding = {};  // ConvTranspose only
  DType dtype = f32;
};

namespace conv_layer {

// Checks the options for `layer` with this kernel and channel counts, and turns them into the
// primitive's geometry (resolving `same`).
inline ConvGeometry geometry(const char* layer, const std::vector<int64_t>& kernel, int64_t in,
                             int64_t out, const ConvOptions& o) {
  const size_t nd = kernel.size();
  FX_CHECK(nd >= 1 && nd <= 3, layer, ": the kernel needs 1 to 3 sizes, got ", nd);
  for (int64_t k : kernel) FX_CHECK(k >= 1, layer, ": kernel sizes must be positive, got ", k);
  FX_CHECK(in >= 1 && out >= 1, layer, ": channel counts must be positive, got ", in, " => ", out);
  FX_CHECK(o.groups >= 1 && in % o.groups == 0 && out % o.groups == 0, layer, ": groups ", o.groups,
           " must divide both channel counts ", in, " => ", out);
  for (const auto* v : {&o.padding, &o.padding_hi})
    for (int64_t p : *v) FX_CHECK(p >= 0, layer, ": padding must be non-negative, got ", p);
  ConvGeometry g{o.stride, o.padding, o.padding_hi, o.dilation, o.groups};
  if (o.same) {
    g.padding.assign(nd, 0);
    g.padding_hi.assign(nd, 0);
    for (size_t a = 0; a < nd; ++a) {
      const int64_t d = o.dilation.empty() ? 1 : o.dilation[o.dilation.size() == 1 ? 0 : a];
      const int64_t total = d * (kernel[a] - 1);
      g.padding[a] = total / 2;
      g.padding_hi[a] = total - total / 2;
    }
  }
  return g;
}

// The weight reversed along its spatial axes.
inline Tensor flip_spatial(const Tensor& w) {
  Tensor f = w;
  for (int64_t a = 2; a < w.ndim(); ++a) {
    const int64_t n = w.shape()[a];
    f = index_select(f, a, arange(double(n - 1), -1.0, -1.0, i64));
  }
  return f;
}

inline Shape weight_shape(int64_t first, int64_t second, const std::vector<int64_t>& kernel) {
  std::vector<int64_t> s = {first, second};
  s.insert(s.end(), kernel.begin(), kernel.end());
  return Shape(s);
}

// Checks x against a layer whose weight is w and whose input has `channels` channels.
inline void check_input(const char* layer, const Tensor& x, const Tensor& w, int64_t channels) {
  FX_CHECK(w.defined(), layer, ": an empty layer (default-constructed) cannot be called");
  FX_CHECK(x.defined() && x.ndim() == w.ndim(), layer, ": input ",
           x.defined() ? x.shape().to_string() : "undefined", " must be (N, C, ...) with ",
           w.ndim() - 2, " spatial axes for weight ", w.shape());
  FX_CHECK(x.shape()[1] == channels, layer, ": input ", x.shape(), " has ", x.shape()[1],
           " channels, the layer (weight ", w.shape(), ") expects ", channels);
}

}  // namespace conv_layer

struct Conv {
  Tensor weight;  // (out, in / groups, *kernel)
  Tensor bias;    // (out,), or undefined
  Activation act = identity;
  ConvGeometry geometry;
  bool flipped = false;
  FX_FIELDS(weight, bias)

  Conv() = default;  // an empty slot (a gradient, a model to load into); not callable
  Conv(const std::vector<int64_t>& kernel, int64_t in, int64_t out, Activation act, Generator& gen,
       const ConvOptions& o = {})
      : act(act), flipped(o.flipped) {
    geometry = conv_layer::geometry(name(), kernel, in, out, o);
    weight =
        glorot_uniform(conv_layer::weight_shape(out, in / o.groups, kernel), gen, 1.0, o.dtype);
    if (o.bias) bias = zeros({out}, o.dtype);
  }
  Conv(const std::vector<int64_t>& kernel, int64_t in, int64_t out, Activation act = identity,
       const ConvOptions& o = {})
      : Conv(kernel, in, out, act, default_generator(), o) {}

  static constexpr const char* name() { return "fx::nn::Conv"; }

  Tensor operator()(const Tensor& x) const {
    conv_layer::check_input(name(), x, weight, weight.shape()[1] * geometry.groups);
    (void)conv_output_shape(name(), x.shape(), weight.shape(), geometry);
    return act(conv(x, flipped ? conv_layer::flip_spatial(weight) : weight, bias, geometry));
  }
};

// Depthwise: a Conv with one group per input channel, `out` a multiple of `in` (Flux's
// DepthwiseConv, which is also a Conv with groups there).
inline ConvOptions depthwise_options(int64_t in, int64_t out, ConvOptions o) {
  FX_CHECK(in >= 1 && out % in == 0, "fx::nn::DepthwiseConv: the output channels ", out,
           " must be a multiple of the input channels ", in);
  o.groups = in;
  return o;
}
inline Conv DepthwiseConv(const std::vector<int64_t>& kernel, int64_t in, int64_t out,
                          Activation act = identity, const ConvOptions& o = {}) {
  return Conv(kernel, in, out, act, depthwise_options(in, out, o));
}
inline Conv DepthwiseConv(const std::vector<int64_t>& kernel, int64_t in, int64_t out,
                          Activation act, Generator& gen, const ConvOptions& o = {}) {
  return Conv(kernel, in, out, act, gen, depthwise_options(in, out, o));
}

// The transposed convolution (PyTorch's ConvTranspose, weight (in, out / groups, *kernel)):
// the adjoint of Conv's map from input to output, plus a bias. output_padding (< stride) picks
// the larger of the output sizes a strided Conv maps back to the input's.
struct ConvTranspose {
  Tensor weight;  // (in, out / groups, *kernel)
  Tensor bias;    // (out,), or undefined
  Activation act = identity;
  ConvGeometry geometry;
  std::vector<int64_t> output_padding;
  bool flipped = false;
  FX_FIELDS(weight, bias)

  ConvTranspose() = default;
  ConvTranspose(const std::vector<int64_t>& kernel, int64_t in, int64_t out, Activation act,
                Generator& gen, const ConvOptions& o = {})
      : act(act), output_padding(o.output_padding), flipped(o.flipped) {
    geometry = conv_layer::geometry(name(), kernel, in, out, o);
    weight =
        glorot_uniform(conv_layer::weight_shape(in, out / o.groups, kernel), gen, 1.0, o.dtype);
    if (o.bias) bias = zeros({out}, o.dtype);
  }
  ConvTranspose(const std::vector<int64_t>& kernel, int64_t in, int64_t out,
                Activation act = identity, const ConvOptions& o = {})
      : ConvTranspose(kernel, in, out, act, default_generator(), o) {}

  static constexpr const char* name() { return "fx::nn::ConvTranspose"; }

  Tensor operator()(const Tensor& x) const {
    conv_layer::check_input(name(), x, weight, weight.shape()[0]);
    return act(conv_transpose(x, flipped ? conv_layer::flip_spatial(weight) : weight, bias,
                              geometry, output_padding));
  }
};

}  // namespace fx::nn
