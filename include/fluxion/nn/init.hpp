// Weight initialisers with the fan conventions of PyTorch and Flux, for a weight laid out
// (out, in, kernel...): fan_in = in * prod(kernel), fan_out = out * prod(kernel).
//
//   fx::Generator gen(42);
//   auto w = fx::nn::glorot_uniform({256, 784}, gen);       // U(-a, a), a = sqrt(6 / (in + out))
//   auto k = fx::nn::kaiming_normal({64, 3, 3, 3}, gen);     // N(0, 2 / fan_in), for relu nets
//   auto d = fx::nn::glorot_normal({10, 256}, 1.0, fx::f64); // the thread's default generator
//   auto l = fx::nn::lecun_normal({128, 64}, gen);           // N(0, 1 / fan_in), for selu nets
//   auto t = fx::nn::truncated_normal({64, 64}, gen, {.std = 0.02});  // redrawn outside +-2
//   auto q = fx::nn::orthogonal({128, 64}, gen);             // orthonormal columns (q^T q = I)
//   auto s = fx::nn::sparse_init({100, 20}, 0.9, gen);       // 90 zeros in every column
//   auto e = fx::nn::identity_init({16, 16, 3, 3});          // a conv that passes x through
//
// `gain` scales the spread as in both libraries (kaiming's default sqrt(2) suits relu). A 1-d
// shape (n,) counts as fan_in 1, fan_out n, and a 0-d shape as 1 and 1, as in Flux. Every random
// initialiser draws from the Generator given (or the thread's default), so a seed fixes it.
#pragma once
#include <cstdint>
#include <numbers>

#include "fluxion/core/tensor.hpp"
#include "fluxion/ops/create.hpp"

namespace fx::nn {

struct Fans {
  int64_t in = 1;
  int64_t out = 1;
};
Fans fans(const Shape& shape);

// U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)).
Tensor glorot_uniform(const Shape& shape, Generator& gen, double gain = 1.0, DType dtype = f32);
Tensor glorot_uniform(const Shape& shape, double gain = 1.0, DType dtype = f32);
// N(0, s^2) with s = gain * sqrt(2 / (fan_in + fan_out)).
Tensor glorot_normal(const Shape& shape, Generator& gen, double gain = 1.0, DType dtype = f32);
Tensor glorot_normal(const Shape& shape, double gain = 1.0, DType dtype = f32);
// U(-a, a) with a = gain * sqrt(3 / fan_in).
Tensor kaiming_uniform(const Shape& shape, Generator& gen, double gain = std::numbers::sqrt2,
                       DType dtype = f32);
Tensor kaiming_uniform(const Shape& shape, double gain = std::numbers::sqrt2, DType dtype = f32);
// N(0, s^2) with s = gain / sqrt(fan_in).
Tensor kaiming_normal(const Shape& shape, Generator& gen, double gain = std::numbers::sqrt2,
                      DType dtype = f32);
Tensor kaiming_normal(const Shape& shape, double gain = std::numbers::sqrt2, DType dtype = f32);

// U(-a, a) with a = gain * sqrt(3 / fan_in) (LeCun's scaling; kaiming_uniform with gain 1).
Tensor lecun_uniform(const Shape& shape, Generator& gen, double gain = 1.0, DType dtype = f32);
Tensor lecun_uniform(const Shape& shape, double gain = 1.0, DType dtype = f32);
// N(0, s^2) with s = gain / sqrt(fan_in).
Tensor lecun_normal(const Shape& shape, Generator& gen, double gain = 1.0, DType dtype = f32);
Tensor lecun_normal(const Shape& shape, double gain = 1.0, DType dtype = f32);

struct TruncatedNormal {
  double mean = 0, std = 1, lo = -2, hi = 2;  // the bounds are absolute, as in Flux and PyTorch
};
// N(mean, std^2) conditioned on [lo, hi], by inverting the normal CDF on a uniform draw over
// [Phi(lo), Phi(hi)] (Flux's method); values are then clamped to [lo, hi] against rounding.
Tensor truncated_normal(const Shape& shape, Generator& gen, TruncatedNormal opts = {},
                        DType dtype = f32);
Tensor truncated_normal(const Shape& shape, TruncatedNormal opts = {}, DType dtype = f32);

// A (semi-)orthogonal matrix (Saxe et al. 2014) times gain, as PyTorch's orthogonal_: the shape
// (rows, ...) is read as a rows x (numel / rows) matrix; its rows (rows <= cols) or columns are
// orthonormal. The Q of a normal matrix's QR, with R's diagonal made positive so that Q is
// uniformly (Haar) distributed. Needs at least 2 dimensions.
Tensor orthogonal(const Shape& shape, Generator& gen, double gain = 1.0, DType dtype = f32);
Tensor orthogonal(const Shape& shape, double gain = 1.0, DType dtype = f32);

// A 2-d (rows, cols) matrix of N(0, std^2) entries with ceil(sparsity * rows) zeros in each
// column, at random rows (Martens 2010; Flux's sparse_init, PyTorch's sparse_).
Tensor sparse_init(const Shape& shape, double sparsity, Generator& gen, double std = 0.01,
                   DType dtype = f32);
Tensor sparse_init(const Shape& shape, double sparsity, double std = 0.01, DType dtype = f32);

// The identity map, deterministic (no generator): a 1-d shape gives zeros (a bias); (out, in)
// gives gain on the diagonal; (out, in, k...) gives a convolution whose kernel centre is gain
// where out == in, so it passes its input through (odd kernel sizes, "same" padding). `shift`
// rolls the output axis circularly, as Flux's circshift of the output channels.
Tensor identity_init(const Shape& shape, double gain = 1.0, int64_t shift = 0, DType dtype = f32);

}  // namespace fx::nn
