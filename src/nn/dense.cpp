// Dense: construction checks and the forward pass.
#include "fluxion/nn/dense.hpp"

#include <optional>

#include "fluxion/nn/init.hpp"
#include "fluxion/nn/show.hpp"
#include "fluxion/ops/linalg.hpp"

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

// Flux's form: sizes as in => out, the activation unless identity, "; bias=false" without one.
std::string Dense::fx_describe() const {
  if (!weight.defined()) return "Dense()";
  std::string s =
      "Dense(" + std::to_string(in_features()) + " => " + std::to_string(out_features());
  if (act != static_cast<Activation>(identity)) {
    std::string_view name = activation_name(act);
    s += ", " + (name.empty() ? std::string("<function>") : std::string(name));
  }
  return s + (bias.defined() ? ")" : "; bias=false)");
}

namespace {

// The epilogue fx::linear fuses for an activation, if it has one: the layer's affine map and its
// nonlinearity then run as one primitive (see fx::linear), with the same values.
std::optional<Epilogue> epilogue_of(Activation act) {
  if (act == static_cast<Activation>(identity)) return Epilogue::identity;
  if (act == static_cast<Activation>(relu)) return Epilogue::relu;
  if (act == static_cast<Activation>(tanh)) return Epilogue::tanh;
  if (act == static_cast<Activation>(sigmoid)) return Epilogue::sigmoid;
  return std::nullopt;
}

}  // namespace

// x @ W^T + b: the product comes out dense in the (N, out) layout that the activation reads, and
// W's gradient comes out dense in W's own (out, in) layout, where the optimiser reads it in place.
Tensor Dense::operator()(const Tensor& x) const {
  FX_CHECK(weight.defined(), "fx::nn::Dense: called without a weight (default-constructed)");
  FX_CHECK(x.defined(), "fx::nn::Dense: undefined input");
  FX_CHECK(x.ndim() >= 1 && x.size(-1) == weight.size(1), "fx::nn::Dense: input ", x.shape(),
           " does not fit weight ", weight.shape(), ": the last dimension must be ",
           weight.size(1));
  if (auto e = epilogue_of(act)) return linear(x, weight, bias, *e);
  return act(linear(x, weight, bias));
}

}  // namespace fx::nn
