// fx::Real as an Eigen scalar: Eigen's dense matrices, decompositions and matrix functions,
// unmodified, run on fx::Real and are differentiated by fx::gradient like any generic code.
//
//   #include <Eigen/Dense>
//   #include <fluxion/ad/eigen.hpp>
//   auto f = [](const auto& p) {
//     using T = std::decay_t<decltype(p[0])>;
//     Eigen::Matrix<T, 2, 2> A;
//     A << p[0], p[1], p[2], p[3];
//     Eigen::Matrix<T, 2, 1> b(T(1), T(2));
//     Eigen::Matrix<T, 2, 1> x = A.partialPivLu().solve(b);   // LU with partial pivoting
//     return x.squaredNorm();
//   };
//   std::vector<double> g = fx::gradient(f, std::vector<double>{3, 1, 1, 2});
//
// This header only tells Eigen what fx::Real is (NumTraits: a real, non-integer type with
// double's precision, and the cost of its operations) and how Eigen's own functions reach
// fluxion's (Eigen calls numext::... through argument-dependent lookup for custom types).
// Pivoting, convergence tests and other branches compare values, as with double: the gradient
// is that of the branch taken.
#pragma once
#include <Eigen/Core>
#include <limits>

#include "fluxion/ad/scalar.hpp"

namespace Eigen {

template <>
struct NumTraits<fx::Real> : NumTraits<double> {
  using Real = fx::Real;
  using NonInteger = fx::Real;
  using Nested = fx::Real;
  using Literal = double;
  enum {
    IsComplex = 0,
    IsInteger = 0,
    IsSigned = 1,
    RequireInitialization = 1,  // a Real's tape word must be set: no uninitialised Reals
    ReadCost = 1,
    AddCost = 3,
    MulCost = 3
  };
  static fx::Real epsilon() { return std::numeric_limits<double>::epsilon(); }
  static fx::Real dummy_precision() { return 1e-12; }
  static fx::Real highest() { return std::numeric_limits<double>::max(); }
  static fx::Real lowest() { return std::numeric_limits<double>::lowest(); }
  static int digits10() { return std::numeric_limits<double>::digits10; }
};

// Mixed products with double (Eigen's scalar_product_op needs to know the result type).
template <typename BinaryOp>
struct ScalarBinaryOpTraits<fx::Real, double, BinaryOp> {
  using ReturnType = fx::Real;
};
template <typename BinaryOp>
struct ScalarBinaryOpTraits<double, fx::Real, BinaryOp> {
  using ReturnType = fx::Real;
};

}  // namespace Eigen
