// Anomaly mode (fx::detect_anomaly): the first primitive whose forward output, or whose
// pullback's cotangent, holds a NaN or an infinity throws fx::Error naming it.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <fluxion/ad/anomaly.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/train/data_parallel.hpp>
#include <string>
#include <thread>

namespace {

using fx::Tensor;

// The fx::Error message of f(), or "no error".
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const fx::Error& e) {
    return e.what();
  }
  return "no error";
}

void expect_has(const std::string& msg, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' in " << msg;
}

TEST(Anomaly, ForwardNanNamesTheOpItsShapesAndTheElement) {
  Tensor x = fx::tensor({1.0, -1.0, 2.0}, fx::f64);
  std::string msg = error_of([&] {
    fx::detect_anomaly anomaly;
    (void)fx::exp(fx::log(x * 2.0));
  });
  expect_has(msg, {"fx::detect_anomaly", "forward of 'log'", "NaN at (1,)", "output (3,) f64",
                   "inputs: 0: (3,) f64"});
  EXPECT_EQ(msg.find("holding"), std::string::npos) << "the input was finite: " << msg;
  // Off (the default), the same code runs and gives the NaN.
  EXPECT_TRUE(std::isnan(fx::to_vector<double>(fx::log(x))[1]));
}

TEST(Anomaly, ForwardInfFromOverflowAndFromLogOfZero) {
  std::string msg = error_of([] {
    fx::detect_anomaly anomaly;
    (void)fx::exp(fx::tensor({1.0f, 100.0f}).reshape({1, 2}));
  });
  expect_has(msg, {"forward of 'exp'", "Inf at (0, 1)", "(1, 2) f32"});
  msg = error_of([] {
    fx::detect_anomaly anomaly;
    (void)fx::log(fx::complex(fx::zeros({2}, fx::f64), fx::zeros({2}, fx::f64)));
  });
  expect_has(msg, {"forward of 'log'", "Inf at (0,)", "c128"});
}

TEST(Anomaly, AnInputThatAlreadyHoldsNanIsNamed) {
  Tensor x = fx::tensor({1.0, NAN}, fx::f64);
  std::string msg = error_of([&] {
    fx::detect_anomaly anomaly;
    (void)fx::tanh(x);
  });
  expect_has(msg, {"forward of 'tanh'", "0: (2,) f64 holding NaN at (1,)"});
}

TEST(Anomaly, BackwardInfCotangentNamesThePrimitiveBeingDifferentiated) {
  // sqrt is finite at 0, its derivative 1 / (2 sqrt(x)) is not.
  Tensor x = fx::tensor({0.0, 1.0, 4.0}, fx::f64);
  auto f = [](const Tensor& x) { return fx::sum(fx::sqrt(x) * 3.0); };
  std::string msg = error_of([&] {
    fx::detect_anomaly anomaly;
    (void)fx::gradient(f, x);
  });
  expect_has(msg, {"fx::detect_anomaly: backward", "pullback of 'sqrt'", "Inf at (0,)",
                   "cotangent of input 0 (3,) f64", "from a finite cotangent"});
  // Off, the gradient is computed with the infinity in it.
  EXPECT_TRUE(std::isinf(fx::to_vector<double>(fx::gradient(f, x))[0]));
}

TEST(Anomaly, BackwardNanFromAFiniteForward) {
  // d/dx of x^0.5 * 0 at x = 0: the forward is 0, the backward multiplies 0 by Inf.
  Tensor x = fx::tensor({0.0, 2.0}, fx::f64);
  std::string msg = error_of([&] {
    fx::detect_anomaly anomaly;
    (void)fx::gradient([](const Tensor& x) { return fx::sum(fx::pow(x, 0.5) * 0.0); }, x);
  });
  expect_has(msg, {"backward", "pullback of 'pow_scalar'", "NaN at (0,)"});
}

TEST(Anomaly, ASeedCotangentWithNanIsNamedBeforeAnyPullbackRuns) {
  Tensor x = fx::tensor({1.0, 2.0}, fx::f64);
  auto [y, back] = fx::pullback([](const Tensor& x) { return fx::tanh(x); }, x);
  std::string msg = error_of([&] {
    fx::detect_anomaly anomaly;
    (void)back(fx::tensor({0.0, NAN}, fx::f64));
  });
  expect_has(msg, {"cotangent of the output of 'tanh'", "(2,) f64", "NaN at (1,)",
                   "before its pullback ran"});
}

TEST(Anomaly, FiniteWorkRunsUnchangedUnderAnomalyMode) {
  Tensor x = fx::tensor({0.5, 1.0, 4.0}, fx::f64);
  auto f = [](const Tensor& x) { return fx::sum(fx::log(x) * fx::sqrt(x)); };
  Tensor plain = fx::gradient(f, x);
  fx::detect_anomaly anomaly;
  EXPECT_TRUE(fx::allclose(fx::gradient(f, x), plain, 0, 0));
}

TEST(Anomaly, ScopesNestAndRestoreAndArePerThread) {
  EXPECT_FALSE(fx::anomaly_detection_enabled());
  {
    fx::detect_anomaly on;
    EXPECT_TRUE(fx::anomaly_detection_enabled());
    {
      fx::detect_anomaly off(false);
      EXPECT_FALSE(fx::anomaly_detection_enabled());
      EXPECT_EQ(error_of([] { (void)fx::log(fx::tensor({-1.0})); }), "no error");
    }
    EXPECT_TRUE(fx::anomaly_detection_enabled());
    bool other_thread = true;
    std::thread([&] { other_thread = fx::anomaly_detection_enabled(); }).join();
    EXPECT_FALSE(other_thread);
  }
  EXPECT_FALSE(fx::anomaly_detection_enabled());
  // A throw inside the scope still restores the flag on the way out.
  EXPECT_NE(error_of([] {
              fx::detect_anomaly on;
              (void)fx::log(fx::tensor({-1.0}));
            }),
            "no error");
  EXPECT_FALSE(fx::anomaly_detection_enabled());
}

TEST(Anomaly, ReachesTheThreadsOfDataParallelTraining) {
  // Only the last row's logit is negative, so only the second share (thread 1) makes the NaN.
  fx::Generator gen(1);
  auto model = fx::nn::Dense(1, 1, fx::identity, gen);
  model.weight = fx::ones({1, 1});
  model.bias = fx::zeros({1});
  Tensor x = fx::tensor({1, 2, 3, -4}).reshape({4, 1});
  auto loss = [](const auto& m, const Tensor& xb) { return fx::sum(fx::log(m(xb))); };
  const int before = omp_get_max_threads();
  omp_set_num_threads(2);
  std::string msg = error_of([&] {
    fx::detect_anomaly anomaly;
    (void)fx::train::data_parallel_withgradient(loss, model, x);
  });
  omp_set_num_threads(before);
  expect_has(msg, {"forward of 'log'", "NaN at (1, 0)", "(2, 1) f32"});
}

}  // namespace
