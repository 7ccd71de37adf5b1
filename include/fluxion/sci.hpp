// Scientific machine learning: differentiable ODE and SDE solvers and L-BFGS.
//
//   auto f = [](const fx::Tensor& u, const fx::Tensor& k, double) { return -k * u; };
//   auto us = fx::sci::solve_ode(f, fx::ones({3}, fx::f64), fx::scalar(0.5, fx::f64), {0.0, 1.0});
//   // us[1] = exp(-0.5) per element; see each header for gradients and options.
#pragma once
#include "fluxion/sci/flat.hpp"
#include "fluxion/sci/lbfgs.hpp"
#include "fluxion/sci/ode.hpp"
#include "fluxion/sci/sde.hpp"
