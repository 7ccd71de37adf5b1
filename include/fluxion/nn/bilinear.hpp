// Bilinear: y[n, k] = act(x1[n, :] W[k] x2[n, :] + b[k]) (PyTorch's Bilinear, Flux's Bilinear).
//
//   auto bl = fx::nn::Bilinear(5, 3, 4);             // W (4, 5, 3) ~ U(-1/sqrt(5), 1/sqrt(5))
//   fx::Tensor x1 = fx::randn({8, 5}), x2 = fx::randn({8, 3});
//   fx::Tensor y = bl(x1, x2);                        // (8, 4)
//   auto sq = fx::nn::Bilinear(5, 5, 2, fx::tanh);
//   fx::Tensor z = sq(x1);                            // one input: x1 W x1, as Flux
//
// x1 (N, in1) and x2 (N, in2) with the same N (leading batch axes beyond one are flattened and
// restored); an fx::Error names the layer and the shapes otherwise. Computed as one matrix
// product x1 (W permuted to (in1, out * in2)) and a row-wise product with x2.
#pragma once
#include <cmath>
#include <cstdint>

#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/nn/activations.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

struct Bilinear {
  Tensor weight;  // (out, in1, in2)
  Tensor bias;    // (out,), or undefined
  Activation act = identity;
  FX_FIELDS(weight, bias)

  Bilinear() = default;
  Bilinear(int64_t in1, int64_t in2, int64_t out, Activation act = identity, bool bias = true,
           DType dtype = f32)
      : Bilinear(in1, in2, out, act, default_generator(), bias, dtype) {}
  Bilinear(int64_t in1, int64_t in2, int64_t out, Activation act, Generator& gen, bool bias = true,
           DType dtype = f32)
      : weight(uniform({out, in1, in2}, -1 / std::sqrt(double(in1)), 1 / std::sqrt(double(in1)),
                       gen, dtype)),
        bias(bias ? uniform({out}, -1 / std::sqrt(double(in1)), 1 / std::sqrt(double(in1)), gen,
                            dtype)
                  : Tensor()),
        act(act) {}
  explicit Bilinear(Tensor weight, Tensor bias = {}, Activation act = identity)
      : weight(std::move(weight)), bias(std::move(bias)), act(act) {}

  Tensor operator()(const Tensor& x1, const Tensor& x2) const {
    const int64_t out = weight.shape()[0], in1 = weight.shape()[1], in2 = weight.shape()[2];
    const bool ok = x1.defined() && x2.defined() && x1.ndim() >= 1 && x2.ndim() == x1.ndim() &&
                    x1.shape()[x1.ndim() - 1] == in1 && x2.shape()[x2.ndim() - 1] == in2 &&
                    x1.numel() / in1 == x2.numel() / in2;
    FX_CHECK(ok, "fx::nn::Bilinear(", in1, ", ", in2, " => ", out, "): inputs ",
             x1.defined() ? x1.shape().to_string() : "undefined", " and ",
             x2.defined() ? x2.shape().to_string() : "undefined", " are not (N, ", in1,
             ") and (N, ", in2, ")");
    Tensor a = reshape(x1, {-1, in1}), b = reshape(x2, {-1, 1, in2});
    Tensor w = reshape(contiguous(permute(weight, {1, 0, 2})), {in1, out * in2});
    Tensor y = sum(reshape(matmul(a, w), {-1, out, in2}) * b, -1);  // (N, out)
    if (bias.defined()) y = y + bias;
    Shape s = x1.shape();
    s[s.size() - 1] = out;
    return act(reshape(y, s));
  }
  Tensor operator()(const Tensor& x) const { return (*this)(x, x); }
};

}  // namespace fx::nn
