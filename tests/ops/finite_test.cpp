// Values of the finiteness predicates (isnan, isinf, isfinite) and of any / all, on real,
// complex, integer and bool tensors, over axes and with keepdim; the rows in elementwise_test,
// reduce_test and complex_test compare the backends on many more shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>
#include <vector>

namespace {

using fx::Tensor;

std::vector<bool> bools(const Tensor& t) {
  EXPECT_EQ(t.dtype(), fx::boolean);
  std::vector<bool> out;
  for (double v : fx::to_vector<double>(t)) out.push_back(v != 0);
  return out;
}

using B = std::vector<bool>;

TEST(Finite, PredicatesOnRealTensors) {
  for (fx::DType t : {fx::f32, fx::f64}) {
    Tensor x = fx::astype(fx::tensor({1.0, NAN, INFINITY, -INFINITY, 0.0, -2.5}, fx::f64), t);
    EXPECT_EQ(bools(fx::isnan(x)), (B{false, true, false, false, false, false}));
    EXPECT_EQ(bools(fx::isinf(x)), (B{false, false, true, true, false, false}));
    EXPECT_EQ(bools(fx::isfinite(x)), (B{true, false, false, false, true, true}));
    EXPECT_EQ(fx::isnan(x).shape(), x.shape());
  }
  // Strided input: the transpose of a (2, 3) matrix.
  Tensor m = fx::tensor({0, NAN, 2, INFINITY, 4, 5}, fx::f64).reshape({2, 3});
  EXPECT_EQ(bools(fx::isfinite(fx::transpose(m))), (B{true, false, false, true, true, true}));
}

TEST(Finite, LogOfNegativeIsNanAndLogOfZeroIsInf) {
  Tensor y = fx::log(fx::tensor({-1.0, 0.0, 1.0}, fx::f64));
  EXPECT_EQ(bools(fx::isnan(y)), (B{true, false, false}));
  EXPECT_EQ(bools(fx::isinf(y)), (B{false, true, false}));
}

TEST(Finite, ComplexIsNanOrInfWhenEitherPartIs) {
  Tensor re = fx::tensor({1, NAN, 1, INFINITY, INFINITY, 0}, fx::f64);
  Tensor im = fx::tensor({2, 0, NAN, 0, NAN, -INFINITY}, fx::f64);
  for (fx::DType t : {fx::c64, fx::c128}) {
    Tensor z = fx::astype(fx::complex(re, im), t);
    EXPECT_EQ(bools(fx::isnan(z)), (B{false, true, true, false, true, false}));
    EXPECT_EQ(bools(fx::isinf(z)), (B{false, false, false, true, true, true}));
    EXPECT_EQ(bools(fx::isfinite(z)), (B{true, false, false, false, false, false}));
  }
}

TEST(Finite, IntegerAndBoolTensorsAreAlwaysFinite) {
  for (fx::DType t : {fx::i32, fx::i64, fx::boolean}) {
    Tensor x = fx::astype(fx::tensor({0, 1, 1}), t);
    EXPECT_EQ(bools(fx::isnan(x)), (B{false, false, false}));
    EXPECT_EQ(bools(fx::isinf(x)), (B{false, false, false}));
    EXPECT_EQ(bools(fx::isfinite(x)), (B{true, true, true}));
  }
}

TEST(Finite, AnyAndAllOverAxesWithKeepdim) {
  // [[0 1 0]
  //  [0 1 1]]
  Tensor m = fx::astype(fx::tensor({0, 1, 0, 0, 1, 1}).reshape({2, 3}), fx::boolean);
  EXPECT_EQ(bools(fx::any(m)), (B{true}));
  EXPECT_EQ(bools(fx::all(m)), (B{false}));
  EXPECT_EQ(fx::any(m).ndim(), 0);
  EXPECT_EQ(bools(fx::any(m, 0)), (B{false, true, true}));
  EXPECT_EQ(bools(fx::all(m, 0)), (B{false, true, false}));
  EXPECT_EQ(bools(fx::any(m, -1)), (B{true, true}));
  EXPECT_EQ(bools(fx::all(m, 1)), (B{false, false}));
  EXPECT_EQ(fx::all(m, 1, /*keepdim=*/true).shape(), (fx::Shape{2, 1}));
  EXPECT_EQ(fx::any(m, {0, 1}, true).shape(), (fx::Shape{1, 1}));
  EXPECT_TRUE(fx::all(fx::ones({2, 2})).item<bool>());
}

TEST(Finite, AnyAndAllReadNumbersAsNonZeroWithNanTrue) {
  Tensor x = fx::tensor({0.0, NAN, 0.0}, fx::f64);
  EXPECT_TRUE(fx::any(x).item<bool>());
  EXPECT_FALSE(fx::all(x).item<bool>());
  EXPECT_TRUE(fx::all(fx::tensor({NAN, -1.0})).item<bool>());
  EXPECT_FALSE(fx::any(fx::zeros({5}, fx::i32)).item<bool>());
  Tensor z = fx::complex(fx::tensor({0.0, 0.0}, fx::f64), fx::tensor({0.0, 2.0}, fx::f64));
  EXPECT_EQ(bools(fx::any(z.reshape({2, 1}), 1)), (B{false, true}));
}

TEST(Finite, AnyOfNothingIsFalseAndAllOfNothingIsTrue) {
  Tensor e = fx::zeros({0, 3});
  EXPECT_FALSE(fx::any(e).item<bool>());
  EXPECT_TRUE(fx::all(e).item<bool>());
  EXPECT_EQ(bools(fx::all(e, 0)), (B{true, true, true}));
  EXPECT_EQ(fx::any(e, 1).shape(), (fx::Shape{0}));
}

TEST(Finite, PredicatesAreNotDifferentiatedButDoNotBreakAGradient) {
  // A loss that masks non-finite terms out: the predicate's output is a constant.
  Tensor x = fx::tensor({1.0, -1.0, 4.0}, fx::f64);
  Tensor g = fx::gradient(
      [](const Tensor& x) {
        Tensor y = fx::log(x);
        return fx::sum(fx::where(fx::isfinite(y), y, 0.0));
      },
      x);
  auto gv = fx::to_vector<double>(g);
  EXPECT_DOUBLE_EQ(gv[0], 1.0);
  EXPECT_DOUBLE_EQ(gv[1], 0.0);
  EXPECT_DOUBLE_EQ(gv[2], 0.25);
}

TEST(Finite, BadArgumentsNameTheOp) {
  auto message = [](auto f) {
    try {
      f();
    } catch (const fx::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { (void)fx::isnan(Tensor()); }).find("fx::isnan: undefined"),
            std::string::npos);
  std::string axis = message([] { (void)fx::any(fx::zeros({2, 3}), 2); });
  EXPECT_NE(axis.find("fx::any"), std::string::npos) << axis;
  EXPECT_NE(axis.find("(2, 3)"), std::string::npos) << axis;
  EXPECT_NE(message([] {
              (void)fx::all(fx::zeros({2}), {0, 0});
            }).find("given twice"),
            std::string::npos);
}

}  // namespace
