// Pooling layers over the spatial axes of an (N, C, ...) input: MaxPool and MeanPool on the
// fx::max_pool / fx::avg_pool primitives (oneDNN kernels, fluxion/ops/pool.hpp), the adaptive
// ones that pick their windows from the output size, and the global ones.
//
//   fx::Tensor x = fx::randn({8, 6, 28, 28});
//   fx::Tensor a = fx::nn::MaxPool({2, 2})(x);                         // (8, 6, 14, 14)
//   fx::Tensor b = fx::nn::MeanPool({3, 3}, {.stride = {1}, .padding = {1}})(x);  // (8, 6, 28, 28)
//   fx::Tensor c = fx::nn::AdaptiveMeanPool({5, 5})(x);                // (8, 6, 5, 5)
//   fx::Tensor d = fx::nn::GlobalMaxPool()(x);                         // (8, 6, 1, 1)
//
// The layers hold no parameters. The kernel's length is the number of spatial axes; stride
// defaults to the kernel (Flux and PyTorch). Adaptive pooling uses PyTorch's windows, output
// index j along an axis of size I covering [floor(j I / O), ceil((j + 1) I / O)); when O divides
// I they are the plain pooling with kernel = stride = I / O, which then runs as one primitive.
// Every layer differentiates to any order.
#pragma once
#include <cstdint>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/ops/pool.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

struct PoolOptions {
  std::vector<int64_t> stride = {};  // default: the kernel
  std::vector<int64_t> padding = {};
  std::vector<int64_t> padding_hi = {};
  bool count_include_pad = true;  // MeanPool: divide by the whole window (PyTorch's default)
};

namespace pool_layer {

inline void check_input(const char* layer, const Tensor& x, size_t nd) {
  FX_CHECK(x.defined() && x.ndim() == int64_t(nd) + 2, layer, ": input ",
           x.defined() ? x.shape().to_string() : "undefined", " must be (N, C, ...) with ", nd,
           " spatial axes");
}

inline PoolGeometry geometry(const std::vector<int64_t>& kernel, const PoolOptions& o) {
  return {kernel, o.stride, o.padding, o.padding_hi, o.count_include_pad};
}

// Adaptive pooling along one axis: each output's window reduced by `max` or the mean.
inline Tensor adaptive_axis(const Tensor& x, int64_t axis, int64_t out, bool max) {
  const int64_t in = x.shape()[axis];
  std::vector<Tensor> parts;
  parts.reserve(size_t(out));
  for (int64_t j = 0; j < out; ++j) {
    const int64_t lo = j * in / out, hi = ((j + 1) * in + out - 1) / out;
    const Tensor w = slice(x, axis, lo, hi);
    parts.push_back(max ? fx::max(w, {axis}, true) : mean(w, {axis}, true));
  }
  return concat(parts, axis);
}

inline Tensor adaptive(const char* layer, const Tensor& x, const std::vector<int64_t>& out,
                       bool max) {
  check_input(layer, x, out.size());
  bool divides = true;
  std::vector<int64_t> k(out.size());
  for (size_t a = 0; a < out.size(); ++a) {
    const int64_t in = x.shape()[2 + int64_t(a)];
    FX_CHECK(out[a] >= 1 && out[a] <= in, layer, ": output size ", out[a],
             " must be between 1 and the input's ", in, " (input ", x.shape(), ")");
    divides = divides && in % out[a] == 0;
    k[a] = in / out[a];
  }
  if (divides) {
    const PoolGeometry g{.kernel = k};
    return max ? max_pool(x, g) : avg_pool(x, g);
  }
  Tensor y = x;
  for (size_t a = 0; a < out.size(); ++a) y = adaptive_axis(y, 2 + int64_t(a), out[a], max);
  return y;
}

inline Axes spatial_axes(const char* layer, const Tensor& x) {
  FX_CHECK(x.defined() && x.ndim() >= 3 && x.ndim() <= 5, layer, ": input ",
           x.defined() ? x.shape().to_string() : "undefined",
           " must be (N, C, ...) with 1 to 3 spatial axes");
  return x.ndim() == 3 ? Axes{2} : x.ndim() == 4 ? Axes{2, 3} : Axes{2, 3, 4};
}

}  // namespace pool_layer

struct MaxPool {
  std::vector<int64_t> kernel;
  PoolOptions options;
  FX_FIELDS()           // no parameters: the hyperparameters are not walked
  MaxPool() = default;  // an empty slot (the traversal's copies); not callable
  explicit MaxPool(std::vector<int64_t> kernel, PoolOptions o = {})
      : kernel(std::move(kernel)), options(std::move(o)) {}
  Tensor operator()(const Tensor& x) const {
    pool_layer::check_input("fx::nn::MaxPool", x, kernel.size());
    (void)pool_output_shape("fx::nn::MaxPool", x.shape(), pool_layer::geometry(kernel, options));
    return max_pool(x, pool_layer::geometry(kernel, options));
  }
};

struct MeanPool {
  std::vector<int64_t> kernel;
  PoolOptions options;
  FX_FIELDS()            // no parameters: the hyperparameters are not walked
  MeanPool() = default;  // an empty slot (the traversal's copies); not callable
  explicit MeanPool(std::vector<int64_t> kernel, PoolOptions o = {})
      : kernel(std::move(kernel)), options(std::move(o)) {}
  Tensor operator()(const Tensor& x) const {
    pool_layer::check_input("fx::nn::MeanPool", x, kernel.size());
    (void)pool_output_shape("fx::nn::MeanPool", x.shape(), pool_layer::geometry(kernel, options));
    return avg_pool(x, pool_layer::geometry(kernel, options));
  }
};

struct AdaptiveMaxPool {
  std::vector<int64_t> out;     // the output's spatial size
  FX_FIELDS()                   // no parameters: the hyperparameters are not walked
  AdaptiveMaxPool() = default;  // an empty slot (the traversal's copies); not callable
  explicit AdaptiveMaxPool(std::vector<int64_t> out) : out(std::move(out)) {}
  Tensor operator()(const Tensor& x) const {
    return pool_layer::adaptive("fx::nn::AdaptiveMaxPool", x, out, true);
  }
};

struct AdaptiveMeanPool {
  std::vector<int64_t> out;
  FX_FIELDS()                    // no parameters: the hyperparameters are not walked
  AdaptiveMeanPool() = default;  // an empty slot (the traversal's copies); not callable
  explicit AdaptiveMeanPool(std::vector<int64_t> out) : out(std::move(out)) {}
  Tensor operator()(const Tensor& x) const {
    return pool_layer::adaptive("fx::nn::AdaptiveMeanPool", x, out, false);
  }
};

// Over all spatial axes, keeping them with size 1: (N, C, H, W) -> (N, C, 1, 1), as Flux.
struct GlobalMaxPool {
  Tensor operator()(const Tensor& x) const {
    return fx::max(x, pool_layer::spatial_axes("fx::nn::GlobalMaxPool", x), true);
  }
};

struct GlobalMeanPool {
  Tensor operator()(const Tensor& x) const {
    return mean(x, pool_layer::spatial_axes("fx::nn::GlobalMeanPool", x), true);
  }
};

}  // namespace fx::nn
