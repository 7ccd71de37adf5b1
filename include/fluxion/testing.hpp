// Test helpers for fluxion and for users' own layers and rules: gradcheck, seeded tensors,
// error-message checks, and a scope that pins dispatch to the reference backend.
//
//   #include <fluxion/testing.hpp>
//   EXPECT_TRUE(fx::testing::gradcheck(loss, model, x));
#pragma once
#include "fluxion/testing/backends.hpp"
#include "fluxion/testing/gradcheck.hpp"
#include "fluxion/testing/helpers.hpp"
