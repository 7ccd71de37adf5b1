// Small helpers shared by the AD tests: f64 literals and elementwise comparison.
#pragma once
#include <gtest/gtest.h>

#include <initializer_list>
#include <vector>

#include <fluxion/ops.hpp>

namespace fx::ad_test {

inline std::vector<double> vec(const Tensor& t) { return to_vector<double>(t); }

inline void expect_near(const Tensor& got, const std::vector<double>& want, double tol = 1e-12) {
  auto g = vec(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << "element " << i;
}

inline Tensor f64(std::initializer_list<double> v) { return tensor(v, fx::f64); }

}  // namespace fx::ad_test
