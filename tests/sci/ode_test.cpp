// fx::sci::solve_ode: order of convergence of each method on the harmonic oscillator, dense
// output accuracy, error control, and gradients by backprop / checkpoint / adjoint against the
// closed form of a linear ODE (exp(tA) and its Frechet derivative), finite differences and each
// other; unused parameters get exact zeros; adjoint and checkpoint memory does not grow with the
// number of steps (the allocator's peak_bytes).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/ad/trace.hpp>
#include <fluxion/ad/vmap.hpp>
#include <fluxion/core/storage.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/sci/ode.hpp>
#include <fluxion/testing.hpp>

namespace {

using fx::Tensor;
using fx::sci::Method;
using fx::sci::ODEOptions;
using fx::sci::Sensitivity;

std::vector<double> vec(const Tensor& t) { return fx::to_vector<double>(t); }

// y'' = -y as a first-order system: y = (cos t, -sin t) from (1, 0).
Tensor oscillator(const Tensor& y, const Tensor&, double) {
  return fx::stack({fx::select(y, 0, 1), -fx::select(y, 0, 0)}, 0);
}

double error_at(const Tensor& y, double t) {
  auto v = vec(y);
  return std::hypot(v[0] - std::cos(t), v[1] + std::sin(t));
}

double final_error(Method m, double dt) {
  ODEOptions opt{.method = m, .dt = dt, .adaptive = false};
  Tensor y0 = fx::tensor({1.0, 0.0}, fx::f64), none = fx::zeros({0}, fx::f64);
  auto ys = fx::sci::solve_ode(oscillator, y0, none, {0.0, 2.0}, opt);
  return error_at(ys.back(), 2.0);
}

TEST(SolveOde, FixedStepOrderOfConvergence) {
  struct Row {
    Method m;
    double dt;
    double order;
  };
  for (auto [m, dt, order] :
       {Row{Method::rk4, 0.1, 4}, Row{Method::tsit5, 0.2, 5}, Row{Method::dopri5, 0.2, 5}}) {
    double e1 = final_error(m, dt), e2 = final_error(m, dt / 2);
    double observed = std::log2(e1 / e2);
    EXPECT_NEAR(observed, order, 0.35) << "method " << int(m) << " errors " << e1 << " " << e2;
  }
}

TEST(SolveOde, DenseOutputIsFourthOrderAndAccurate) {
  // Outputs between the steps: Hermite interpolation, O(h^4) at fixed steps.
  std::vector<double> ts;
  for (int i = 0; i <= 40; ++i) ts.push_back(0.05 * i + 0.013 * (i % 3 == 1));
  std::sort(ts.begin(), ts.end());
  auto max_error = [&](const ODEOptions& opt) {
    auto ys = fx::sci::solve_ode(oscillator, fx::tensor({1.0, 0.0}, fx::f64),
                                 fx::zeros({0}, fx::f64), ts, opt);
    double e = 0;
    for (size_t i = 0; i < ts.size(); ++i) e = std::max(e, error_at(ys[i], ts[i]));
    return e;
  };
  double e1 = max_error({.method = Method::rk4, .dt = 0.3, .adaptive = false});
  double e2 = max_error({.method = Method::rk4, .dt = 0.15, .adaptive = false});
  EXPECT_GT(std::log2(e1 / e2), 3.5) << e1 << " " << e2;
  for (Method m : {Method::tsit5, Method::dopri5}) {
    double e = max_error({.method = m, .rtol = 1e-10, .atol = 1e-12});
    EXPECT_LT(e, 1e-7) << int(m);
  }
}

TEST(SolveOde, ErrorControlFollowsTolerance) {
  Tensor y0 = fx::tensor({1.0, 0.0}, fx::f64), none = fx::zeros({0}, fx::f64);
  for (Method m : {Method::tsit5, Method::dopri5}) {
    double previous = 1;
    int64_t previous_steps = 0;
    for (double tol : {1e-4, 1e-7, 1e-10}) {
      fx::sci::SolveStats stats;
      auto ys = fx::sci::solve_ode(oscillator, y0, none, {0.0, 10.0},
                                   {.method = m, .rtol = tol, .atol = tol}, &stats);
      double e = error_at(ys.back(), 10.0);
      EXPECT_LT(e, 1000 * tol) << int(m) << " tol " << tol;
      EXPECT_LT(e, previous);
      EXPECT_GT(stats.accepted, previous_steps);
      EXPECT_EQ(stats.evaluations, stats.accepted * 6 + stats.rejected * 6 + 2);  // FSAL
      previous = e;
      previous_steps = stats.accepted;
    }
  }
}

TEST(SolveOde, StructStateMatchesTensorState) {
  struct Phase {
    Tensor q, p;
    FX_FIELDS(q, p)
  };
  auto f = [](const Phase& s, const Tensor& w, double) { return Phase{s.p, -w * s.q}; };
  Phase s0{fx::tensor({1.0, 0.5}, fx::f64), fx::tensor({0.0, 0.0}, fx::f64)};
  Tensor w = fx::tensor({1.0, 4.0}, fx::f64);  // frequencies squared
  auto sol = fx::sci::solve_ode(f, s0, w, {0.0, 1.0}, {.rtol = 1e-10, .atol = 1e-12});
  auto q = vec(sol.back().q);
  EXPECT_NEAR(q[0], std::cos(1.0), 1e-8);
  EXPECT_NEAR(q[1], 0.5 * std::cos(2.0), 1e-8);
}

// ---- gradients on y' = A y: closed form y(t) = exp(tA) y0.

using Mat = std::vector<double>;  // row-major n x n

Mat matmul(const Mat& a, const Mat& b, int n) {
  Mat c(size_t(n * n), 0.0);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j) c[i * n + j] += a[i * n + k] * b[k * n + j];
  return c;
}

// exp(M) by scaling and squaring with a 24-term Taylor series: ~1e-15 relative for small n.
Mat expm(Mat m, int n) {
  double norm = 0;
  for (double v : m) norm = std::max(norm, std::abs(v));
  int squarings = std::max(0, int(std::ceil(std::log2(norm * n / 0.25))));
  for (double& v : m) v = std::ldexp(v, -squarings);
  Mat result(size_t(n * n), 0.0), term(size_t(n * n), 0.0);
  for (int i = 0; i < n; ++i) result[i * n + i] = term[i * n + i] = 1;
  for (int k = 1; k <= 24; ++k) {
    term = matmul(term, m, n);
    for (double& v : term) v /= k;
    for (size_t i = 0; i < result.size(); ++i) result[i] += term[i];
  }
  for (int s = 0; s < squarings; ++s) result = matmul(result, result, n);
  return result;
}

struct LinearProblem {
  Mat A = {-0.3, 1.1, -0.9, -0.2};
  std::vector<double> y0 = {1.0, 0.4};
  std::vector<double> ts = {0.0, 0.5, 1.25, 2.0};
  std::vector<std::vector<double>> w = {{0.3, -0.2}, {1.0, 0.5}, {-0.7, 0.25}, {0.6, 0.9}};

  // L = sum_i <w_i, exp(t_i A) y0>; dL/dy0 = sum_i exp(t_i A)^T w_i and dL/dA_kl from the
  // Frechet derivative: the top-right block of exp(t [[A, E_kl], [0, A]]).
  double loss_closed() const {
    double l = 0;
    for (size_t i = 0; i < ts.size(); ++i) {
      Mat e = expm(scaled(ts[i]), 2);
      for (int r = 0; r < 2; ++r) l += w[i][r] * (e[r * 2] * y0[0] + e[r * 2 + 1] * y0[1]);
    }
    return l;
  }
  Mat scaled(double t) const {
    Mat m = A;
    for (double& v : m) v *= t;
    return m;
  }
  std::vector<double> grad_y0() const {
    std::vector<double> g(2, 0.0);
    for (size_t i = 0; i < ts.size(); ++i) {
      Mat e = expm(scaled(ts[i]), 2);
      for (int c = 0; c < 2; ++c) g[c] += w[i][0] * e[c] + w[i][1] * e[2 + c];
    }
    return g;
  }
  std::vector<double> grad_A() const {
    std::vector<double> g(4, 0.0);
    for (int kl = 0; kl < 4; ++kl) {
      for (size_t i = 0; i < ts.size(); ++i) {
        Mat block(16, 0.0);
        for (int r = 0; r < 2; ++r)
          for (int c = 0; c < 2; ++c) block[r * 4 + c] = block[(r + 2) * 4 + c + 2] = A[r * 2 + c];
        block[(kl / 2) * 4 + 2 + kl % 2] = 1;
        for (double& v : block) v *= ts[i];
        Mat e = expm(block, 4);  // top-right block: d exp(tA)[E]
        for (int r = 0; r < 2; ++r)
          g[kl] += w[i][r] * (e[r * 4 + 2] * y0[0] + e[r * 4 + 3] * y0[1]);
      }
    }
    return g;
  }
};

struct LinearParams {
  Tensor A, unused;
  FX_FIELDS(A, unused)
};

Tensor linear_rhs(const Tensor& y, const LinearParams& p, double) { return fx::matmul(p.A, y); }

// (dL/dy0, dL/dA, dL/dunused) through solve_ode with the given options.
std::vector<std::vector<double>> linear_gradients(const LinearProblem& lp, const ODEOptions& opt) {
  LinearParams p{fx::from_vector(lp.A, {2, 2}), fx::ones({3}, fx::f64)};
  Tensor y0 = fx::from_vector(lp.y0, {2});
  std::vector<Tensor> w;
  for (auto& wi : lp.w) w.push_back(fx::from_vector(wi, {2}));
  auto loss = [&](const Tensor& y0, const LinearParams& p) {
    auto ys = fx::sci::solve_ode(linear_rhs, y0, p, lp.ts, opt);
    Tensor l = fx::dot(w[0], ys[0]);
    for (size_t i = 1; i < ys.size(); ++i) l = l + fx::dot(w[i], ys[i]);
    return l;
  };
  auto [gy, gp] = fx::gradient(loss, y0, p);
  return {vec(gy), vec(gp.A), vec(gp.unused)};
}

double max_rel(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num = std::max(num, std::abs(got[i] - want[i]));
    den = std::max(den, std::abs(want[i]));
  }
  return num / den;
}

TEST(SolveOdeGradient, AllSensitivitiesMatchClosedFormOnLinearOde) {
  LinearProblem lp;
  auto gy = lp.grad_y0(), gA = lp.grad_A();
  for (Method m : {Method::tsit5, Method::dopri5}) {
    for (Sensitivity s : {Sensitivity::backprop, Sensitivity::checkpoint, Sensitivity::adjoint}) {
      ODEOptions opt{
          .method = m, .rtol = 1e-9, .atol = 1e-12, .sensitivity = s, .checkpoint_steps = 3};
      auto g = linear_gradients(lp, opt);
      EXPECT_LT(max_rel(g[0], gy), 1e-6) << "method " << int(m) << " sensitivity " << int(s);
      EXPECT_LT(max_rel(g[1], gA), 1e-6) << "method " << int(m) << " sensitivity " << int(s);
      for (double v : g[2]) EXPECT_EQ(v, 0.0) << "unused parameter, sensitivity " << int(s);
    }
  }
}

TEST(SolveOdeGradient, CheckpointEqualsBackpropOnTheSameSteps) {
  LinearProblem lp;
  ODEOptions opt{.rtol = 1e-6, .atol = 1e-9};
  auto ref = linear_gradients(lp, opt);
  for (int64_t leaf : {1, 2, 5, 1000}) {
    opt.sensitivity = Sensitivity::checkpoint;
    opt.checkpoint_steps = leaf;
    auto g = linear_gradients(lp, opt);
    EXPECT_LT(max_rel(g[0], ref[0]), 1e-12) << leaf;
    EXPECT_LT(max_rel(g[1], ref[1]), 1e-12) << leaf;
  }
}

TEST(SolveOdeGradient, BackpropMatchesFiniteDifferences) {
  // A nonlinear field; gradcheck compares with central differences of the (discrete) solver.
  auto f = [](const Tensor& y, const Tensor& k, double t) {
    return fx::tanh(k * y) * std::cos(t) - 0.1 * y * y;
  };
  auto solve = [&](const Tensor& y0, const Tensor& k) {
    ODEOptions opt{.method = Method::rk4, .dt = 0.1};
    return fx::sci::solve_ode(f, y0, k, {0.0, 0.35, 1.0}, opt).back();
  };
  Tensor y0 = fx::tensor({0.5, -0.3, 1.2}, fx::f64), k = fx::tensor({0.7, 1.5, -0.4}, fx::f64);
  auto r = fx::testing::gradcheck(
      solve, fx::testing::GradcheckOptions{.order = 1, .forward = false}, y0, k);
  EXPECT_TRUE(r) << r;
}

// The spiral of examples/neural_ode with a small network, at the default tolerances.
TEST(SolveOdeGradient, AdjointAgreesWithBackpropOnANeuralOde) {
  fx::Generator gen(3);
  auto model =
      fx::nn::Chain(fx::nn::Dense(2, 16, fx::tanh, gen), fx::nn::Dense(16, 2, fx::identity, gen));
  fx::for_each_tensor(model, [](Tensor& t) { t = fx::astype(t, fx::f64); });
  auto f = [](const Tensor& u, const auto& m, double) { return m(u * u * u); };
  Tensor u0 = fx::tensor({2.0, 0.0}, fx::f64);
  std::vector<double> ts;
  for (int i = 0; i < 10; ++i) ts.push_back(1.5 * i / 9);
  auto grad = [&](Sensitivity s) {
    auto g = fx::gradient(
        [&](const auto& m) {
          auto us = fx::sci::solve_ode(f, u0, m, ts, {.sensitivity = s});
          Tensor l = fx::sum_squares(us[0]);
          for (size_t i = 1; i < us.size(); ++i) l = l + fx::sum_squares(us[i]);
          return l;
        },
        model);
    std::vector<double> flat;
    fx::for_each_tensor(g, [&](Tensor& t) {
      for (double v : vec(t)) flat.push_back(v);
    });
    return flat;
  };
  auto back = grad(Sensitivity::backprop);
  EXPECT_LT(max_rel(grad(Sensitivity::adjoint), back), 2e-3);
  EXPECT_LT(max_rel(grad(Sensitivity::checkpoint), back), 1e-12);
}

// The training loss of examples/neural_ode, full size (Chain(x -> x^3, Dense(2, 50, tanh),
// Dense(50, 2)), 30 outputs): its backprop gradient is the exact derivative of the discrete
// solution (fixed Tsit5 steps, so central differences see the same map), checked along random
// directions of the flat parameter vector. A wrong gradient here would slow Adam in the example
// without any other symptom, since the adjoint reuses the same vector-Jacobian products.
TEST(SolveOdeGradient, SpiralTrainingLossMatchesFiniteDifferences) {
  fx::Generator gen(11);
  fx::nn::Dense hidden(2, 50, fx::tanh, gen), output(50, 2, fx::identity, gen);
  auto model = fx::nn::Chain([](const Tensor& x) { return x * x * x; }, hidden, output);
  fx::for_each_tensor(model, [](Tensor& t) { t = fx::astype(t, fx::f64); });
  using Model = decltype(model);
  const fx::sci::Flattener<Model> layout(model);
  std::vector<double> ts;
  for (int i = 0; i < 30; ++i) ts.push_back(1.5 * i / 29);
  const Tensor u0 = fx::tensor({2.0, 0.0}, fx::f64);
  const Tensor target = fx::tensor({1.0, 0.5}, fx::f64);
  auto loss = [&](const Tensor& x) {
    auto f = [](const Tensor& u, const Model& m, double) { return m(u); };
    // Fixed steps: an adaptive solve picks other steps at x +- eps v, and central differences
    // then see that jump (1e-5 relative at rtol 1e-3) rather than the derivative.
    ODEOptions opt{.dt = 1.5 / 150, .adaptive = false};
    auto us = fx::sci::solve_ode(f, u0, layout.unflatten(x), ts, opt);
    Tensor l = fx::sum_squares(us[0] - target);
    for (size_t i = 1; i < us.size(); ++i) l = l + fx::sum_squares(us[i] - target);
    return l;
  };
  for (uint64_t seed : {1, 2, 3}) {
    auto r = fx::testing::gradcheck(
        loss, fx::testing::GradcheckOptions{.order = 1, .seed = seed, .forward = false},
        layout.flatten(model));
    EXPECT_TRUE(r) << r;
  }
}

// Peak live tensor bytes of one gradient over `steps` RK4 steps of a 256-dimensional ODE whose
// parameters are as small as its state (so the state, not the parameters, sets the scale).
int64_t peak_gradient_bytes(Sensitivity s, int steps) {
  fx::Generator gen(5);
  Tensor k = fx::randn({256}, gen, fx::f64), y0 = fx::ones({256}, fx::f64);
  ODEOptions opt{.method = Method::rk4, .dt = 1.0 / steps, .sensitivity = s, .checkpoint_steps = 4};
  auto f = [](const Tensor& y, const Tensor& k, double) { return fx::tanh(k * y) - 0.5 * y; };
  fx::reset_peak_bytes();
  int64_t before = fx::allocator_stats().live_bytes;
  Tensor g = fx::gradient(
      [&](const Tensor& k) {
        return fx::sum(fx::sci::solve_ode(f, y0, k, {0.0, 1.0}, opt).back());
      },
      k);
  return fx::allocator_stats().peak_bytes - before;
}

TEST(SolveOdeGradient, AdjointAndCheckpointMemoryDoesNotGrowWithSteps) {
  int64_t back_few = peak_gradient_bytes(Sensitivity::backprop, 64);
  int64_t back_many = peak_gradient_bytes(Sensitivity::backprop, 1024);
  EXPECT_GT(back_many, 8 * back_few) << "the measure must see the tape grow";
  int64_t adjoint_few = peak_gradient_bytes(Sensitivity::adjoint, 64);
  int64_t adjoint_many = peak_gradient_bytes(Sensitivity::adjoint, 1024);
  EXPECT_LE(adjoint_many, adjoint_few);
  // checkpoint: 16 times the steps add four bisection levels of a few states each.
  int64_t check_few = peak_gradient_bytes(Sensitivity::checkpoint, 64);
  int64_t check_many = peak_gradient_bytes(Sensitivity::checkpoint, 1024);
  EXPECT_LT(check_many, check_few + check_few / 4) << check_few << " -> " << check_many;
  EXPECT_LT(check_many, back_many / 16);
  EXPECT_LT(adjoint_many, back_many / 16);
}

TEST(SolveOde, BadInputsThrow) {
  Tensor y0 = fx::tensor({1.0, 0.0}, fx::f64), none = fx::zeros({0}, fx::f64);
  EXPECT_THROW(fx::sci::solve_ode(oscillator, y0, none, {1.0, 0.0}), fx::Error);
  EXPECT_THROW(fx::sci::solve_ode(oscillator, y0, none, {0.0, 1.0}, {.method = Method::rk4}),
               fx::Error);
  EXPECT_THROW(fx::sci::solve_ode(oscillator, y0, none, {0.0, 100.0}, {.max_steps = 10}),
               fx::Error);
  auto wrong_shape = [](const Tensor& y, const Tensor&, double) { return fx::concat({y, y}); };
  EXPECT_THROW(fx::sci::solve_ode(wrong_shape, y0, none, {0.0, 1.0}), fx::Error);
  // A solution that blows up in finite time: the step size underflows.
  auto blowup = [](const Tensor& y, const Tensor&, double) { return y * y; };
  EXPECT_THROW(fx::sci::solve_ode(blowup, y0, none, {0.0, 2.0}), fx::Error);
}

TEST(SolveOde, FixedStepsBatchUnderVmapAndTraceAdaptiveStepsSayWhy) {
  // A batch of initial states through a learned field: vmap of the solve (and of its gradient,
  // each sensitivity) equals the loop over examples; a trace replays it on new inputs.
  auto model = fx::nn::Chain(fx::nn::Dense(2, 8, fx::tanh), fx::nn::Dense(8, 2));
  fx::for_each_tensor(model, [](Tensor& t) { t = fx::astype(t, fx::f64); });
  auto f = [](const Tensor& u, const auto& m, double) { return m(u); };
  const std::vector<double> ts = {0.0, 0.5, 1.0};
  const Tensor u0s = fx::testing::randn({3, 2}, {.seed = 1});
  for (auto sens : {Sensitivity::backprop, Sensitivity::checkpoint, Sensitivity::adjoint}) {
    for (const ODEOptions opt :
         {ODEOptions{.method = Method::rk4, .dt = 0.1, .sensitivity = sens},
          ODEOptions{.method = Method::tsit5, .dt = 0.1, .adaptive = false, .sensitivity = sens}}) {
      auto solve = [&](const Tensor& u0) {
        return fx::sci::solve_ode(f, u0, model, ts, opt).back();
      };
      auto grad = [&](const Tensor& u0) {
        return fx::gradient([&](const Tensor& u) { return fx::sum(fx::sin(solve(u))); }, u0);
      };
      const Tensor ys = fx::vmap(solve)(u0s), gs = fx::vmap(grad)(u0s);
      const fx::Graph g = fx::trace(solve, fx::select(u0s, 0, 0));
      for (int64_t b = 0; b < 3; ++b) {
        const Tensor u0 = fx::select(u0s, 0, b);
        EXPECT_TRUE(fx::allclose(fx::select(ys, 0, b), solve(u0), 1e-12, 1e-12)) << b;
        EXPECT_TRUE(fx::allclose(fx::select(gs, 0, b), grad(u0), 1e-10, 1e-12)) << b;
        EXPECT_TRUE(fx::allclose(g(u0)[0], solve(u0), 1e-12, 1e-12)) << b;
      }
    }
    // Adaptive steps are chosen from the values, which a batched state does not hold.
    const ODEOptions adaptive{.method = Method::tsit5, .sensitivity = sens};
    EXPECT_TRUE(fx::testing::throws_mentioning(
        [&] {
          (void)fx::vmap([&](const Tensor& u0) {
            return fx::sci::solve_ode(f, u0, model, ts, adaptive).back();
          })(u0s);
        },
        {"fx::sci::solve_ode", "adaptive", "fx::vmap"}));
  }
}

}  // namespace
