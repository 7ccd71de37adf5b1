// fx::linalg: solves, factorisations and spectra with gradients (see fluxion/ops/linalg_lapack.hpp).
//
//   #include <fluxion/linalg.hpp>
//   fx::Tensor a = fx::linalg::eye(3, fx::f64) * 2.0, b = fx::ones({3}, fx::f64);
//   fx::Tensor x = fx::linalg::solve(a, b);
//   auto [w, v] = fx::linalg::eigh(a);
#pragma once
#include "fluxion/ops/linalg_lapack.hpp"
