// Dense: construction checks and the forward pass.
#include "fluxion/nn/dense.hpp"

#include "fluxion/nn/init.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn {

Dense::Dense(int64_t in, int64_t out, Activation act, bool bias)
    : Dense(in, out, act, default_generator(), bias) {}

Dense::Dense(int64_t in, int64_t out, Activation act, Generator& gen, bool bias) : act(act) {
  FX_CHECK(in >= 0 && out >= 0, "fx::nn::Dense: negative size (in ", in, ", out ", out, ")");
  FX_CHECK(act != nullptr, "fx::nn::Dense: null activation");
  weight = glorot_uniform({out, in}, gen);
  if (bias) this->bias = zeros({out});
}

Dense::Dense(Tensor w, Tensor b, Activation act)
    : weight(std::move(w)), bias(std::move(b)), act(act) {
  FX_CHECK(weight.defined() && weight.ndim() == 2,
           "fx::nn::Dense: weight must be 2-d (out, in), got ",
           weight.defined() ? weight.shape().to_string() : "undefined");
  FX_CHECK(!bias.defined() || bias.shape() == Shape{weight.size(0)}, "fx::nn::Dense: bias ",
           bias.defined() ? bias.shape().to_string() : "", " does not match weight ",
           weight.shape(), " (expected (", weight.size(0), ",))");
  FX_CHECK(act != nullptr, "fx::nn::Dense: null activation");
}

namespace {

// x @ W^T + b for 2-d x (N, in). The product comes out dense in the (N, out) layout that the
// bias, the activation and their backward passes read; matmul's pullback gives W^T's adjoint as
// the transpose of a dense (out, in) product, so dW is dense in W's own layout too. (The
// previous form, (W @ x^T)^T, left y transposed: every elementwise op after it read it through
// strides, 6x slower than dense, ~10% of a 784-256-128-10 MLP's training step.)
Tensor affine(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor y = matmul(x, transpose(w));
  return b.defined() ? y + b : y;
}

}  // namespace

Tensor Dense::operator()(const Tensor& x) const {
  FX_CHECK(weight.defined(), "fx::nn::Dense: called without a weight (default-constructed)");
  FX_CHECK(x.defined(), "fx::nn::Dense: undefined input");
  FX_CHECK(x.ndim() >= 1 && x.size(-1) == weight.size(1), "fx::nn::Dense: input ", x.shape(),
           " does not fit weight ", weight.shape(), ": the last dimension must be ",
           weight.size(1));
  if (x.ndim() == 2) return act(affine(x, weight, bias));
  // Other ranks fold their batch dimensions into one, so there is still a single GEMM and no
  // per-batch copy of W in the reverse pass.
  Shape out = x.shape();
  out[out.size() - 1] = weight.size(0);
  return act(reshape(affine(reshape(x, {-1, weight.size(1)}), weight, bias), out));
}

}  // namespace fx::nn
