// Optimisation rules with Optimisers.jl's setup/update interface, schedules and destructure.
//
//   #include <fluxion/optim.hpp>
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 32, fx::relu), fx::nn::Dense(32, 10));
//   fx::Tensor x = fx::randn({64, 784}), y = fx::zeros({64}, fx::i64);
//   auto opt = fx::optim::setup(fx::optim::Adam{.lr = 1e-3}, model);
//   auto [loss, grad] = fx::withgradient(
//       [&](const auto& m) { return fx::logitcrossentropy(m(x), y); }, model);
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
