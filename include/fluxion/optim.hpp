// Optimisation rules with Optimisers.jl's setup/update interface, schedules and destructure.
//
//   #include <fluxion/optim.hpp>
//   auto opt = fx::optim::setup(fx::optim::Adam{.lr = 1e-3}, model);
//   fx::optim::update(opt, model, grad);
#pragma once
#include "fluxion/optim/adjust.hpp"
#include "fluxion/optim/by_name.hpp"
#include "fluxion/optim/destructure.hpp"
#include "fluxion/optim/elementwise.hpp"
#include "fluxion/optim/rules.hpp"
#include "fluxion/optim/schedules.hpp"
#include "fluxion/optim/transforms.hpp"
#include "fluxion/optim/update.hpp"
