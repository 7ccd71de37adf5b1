// Test helpers for fluxion and for users' own layers and rules: gradcheck, seeded tensors,
// error-message checks, and a scope that pins dispatch to the reference backend.
//
//   #include <fluxion/testing.hpp>
//   #include <gtest/gtest.h>
//   auto loss = [](const auto& m, const fx::Tensor& x) { return fx::sum(fx::tanh(m(x))); };
//   auto model = fx::nn::Dense(3, 2);
//   fx::Tensor x = fx::randn({4, 3});
//   EXPECT_TRUE(fx::testing::gradcheck(loss, model, x));
#pragma once
#include "fluxion/testing/backends.hpp"
#include "fluxion/testing/gradcheck.hpp"
#include "fluxion/testing/helpers.hpp"
