// Initialisers: scaled draws from fx::uniform / fx::randn; truncated_normal through erfinv,
// orthogonal through fx::linalg::qr, sparse_init's zero pattern on the host from the same
// generator.
#include "fluxion/nn/init.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg_lapack.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

Fans fans(const Shape& shape) {
  if (shape.size() == 0) return {1, 1};
  if (shape.size() == 1) return {1, shape[0]};
  int64_t receptive = 1;
  for (int d = 2; d < shape.size(); ++d) receptive *= shape[d];
  return {shape[1] * receptive, shape[0] * receptive};
}

Tensor glorot_uniform(const Shape& shape, Generator& gen, double gain, DType dtype) {
  if (shape.numel() == 0) return empty(shape, dtype);  // nothing to draw, and a fan may be 0
  Fans f = fans(shape);
  double bound = gain * std::sqrt(6.0 / double(f.in + f.out));
  return uniform(shape, -bound, bound, gen, dtype);
}
Tensor glorot_normal(const Shape& shape, Generator& gen, double gain, DType dtype) {
  if (shape.numel() == 0) return empty(shape, dtype);  // nothing to draw
  Fans f = fans(shape);
  return randn(shape, gen, dtype) * (gain * std::sqrt(2.0 / double(f.in + f.out)));
}
Tensor kaiming_uniform(const Shape& shape, Generator& gen, double gain, DType dtype) {
  if (shape.numel() == 0) return empty(shape, dtype);  // nothing to draw
  Fans f = fans(shape);
  double bound = gain * std::sqrt(3.0 / double(f.in));
  return uniform(shape, -bound, bound, gen, dtype);
}
Tensor kaiming_normal(const Shape& shape, Generator& gen, double gain, DType dtype) {
  if (shape.numel() == 0) return empty(shape, dtype);  // nothing to draw
  Fans f = fans(shape);
  return randn(shape, gen, dtype) * (gain / std::sqrt(double(f.in)));
}
Tensor lecun_uniform(const Shape& shape, Generator& gen, double gain, DType dtype) {
  return kaiming_uniform(shape, gen, gain, dtype);  // the same bound, sqrt(3 / fan_in) scaled
}
Tensor lecun_normal(const Shape& shape, Generator& gen, double gain, DType dtype) {
  return kaiming_normal(shape, gen, gain, dtype);
}

Tensor truncated_normal(const Shape& shape, Generator& gen, TruncatedNormal o, DType dtype) {
  FX_CHECK(o.std > 0 && o.lo < o.hi,
           "fx::nn::truncated_normal: needs std > 0 and lo < hi, got std ", o.std, ", bounds [",
           o.lo, ", ", o.hi, "] for ", shape);
  if (shape.numel() == 0) return empty(shape, dtype);
  // erf(z / sqrt 2) is 2 Phi(z) - 1: draw it uniformly between the bounds' values, invert.
  const double a = std::erf((o.lo - o.mean) / (o.std * std::numbers::sqrt2));
  const double b = std::erf((o.hi - o.mean) / (o.std * std::numbers::sqrt2));
  Tensor z = erfinv(uniform(shape, a, b, gen, f64)) * (o.std * std::numbers::sqrt2) + o.mean;
  return astype(clamp(z, o.lo, o.hi), dtype);
}

Tensor orthogonal(const Shape& shape, Generator& gen, double gain, DType dtype) {
  FX_CHECK(shape.size() >= 2, "fx::nn::orthogonal: needs at least 2 dimensions, got ", shape);
  if (shape.numel() == 0) return empty(shape, dtype);
  const int64_t rows = shape[0], cols = shape.numel() / rows;
  // QR wants a tall matrix: draw it tall and transpose back when the target is wide.
  const bool wide = rows < cols;
  Tensor a = randn(wide ? Shape{cols, rows} : Shape{rows, cols}, gen, f64);
  auto [q, r] = linalg::qr(a);
  // Householder QR fixes Q only up to column signs; making R's diagonal positive picks the one
  // Q that is Haar-distributed (Mezzadri 2007).
  q = q * sign(linalg::diagonal(r));
  if (wide) q = transpose(q);
  return astype(reshape(contiguous(q), shape) * gain, dtype);
}

Tensor sparse_init(const Shape& shape, double sparsity, Generator& gen, double std, DType dtype) {
  FX_CHECK(shape.size() == 2, "fx::nn::sparse_init: only 2-d shapes are supported, got ", shape);
  FX_CHECK(sparsity >= 0 && sparsity <= 1, "fx::nn::sparse_init: sparsity must lie in [0, 1], got ",
           sparsity);
  const int64_t rows = shape[0], cols = shape[1];
  const auto zeros_per_col = int64_t(std::ceil(sparsity * double(rows)));
  std::vector<double> w = to_vector<double>(randn(shape, gen, f64) * std);
  std::vector<int64_t> perm(static_cast<size_t>(rows));
  for (int64_t j = 0; j < cols; ++j) {
    // A partial Fisher-Yates shuffle: its first zeros_per_col entries are a uniform choice.
    for (int64_t i = 0; i < rows; ++i) perm[i] = i;
    for (int64_t i = 0; i < zeros_per_col; ++i) {
      int64_t k = i + int64_t(gen.below(uint64_t(rows - i)));
      std::swap(perm[i], perm[k]);
      w[size_t(perm[i] * cols + j)] = 0;
    }
  }
  return astype(from_vector(w, shape), dtype);
}

Tensor identity_init(const Shape& shape, double gain, int64_t shift, DType dtype) {
  if (shape.size() <= 1) return zeros(shape, dtype);  // a bias
  std::vector<double> w(size_t(shape.numel()), 0.0);
  const int64_t out = shape[0], in = shape[1];
  int64_t kernel = 1, centre = 0;  // the offset of the kernel's centre in one (out, in) slice
  for (int d = 2; d < shape.size(); ++d) {
    kernel *= shape[d];
    centre = centre * shape[d] + (shape[d] - 1) / 2;
  }
  for (int64_t i = 0; i < std::min(out, in); ++i) {
    const int64_t o = out == 0 ? 0 : (((i + shift) % out) + out) % out;
    w[size_t((o * in + i) * kernel + centre)] = gain;
  }
  return astype(from_vector(w, shape), dtype);
}

Tensor glorot_uniform(const Shape& shape, double gain, DType dtype) {
  return glorot_uniform(shape, default_generator(), gain, dtype);
}
Tensor glorot_normal(const Shape& shape, double gain, DType dtype) {
  return glorot_normal(shape, default_generator(), gain, dtype);
}
Tensor kaiming_uniform(const Shape& shape, double gain, DType dtype) {
  return kaiming_uniform(shape, default_generator(), gain, dtype);
}
Tensor kaiming_normal(const Shape& shape, double gain, DType dtype) {
  return kaiming_normal(shape, default_generator(), gain, dtype);
}

Tensor lecun_uniform(const Shape& shape, double gain, DType dtype) {
  return lecun_uniform(shape, default_generator(), gain, dtype);
}
Tensor lecun_normal(const Shape& shape, double gain, DType dtype) {
  return lecun_normal(shape, default_generator(), gain, dtype);
}
Tensor truncated_normal(const Shape& shape, TruncatedNormal opts, DType dtype) {
  return truncated_normal(shape, default_generator(), opts, dtype);
}
Tensor orthogonal(const Shape& shape, double gain, DType dtype) {
  return orthogonal(shape, default_generator(), gain, dtype);
}
Tensor sparse_init(const Shape& shape, double sparsity, double std, DType dtype) {
  return sparse_init(shape, sparsity, default_generator(), std, dtype);
}

}  // namespace fx::nn
