// Built-in rules: each is one fused per-element loop. Compiled here rather than in the header
// so the loops get the library's flags (-fno-math-errno lets sqrt vectorise).
#include "fluxion/optim/rules.hpp"

#include <cmath>

#include "fluxion/optim/elementwise.hpp"

namespace fx::optim {

void Descent::apply(State&, const Tensor& param, const Tensor& grad) const {
  foreach_element("Descent", param, grad, [lr = lr](auto& x, auto dx) {
    using T = decltype(dx);
    x -= T(lr) * dx;
  });
}

void Momentum::apply(State& s, const Tensor& param, const Tensor& grad) const {
  foreach_element("Momentum", param, grad, [lr = lr, rho = rho](auto& x, auto dx, auto& v) {
    using T = decltype(dx);
    v = T(rho) * v + T(lr) * dx;
    x -= v;
  }, s.velocity);
}

namespace {

// One Adam step with the parameter first scaled by `keep` (1 for Adam, 1 - lr*wd for AdamW).
void adam_step(const char* rule, Adam::State& s, const Tensor& param, const Tensor& grad,
               double lr, double b1, double b2, double eps, double keep) {
  const int64_t t = s.step + 1;
  // Bias corrections folded into two scalars so the loop does one sqrt, one divide per element.
  const double step_size = lr / (1 - std::pow(b1, double(t)));
  const double inv_sqrt_bc2 = 1 / std::sqrt(1 - std::pow(b2, double(t)));
  foreach_element(rule, param, grad, [=](auto& x, auto dx, auto& m, auto& v) {
    using T = decltype(dx);
    m = T(b1) * m + T(1 - b1) * dx;
    v = T(b2) * v + T(1 - b2) * dx * dx;
    x = x * T(keep) - T(step_size) * m / (std::sqrt(v) * T(inv_sqrt_bc2) + T(eps));
  }, s.m, s.v);
  s.step = t;
}

}  // namespace

void Adam::apply(State& s, const Tensor& param, const Tensor& grad) const {
  adam_step("Adam", s, param, grad, lr, beta1, beta2, eps, 1.0);
}

void AdamW::apply(State& s, const Tensor& param, const Tensor& grad) const {
  adam_step("AdamW", s, param, grad, lr, beta1, beta2, eps, 1 - lr * weight_decay);
}

}  // namespace fx::optim
