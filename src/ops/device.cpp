// Device transfers: the meta device by construction, others through their backend's hook.
#include "fluxion/ops/device.hpp"

#include "fluxion/core/error.hpp"

namespace fx {
namespace {
TransferFn transfers[kNumDeviceKinds] = {};
}  // namespace

void register_transfer(DeviceKind kind, TransferFn fn) {
  FX_CHECK(kind != DeviceKind::cpu && kind != DeviceKind::meta,
           "fx::register_transfer: ", device_kind_name(kind), " needs no transfer");
  transfers[int(kind)] = fn;
}

Tensor to(const Tensor& x, Device device) {
  FX_CHECK(x.defined(), "fx::to: undefined tensor");
  const Device from = x.device();
  if (from == device) return x;
  if (!device.has_data()) return Tensor::empty(x.shape(), x.dtype(), device);
  if (!from.has_data())
    detail::fail("fx::to: cannot copy ", dtype_name(x.dtype()), " ", x.shape(), " from ",
                 device_name(from), " to ", device_name(device), ": a meta tensor has no data");
  const DeviceKind backend = from.kind != DeviceKind::cpu ? from.kind : device.kind;
  TransferFn fn = transfers[int(backend)];
  if (!fn)
    detail::fail("fx::to: no backend for ", device_name(backend == from.kind ? from : device),
                 " in this build (", dtype_name(x.dtype()), " ", x.shape(), " from ",
                 device_name(from), " to ", device_name(device), ")");
  Tensor out = Tensor::empty(x.shape(), x.dtype(), device);
  fn(x, out);
  return out;
}

}  // namespace fx
