// Everything a user of fluxion needs, in one include: tensors and ops, automatic
// differentiation, layers, optimisers, data loading and training helpers.
//
//   #include <fluxion/fluxion.hpp>
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 256, fx::relu), fx::nn::Dense(256, 10));
//   fx::Tensor x = fx::randn({32, 784}), y = fx::zeros({32}, fx::i64);
//   auto opt = fx::optim::setup(fx::optim::Adam(1e-3), model);
//   auto [loss, grad] = fx::withgradient(
//       [&](const auto& m) { return fx::logitcrossentropy(m(x), y); }, model);
//   fx::optim::update(opt, model, grad);
//
// Library code should include the narrower headers it uses (compile time matters).
#pragma once
// Every public header, so that `#include <fluxion/fluxion.hpp>` gives all of fluxion:
// scripts/check_headers.sh fails when a header under include/fluxion is not reachable from here.
#include "fluxion/ad/anomaly.hpp"
#include "fluxion/ad/checkpoint.hpp"
#include "fluxion/ad/complex_scalar.hpp"
#include "fluxion/ad/control.hpp"
#include "fluxion/ad/custom.hpp"
#include "fluxion/ad/dual.hpp"
#include "fluxion/ad/forward.hpp"
#include "fluxion/ad/preaccumulate.hpp"
#include "fluxion/ad/reverse.hpp"
#include "fluxion/ad/scalar.hpp"
#include "fluxion/ad/scalar_derivatives.hpp"
#include "fluxion/ad/scalar_reduce.hpp"
#include "fluxion/ad/tape.hpp"
#include "fluxion/ad/trace.hpp"
#include "fluxion/ad/vmap.hpp"
#include "fluxion/core/dtype.hpp"
#include "fluxion/core/error.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/core/shape.hpp"
#include "fluxion/core/storage.hpp"
#include "fluxion/core/tensor.hpp"
#include "fluxion/data/adbench.hpp"
#include "fluxion/data/dataloader.hpp"
#include "fluxion/data/dataset.hpp"
#include "fluxion/data/idx.hpp"
#include "fluxion/io/atomic_file.hpp"
#include "fluxion/io/save.hpp"
#include "fluxion/linalg.hpp"
#include "fluxion/nn.hpp"   // every header of fluxion/nn/
#include "fluxion/ops.hpp"  // every header of fluxion/ops/
#include "fluxion/ops/primitives.hpp"
#include "fluxion/optim.hpp"    // every header of fluxion/optim/
#include "fluxion/sci.hpp"      // every header of fluxion/sci/
#include "fluxion/testing.hpp"  // gradcheck, backend scopes, test helpers
#include "fluxion/train/checkpoint.hpp"
#include "fluxion/train/data_parallel.hpp"
#include "fluxion/train/fit.hpp"
#include "fluxion/train/metrics.hpp"
#include "fluxion/train/plot.hpp"
#include "fluxion/train/progress.hpp"
// fx::Real as an Eigen scalar, when Eigen is on the include path (-I/usr/include/eigen3).
#if __has_include(<Eigen/Core>)
#include "fluxion/ad/eigen.hpp"
#endif
