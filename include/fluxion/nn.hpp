// Layers, activations, losses, initialisers and structural traversal.
//
//   #include <fluxion/nn.hpp>
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 256, fx::relu), fx::nn::Dense(256, 10));
//   fx::Tensor x = fx::randn({32, 784}), labels = fx::zeros({32}, fx::i64);
//   auto loss = fx::logitcrossentropy(model(x), labels);
#pragma once
#include "fluxion/nn/activations.hpp"
#include "fluxion/nn/chain.hpp"
#include "fluxion/nn/dense.hpp"
#include "fluxion/nn/functors.hpp"
#include "fluxion/nn/init.hpp"
#include "fluxion/nn/losses.hpp"
#include "fluxion/nn/outputsize.hpp"
#include "fluxion/nn/scale.hpp"
#include "fluxion/nn/show.hpp"
