// A model's trainable parameters as one flat vector, and back: for optimisers and solvers that
// work on vectors (L-BFGS, ODE solvers).
//
//   auto model = fx::nn::Chain(fx::nn::Dense(3, 16, fx::tanh), fx::nn::Dense(16, 1));
//   fx::Tensor x = fx::randn({32, 3}), y = fx::randn({32, 1});
//   auto [flat, rebuild] = fx::optim::destructure(model);   // flat: (n,) f32, or f64 if any is
//   auto loss = [&](const fx::Tensor& v) { return fx::sum(fx::square(rebuild(v)(x) - y)); };
//   fx::Tensor g = fx::gradient(loss, flat);                  // (n,), through rebuild
//   model = rebuild(flat - 0.1 * g);                          // a model of the same type
//
// flat concatenates the trainable leaves (fx::trainables order) flattened row-major; its dtype
// is f64 if any trainable leaf is f64, else f32. rebuild(v) is a copy of the model with each
// trainable leaf replaced by its slice of v, reshaped and converted to the leaf's dtype: views
// and casts, so reverse and forward mode see through it and the gradient with respect to v is
// the structural gradient, flattened the same way. Non-trainable leaves (FX_STATE fields,
// integer tensors) and non-tensor members are copied from the model given to destructure.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "fluxion/core/fields.hpp"
#include "fluxion/nn/functors.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::optim {

// Turns a flat vector back into a model like the one destructure was given.
template <class M>
class Restructure {
 public:
  Restructure(M model, std::vector<Shape> shapes, std::vector<DType> dtypes, int64_t length)
      : model_(std::move(model)),
        shapes_(std::move(shapes)),
        dtypes_(std::move(dtypes)),
        length_(length) {}

  M operator()(const Tensor& flat) const {
    FX_CHECK(
        flat.defined() && flat.ndim() == 1 && flat.numel() == length_ && is_floating(flat.dtype()),
        "fx::optim::destructure: rebuild needs a floating (", length_, ",) vector, got ",
        flat.defined() ? std::string(dtype_name(flat.dtype())) + " " + flat.shape().to_string()
                       : std::string("undefined"));
    M out = model_;
    size_t k = 0;
    int64_t offset = 0;
    for_each_tensor(out, [&](Tensor& t) {
      if (!nn::is_trainable(t)) return;
      const int64_t n = t.numel();
      Tensor part = reshape(slice(flat, 0, offset, offset + n), shapes_[k]);
      t = part.dtype() == dtypes_[k] ? part : part.astype(dtypes_[k]);
      offset += n;
      ++k;
    });
    return out;
  }
  int64_t length() const { return length_; }

 private:
  M model_;
  std::vector<Shape> shapes_;
  std::vector<DType> dtypes_;
  int64_t length_;
};

template <class M>
std::pair<Tensor, Restructure<M>> destructure(const M& model) {
  std::vector<Tensor> parts;
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  int64_t length = 0;
  bool any_f64 = false;
  for_each_tensor(model, [&](const Tensor& t) {
    if (!nn::is_trainable(t)) return;
    parts.push_back(t);
    shapes.push_back(t.shape());
    dtypes.push_back(t.dtype());
    length += t.numel();
    any_f64 = any_f64 || t.dtype() == f64;
  });
  const DType dtype = any_f64 ? f64 : f32;
  for (Tensor& p : parts) p = reshape(p.dtype() == dtype ? p : p.astype(dtype), {-1});
  Tensor flat = parts.empty() ? zeros({0}, dtype) : concat(parts, 0);
  return {std::move(flat), Restructure<M>(model, std::move(shapes), std::move(dtypes), length)};
}

}  // namespace fx::optim
