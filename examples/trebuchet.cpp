// Mixed-mode AD: a neural controller learns to aim a projectile with air drag, through a physics
// simulation differentiated in forward mode inside the controller's reverse-mode training loop
// (after the trebuchet of Flux's model zoo).
//
//   ./build/examples/trebuchet                  # 1000 Adam steps on batches of 64 shots
//   ./build/examples/trebuchet --steps 150
//
// The simulation is plain scalar C++ (a template on the number type): launch at angle a and
// speed v into a wind w, integrate x'' = -k |u| u_x, y'' = -k |u| u_y - g with u = velocity - wind
// (semi-implicit Euler, dt = 0.01 s) until the projectile falls through y = 0, and interpolate
// the landing distance. fx::custom_rule makes it one differentiable tensor op on a batch of
// shots: its forward runs each shot on fx::Dual<double, 2>, whose two tangents are the
// derivatives of the distance with respect to a and v (forward mode), and keeps that (B, 2)
// Jacobian for the pullback, which the reverse pass through the controller then reads.
// Controller: Chain(Dense(2, 32, tanh), Dense(32, 2)) from (target / 100 m, wind / 5 m/s) to
// a in (0.1, 1.5) rad and v in (10, 60) m/s; loss: mean squared miss. Prints the mean miss
// distance over 200 fixed test shots before and after training (miss_before=, miss_after=) and
// ends with `trebuchet: ok` when after <= 0.1 x before.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fluxion/ad/custom.hpp>
#include <fluxion/ad/dual.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/optim.hpp>

#include "cli.hpp"

using fx::Tensor;

namespace {

// Landing distance of a shot at angle a (rad) and speed v (m/s) into a headwind w (m/s).
template <class T>
T landing_distance(const T& a, const T& v, double wind) {
  const double g = 9.81, k = 0.005, dt = 0.01;
  T x = 0.0 * a, y = 0.0 * a, vx = v * cos(a), vy = v * sin(a);
  T x_prev = x, y_prev = y;
  for (int step = 0; step < 10000 && (step == 0 || fx::value(y) >= 0); ++step) {
    x_prev = x;
    y_prev = y;
    const T ux = vx + wind, uy = vy;  // air velocity relative to the projectile's, negated
    const T speed = sqrt(ux * ux + uy * uy);
    vx = vx - dt * k * speed * ux;
    vy = vy - dt * (k * speed * uy + g);
    x = x + dt * vx;
    y = y + dt * vy;
  }
  // Where the segment from the last point above ground to the first below crosses y = 0.
  return x_prev + (x - x_prev) * (y_prev / (y_prev - y));
}

// distances (B,) of launches (B, 2) = (angle, speed) into winds (B,): a tensor op whose forward
// mode runs inside, on Duals.
Tensor shoot(const Tensor& launch, const Tensor& wind) {
  static auto rule = fx::custom_rule(
      "trebuchet",
      [](const Tensor& launch, const Tensor& wind) {
        const std::vector<double> p = fx::to_vector<double>(launch),
                                  w = fx::to_vector<double>(wind);
        const size_t n = w.size();
        std::vector<double> dist(n), jac(2 * n);
        for (size_t i = 0; i < n; ++i) {
          fx::Dual<double, 2> a(p[2 * i], {1.0, 0.0}), v(p[2 * i + 1], {0.0, 1.0});
          auto d = landing_distance(a, v, w[i]);
          dist[i] = d.value();
          jac[2 * i] = d.partial(0);
          jac[2 * i + 1] = d.partial(1);
        }
        const int64_t b = int64_t(n);
        return std::tuple(fx::from_vector(dist, fx::Shape{b}),
                          fx::from_vector(jac, fx::Shape{b, 2}));
      },
      [](const Tensor&, const Tensor&, const Tensor&, const Tensor& jac, const Tensor& dy) {
        return std::tuple(fx::unsqueeze(dy, 1) * jac, Tensor());  // winds get no gradient
      });
  return rule(launch, wind);
}

// (angle, speed) for each (target, wind) row.
template <class Model>
Tensor aim(const Model& model, const Tensor& target, const Tensor& wind) {
  Tensor out = model(fx::stack({target / 100.0, wind / 5.0}, 1));
  Tensor angle = 0.1 + 1.4 * fx::sigmoid(fx::select(out, 1, 0));
  Tensor speed = 10.0 + 50.0 * fx::sigmoid(fx::select(out, 1, 1));
  return fx::stack({angle, speed}, 1);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 1000, batch = 64;
  uint64_t seed = 11;
  fx::examples::Cli cli("trebuchet",
                        "Trains a controller that aims a trebuchet, simulated in forward mode "
                        "inside reverse-mode training.");
  cli.option("--steps", "N", "Adam steps", steps, {.min = 0});
  cli.option("--batch", "B", "targets and winds per step", batch, {.min = 1});
  cli.option("--seed", "S", "seed of the weights and the draws", seed);
  cli.parse_or_exit(argc, argv);
  fx::Generator gen{seed};
  auto model =
      fx::nn::Chain(fx::nn::Dense(2, 32, fx::tanh, gen), fx::nn::Dense(32, 2, fx::identity, gen));
  fx::for_each_tensor(model, [](Tensor& t) { t = fx::astype(t, fx::f64); });

  auto draw = [&](int64_t n) {  // targets in [20, 120] m, winds in [-5, 5] m/s
    return std::pair(fx::uniform({n}, 20, 120, gen, fx::f64),
                     fx::uniform({n}, -5, 5, gen, fx::f64));
  };
  const auto [test_target, test_wind] = draw(200);
  auto mean_miss = [&]() {
    return fx::mean(fx::abs(shoot(aim(model, test_target, test_wind), test_wind) - test_target))
        .item();
  };
  const double before = mean_miss();

  auto opt = fx::optim::setup(fx::optim::Adam(1e-2), model);
  for (int64_t step = 0; step < steps; ++step) {
    auto [target, wind] = draw(batch);
    auto [loss, grad] = fx::withgradient(
        [&](const auto& m) {
          return fx::mean(fx::square(shoot(aim(m, target, wind), wind) - target)) / 100.0;
        },
        model);
    fx::optim::update(opt, model, grad);
    if (step % 100 == 0)
      std::printf("step %lld: loss %.4f\n", static_cast<long long>(step), loss.item());
  }
  const double after = mean_miss();
  std::printf("miss_before=%.4f\nmiss_after=%.4f\nratio=%.4f\n", before, after, after / before);
  if (!(after <= 0.1 * before)) return 1;
  std::printf("trebuchet: ok\n");
  return 0;
}
