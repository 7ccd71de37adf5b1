// Custom gradient rules, implicit differentiation and checkpointing, in one short program.
//
//   ./build/examples/custom_rules
//
// 1. log1pexp: a numerically stable softplus whose rule gives the derivative sigmoid(x).
// 2. An implicit-function rule for a fixed-point solver x* = tanh(W x* + theta): its pullback
//    solves the adjoint equation with fx::pullback of one solver step, instead of
//    differentiating through every iteration; compared with differentiating the unrolled loop.
// 3. fx::checkpointed: a 100-step recurrence whose tape keeps 10 nodes instead of 300.
// Prints what it compares and ends with `custom_rules: ok` (the line ctest reads).
#include <cmath>
#include <cstdio>
#include <tuple>
#include <vector>

#include <fluxion/ad/checkpoint.hpp>
#include <fluxion/ad/custom.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>

using fx::Tensor;

namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) { return fx::max(fx::abs(a - b)).item(); }

bool report(const char* what, double err, double tol) {
  std::printf("  %-58s %.2e %s\n", what, err, err <= tol ? "ok" : "FAILED");
  return err <= tol;
}

}  // namespace

int main() {
  bool ok = true;
  fx::Generator gen(7);

  std::printf("1. log1pexp with a custom rule\n");
  auto log1pexp = fx::custom_rule(
      "log1pexp", [](const Tensor& x) { return fx::relu(x) + fx::log1p(fx::exp(-fx::abs(x))); },
      [](const Tensor& x, const Tensor&, const Tensor& dy) { return dy * fx::sigmoid(x); });
  Tensor x = fx::tensor({-30, -1, 0, 1, 30, 800}, fx::f64);
  Tensor naive = fx::log(1 + fx::exp(x));
  std::printf("  x = 800: naive log(1 + exp(x)) = %g, log1pexp = %g\n",
              fx::to_vector<double>(naive)[5], fx::to_vector<double>(log1pexp(x))[5]);
  Tensor g = fx::gradient([&](const Tensor& x) { return fx::sum(log1pexp(x)); }, x);
  ok &= report("|gradient - sigmoid(x)|", max_abs_diff(g, fx::sigmoid(x)), 1e-15);

  std::printf("2. implicit differentiation of a fixed point x* = tanh(W x* + theta)\n");
  const int n = 16, iters = 60;
  // A contraction (spectral norm about 0.5), so both iterations converge geometrically.
  Tensor w = fx::randn({n, n}, gen, fx::f64) * (0.25 / std::sqrt(double(n)));
  Tensor theta = fx::randn({n}, gen, fx::f64);
  auto step = [](const Tensor& x, const Tensor& w, const Tensor& th) {
    return fx::tanh(fx::matmul(w, x) + th);
  };
  auto solve = [&](const Tensor& w, const Tensor& th) {
    Tensor x = fx::zeros_like(th);
    for (int k = 0; k < iters; ++k) x = step(x, w, th);
    return x;
  };
  // The implicit function theorem: with u = dy + (dstep/dx)^T u, the cotangents of w and theta
  // are (dstep/dw)^T u and (dstep/dtheta)^T u, all read off one pullback of `step` at x*.
  auto fixed_point = fx::custom_rule(
      "fixed_point", solve,
      [step](const Tensor& w, const Tensor& th, const Tensor& xs, const Tensor& dy) {
        auto [y, back] = fx::pullback(step, xs, w, th);
        Tensor u = dy;
        for (int k = 0; k < iters; ++k) u = dy + std::get<0>(back(u));
        auto [gx, gw, gth] = back(u);
        return std::tuple{gw, gth};
      });
  auto loss = [](const Tensor& x) { return fx::sum(x * x); };
  auto [y_imp, back_imp] = fx::pullback(
      [&](const Tensor& w, const Tensor& th) { return loss(fixed_point(w, th)); }, w, theta);
  auto [y_unr, back_unr] =
      fx::pullback([&](const Tensor& w, const Tensor& th) { return loss(solve(w, th)); }, w, theta);
  auto [gw_imp, gth_imp] = back_imp(fx::ones_like(y_imp));
  auto [gw_unr, gth_unr] = back_unr(fx::ones_like(y_unr));
  std::printf("  tape nodes: implicit rule %zu, unrolled %d iterations %zu\n",
              back_imp.recording().num_nodes(), iters, back_unr.recording().num_nodes());
  ok &= report("|dL/dtheta implicit - unrolled|", max_abs_diff(gth_imp, gth_unr), 1e-12);
  ok &= report("|dL/dW implicit - unrolled|", max_abs_diff(gw_imp, gw_unr), 1e-12);

  std::printf("3. checkpointing a 100-step recurrence h = tanh(W h + x_t)\n");
  Tensor wr = fx::randn({64, 64}, gen, fx::f64) * (0.9 / 8);
  Tensor h0 = fx::randn({64}, gen, fx::f64);
  std::vector<Tensor> xs;
  for (int t = 0; t < 100; ++t) xs.push_back(fx::randn({64}, gen, fx::f64));
  auto segment = [&xs](const Tensor& w, const Tensor& h0, int t0) {
    Tensor h = h0;
    for (int t = t0; t < t0 + 10; ++t) h = fx::tanh(fx::matmul(w, h) + xs[size_t(t)]);
    return h;
  };
  auto plain = [&](const Tensor& w) {
    Tensor h = h0;
    for (int s = 0; s < 10; ++s) h = segment(w, h, 10 * s);
    return fx::sum(h);
  };
  auto checkpointed = [&](const Tensor& w) {
    Tensor h = h0;
    for (int s = 0; s < 10; ++s) h = fx::checkpointed(segment, w, h, 10 * s);
    return fx::sum(h);
  };
  auto [yp, back_p] = fx::pullback(plain, wr);
  auto [yc, back_c] = fx::pullback(checkpointed, wr);
  std::printf("  tape nodes: plain %zu, checkpointed in 10 segments %zu\n",
              back_p.recording().num_nodes(), back_c.recording().num_nodes());
  ok &= report("|dL/dW checkpointed - plain|",
               max_abs_diff(back_c(fx::ones_like(yc)), back_p(fx::ones_like(yp))), 1e-12);

  std::printf(ok ? "custom_rules: ok\n" : "custom_rules: FAILED\n");
  return ok ? 0 : 1;
}
