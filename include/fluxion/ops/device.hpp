// Moving tensors and whole models between devices.
//
//   fx::Tensor x = fx::randn({32, 784});
//   fx::Tensor m = fx::to(x, fx::Device::meta);      // shape and dtype only, no data
//   auto model = fx::nn::Dense(784, 10);
//   auto shapes_only = fx::to(model, fx::Device::meta);  // every tensor of the struct moved
//
// A transfer between two devices that hold data goes through the backend of the device that is
// not the CPU (register_transfer); copying out of a meta tensor is an fx::Error (it has no data).
#pragma once
#include <type_traits>

#include "fluxion/core/fields.hpp"
#include "fluxion/core/tensor.hpp"

namespace fx {

// x on `device`: x itself when it is there already, otherwise a contiguous copy.
Tensor to(const Tensor& x, Device device);

// A copy of `model` (any struct the traversal knows) with every tensor on `device`: its
// FX_FIELDS and its FX_STATE (a running mean left behind would break the model's forward pass).
template <class M>
  requires(!std::is_same_v<std::decay_t<M>, Tensor>)
M to(const M& model, Device device) {
  M out = model;
  for_each_leaf(out, [&](Tensor& t) {
    if (t.defined()) t = to(t, device);
  });
  return out;
}

// Copies src into dst (same shape and dtype, dst dense); one of the two is on the backend's kind.
using TransferFn = void (*)(const Tensor& src, const Tensor& dst);
// Installs the transfer of a backend serving `kind` (not cpu or meta), used both ways.
void register_transfer(DeviceKind kind, TransferFn fn);

}  // namespace fx
