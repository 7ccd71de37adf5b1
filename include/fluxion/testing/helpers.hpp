// Small helpers for tests: seeded random tensors and checking error messages.
//
//   #include <gtest/gtest.h>
//   auto x = fx::testing::randn({4, 8}, {.seed = 2});
//   EXPECT_TRUE(fx::testing::throws_mentioning([] { fx::zeros({2}) + fx::zeros({3}); },
//                                              {"add", "(2,)", "(3,)"}));
#pragma once
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/ops/create.hpp"

namespace fx::testing {

struct RandomOptions {
  uint64_t seed = 0;
  DType dtype = f64;
  double lo = -1, hi = 1;  // for uniform
};
inline Tensor randn(const Shape& s, RandomOptions o = {}) {
  Generator g(o.seed);
  return fx::randn(s, g, o.dtype);
}
inline Tensor uniform(const Shape& s, RandomOptions o = {}) {
  Generator g(o.seed);
  return fx::uniform(s, o.lo, o.hi, g, o.dtype);
}

// True when fn throws fx::Error whose message contains every one of `parts`.
template <class Parts>
bool throws_mentioning_all(const std::function<void()>& fn, const Parts& parts,
                           std::string* message) {
  try {
    fn();
  } catch (const fx::Error& e) {
    std::string m = e.what();
    if (message) *message = m;
    for (const auto& p : parts)
      if (m.find(p) == std::string::npos) return false;
    return true;
  }
  if (message) *message = "(no fx::Error thrown)";
  return false;
}
inline bool throws_mentioning(const std::function<void()>& fn,
                              std::initializer_list<std::string> parts,
                              std::string* message = nullptr) {
  return throws_mentioning_all(fn, parts, message);
}
inline bool throws_mentioning(const std::function<void()>& fn,
                              const std::vector<std::string>& parts,
                              std::string* message = nullptr) {
  return throws_mentioning_all(fn, parts, message);
}

}  // namespace fx::testing
