// Every public op: creation, elementwise, reductions, views, matmul, indexing.
//
//   #include <fluxion/ops.hpp>
//   fx::Tensor x = fx::randn({32, 8}), w = fx::randn({4, 8}), b = fx::zeros({4});
//   auto y = fx::sum(fx::tanh(fx::matmul(x, w.t()) + b), {1});
#pragma once
#include "fluxion/ops/complex.hpp"
#include "fluxion/ops/conv.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/device.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/fft.hpp"
#include "fluxion/ops/index.hpp"
#include "fluxion/ops/inplace.hpp"
#include "fluxion/ops/linalg.hpp"
#include "fluxion/ops/pool.hpp"
#include "fluxion/ops/primitive.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"
