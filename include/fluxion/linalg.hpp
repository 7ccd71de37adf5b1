// fx::linalg: solves, factorisations and spectra with gradients (see fluxion/ops/linalg_lapack.hpp).
//
//   #include <fluxion/linalg.hpp>
//   fx::Tensor x = fx::linalg::solve(a, b);
//   auto [w, v] = fx::linalg::eigh(a);
#pragma once
#include "fluxion/ops/linalg_lapack.hpp"
