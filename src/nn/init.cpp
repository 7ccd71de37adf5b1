// Initialisers: scaled draws from fx::uniform / fx::randn.
#include "fluxion/nn/init.hpp"

#include <cmath>

#include "fluxion/ops/elementwise.hpp"

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

}  // namespace fx::nn
