// Built-in rules: each is one fused per-element loop. Compiled here rather than in the header
// so the loops get the library's flags (-fno-math-errno lets sqrt vectorise). Step-dependent
// scalars (bias corrections) are computed once per leaf in double, outside the loop.
#include "fluxion/optim/rules.hpp"

#include <algorithm>
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
  foreach_element(
      "Momentum", param, grad,
      [lr = lr, rho = rho](auto& x, auto dx, auto& v) {
        using T = decltype(dx);
        v = T(rho) * v + T(lr) * dx;
        x -= v;
      },
      s.velocity);
}

void Nesterov::apply(State& s, const Tensor& param, const Tensor& grad) const {
  foreach_element(
      "Nesterov", param, grad,
      [lr = lr, rho = rho](auto& x, auto dx, auto& v) {
        using T = decltype(dx);
        x += T(rho * rho) * v - T((1 + rho) * lr) * dx;
        v = T(rho) * v - T(lr) * dx;
      },
      s.velocity);
}

void RMSProp::apply(State& s, const Tensor& param, const Tensor& grad) const {
  FX_CHECK(s.lin.defined() == centred, "fx::optim::RMSProp: centred is ", centred,
           " but the state was set up with centred = ", s.lin.defined(),
           "; the variants keep different state, so set it before setup");
  auto quad_step = [lr = lr, rho = rho, eps = eps](auto& x, auto dx, auto& quad) {
    using T = decltype(dx);
    quad = T(rho) * quad + T(1 - rho) * dx * dx;
    x -= T(lr) * dx / (std::sqrt(quad) + T(eps));
  };
  if (!centred) return foreach_element("RMSProp", param, grad, quad_step, s.quad);
  foreach_element(
      "RMSProp", param, grad,
      [lr = lr, rho = rho, eps = eps](auto& x, auto dx, auto& quad, auto& lin) {
        using T = decltype(dx);
        quad = T(rho) * quad + T(1 - rho) * dx * dx;
        lin = T(rho) * lin + T(1 - rho) * dx;
        x -= T(lr) * dx / (std::sqrt(quad - lin * lin) + T(eps));
      },
      s.quad, s.lin);
}

void Rprop::apply(State& s, const Tensor& param, const Tensor& grad) const {
  foreach_element(
      "Rprop", param, grad,
      [*this](auto& x, auto dx, auto& prev, auto& step) {
        using T = decltype(dx);
        const T agree = prev * dx;
        step = agree > 0   ? std::min(step * T(eta_plus), T(step_max))
               : agree < 0 ? std::max(step * T(eta_minus), T(step_min))
                           : step;
        prev = agree < 0 ? T(0) : dx;
        x -= step * T((prev > 0) - (prev < 0));
      },
      s.prev, s.step);
}

namespace {

// Adam's bias corrections at step t, folded into two scalars so the loop does one sqrt and one
// divide per element: x -= step_size * m / (sqrt(v) * inv_sqrt_bc2 + eps).
struct AdamScalars {
  double step_size, inv_sqrt_bc2;
  AdamScalars(double lr, double b1, double b2, int64_t t)
      : step_size(lr / (1 - std::pow(b1, double(t)))),
        inv_sqrt_bc2(1 / std::sqrt(1 - std::pow(b2, double(t)))) {}
  static AdamScalars none(double lr) { return AdamScalars(lr); }  // no bias correction

 private:
  explicit AdamScalars(double lr) : step_size(lr), inv_sqrt_bc2(1) {}
};

// One Adam step with the parameter first scaled by `keep` (1 for Adam, 1 - lr wd for AdamW) and
// the step scaled by `rect` (RAdam's rectification).
void adam_step(const char* rule, Adam::State& s, const Tensor& param, const Tensor& grad, double lr,
               double b1, double b2, double eps, double keep, double rect = 1) {
  const int64_t t = s.step + 1;
  const AdamScalars c(lr * rect, b1, b2, t);
  foreach_element(
      rule, param, grad,
      [=](auto& x, auto dx, auto& m, auto& v) {
        using T = decltype(dx);
        m = T(b1) * m + T(1 - b1) * dx;
        v = T(b2) * v + T(1 - b2) * dx * dx;
        x = x * T(keep) - T(c.step_size) * m / (std::sqrt(v) * T(c.inv_sqrt_bc2) + T(eps));
      },
      s.m, s.v);
  s.step = t;
}

}  // namespace

void Adam::apply(State& s, const Tensor& param, const Tensor& grad) const {
  adam_step("Adam", s, param, grad, lr, beta1, beta2, eps, 1.0);
}

void AdamW::apply(State& s, const Tensor& param, const Tensor& grad) const {
  adam_step("AdamW", s, param, grad, lr, beta1, beta2, eps,
            couple ? 1 - lr * weight_decay : 1 - weight_decay);
}

void RAdam::apply(State& s, const Tensor& param, const Tensor& grad) const {
  const int64_t t = s.step + 1;
  const double rho_inf = 2 / (1 - beta2) - 1;
  const double b2t = std::pow(beta2, double(t));
  const double rho = rho_inf - 2 * double(t) * b2t / (1 - b2t);
  if (rho > threshold) {
    const double r =
        std::sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho));
    return adam_step("RAdam", s, param, grad, lr, beta1, beta2, eps, 1.0, r);
  }
  // Unrectified: the moments advance as Adam's, the step is the bias-corrected momentum alone.
  const double step_size = lr / (1 - std::pow(beta1, double(t)));
  foreach_element(
      "RAdam", param, grad,
      [b1 = beta1, b2 = beta2, step_size](auto& x, auto dx, auto& m, auto& v) {
        using T = decltype(dx);
        m = T(b1) * m + T(1 - b1) * dx;
        v = T(b2) * v + T(1 - b2) * dx * dx;
        x -= T(step_size) * m;
      },
      s.m, s.v);
  s.step = t;
}

void AdaMax::apply(State& s, const Tensor& param, const Tensor& grad) const {
  const int64_t t = s.step + 1;
  const double step_size = lr / (1 - std::pow(beta1, double(t)));
  foreach_element(
      "AdaMax", param, grad,
      [b1 = beta1, b2 = beta2, eps = eps, step_size](auto& x, auto dx, auto& m, auto& u) {
        using T = decltype(dx);
        m = T(b1) * m + T(1 - b1) * dx;
        u = std::max(T(b2) * u, std::abs(dx));
        x -= T(step_size) * m / (u + T(eps));
      },
      s.m, s.u);
  s.step = t;
}

void OAdam::apply(State& s, const Tensor& param, const Tensor& grad) const {
  const int64_t t = s.step + 1;
  const AdamScalars c(lr, beta1, beta2, t);
  foreach_element(
      "OAdam", param, grad,
      [b1 = beta1, b2 = beta2, eps = eps, c](auto& x, auto dx, auto& m, auto& v, auto& term) {
        using T = decltype(dx);
        m = T(b1) * m + T(1 - b1) * dx;
        v = T(b2) * v + T(1 - b2) * dx * dx;
        const T prev = term;
        term = T(c.step_size) * m / (std::sqrt(v) * T(c.inv_sqrt_bc2) + T(eps));
        x -= T(2) * term - prev;
      },
      s.m, s.v, s.term);
  s.step = t;
}

void AdaGrad::apply(State& s, const Tensor& param, const Tensor& grad) const {
  foreach_element(
      "AdaGrad", param, grad,
      [lr = lr, eps = eps](auto& x, auto dx, auto& acc) {
        using T = decltype(dx);
        acc += dx * dx;
        x -= T(lr) * dx / (std::sqrt(acc) + T(eps));
      },
      s.acc);
}

void AdaDelta::apply(State& s, const Tensor& param, const Tensor& grad) const {
  foreach_element(
      "AdaDelta", param, grad,
      [rho = rho, eps = eps](auto& x, auto dx, auto& acc, auto& dacc) {
        using T = decltype(dx);
        acc = T(rho) * acc + T(1 - rho) * dx * dx;
        // eps stays inside both roots: it is what starts the updates from dacc = 0.
        const T d = dx * std::sqrt(dacc + T(eps)) / std::sqrt(acc + T(eps));
        dacc = T(rho) * dacc + T(1 - rho) * d * d;
        x -= d;
      },
      s.acc, s.delta_acc);
}

void AMSGrad::apply(State& s, const Tensor& param, const Tensor& grad) const {
  const int64_t t = s.step + 1;
  // Optimisers.jl's form has no bias correction: step_size = lr, inv_sqrt_bc2 = 1.
  const AdamScalars c =
      variant == pytorch ? AdamScalars(lr, beta1, beta2, t) : AdamScalars::none(lr);
  foreach_element(
      "AMSGrad", param, grad,
      [b1 = beta1, b2 = beta2, eps = eps, c](auto& x, auto dx, auto& m, auto& v, auto& vmax) {
        using T = decltype(dx);
        m = T(b1) * m + T(1 - b1) * dx;
        v = T(b2) * v + T(1 - b2) * dx * dx;
        vmax = std::max(vmax, v);
        x -= T(c.step_size) * m / (std::sqrt(vmax) * T(c.inv_sqrt_bc2) + T(eps));
      },
      s.m, s.v, s.vmax);
  s.step = t;
}

void NAdam::apply(State& s, const Tensor& param, const Tensor& grad) const {
  FX_CHECK(s.mu_product.defined() == (variant == pytorch), "fx::optim::NAdam: variant is ",
           variant == pytorch ? "pytorch" : "optimisers_jl", " but the state was set up for ",
           s.mu_product.defined() ? "pytorch" : "optimisers_jl",
           "; the variants keep different state, so set it before setup");
  const int64_t t = s.step + 1;
  const double b2t = std::pow(beta2, double(t));
  double m_coef, g_coef, v_scale;  // x -= (m_coef m + g_coef dx) / (sqrt(v) v_scale + eps)
  if (variant == pytorch) {
    FX_CHECK(s.mu_product.dtype() == f64 && s.mu_product.numel() == 1,
             "fx::optim::NAdam: the state's mu_product must be one f64 value, got ",
             s.mu_product.dtype(), " ", s.mu_product.shape());
    auto mu = [&](int64_t i) {
      return beta1 * (1 - 0.5 * std::pow(0.96, double(i) * momentum_decay));
    };
    double& product = *s.mu_product.data<double>();  // P_(t-1), host memory (CPU state)
    const double mu_t = mu(t), mu_next = mu(t + 1);
    product *= mu_t;
    m_coef = lr * mu_next / (1 - product * mu_next);
    g_coef = lr * (1 - mu_t) / (1 - product);
    v_scale = 1 / std::sqrt(1 - b2t);
  } else {
    const double b1t = std::pow(beta1, double(t));
    m_coef = lr * beta1 / (1 - beta1 * b1t);  // momentum looked one step ahead
    g_coef = lr * (1 - beta1) / (1 - b1t);
    v_scale = std::sqrt(beta2 / (1 - b2t));
  }
  foreach_element(
      "NAdam", param, grad,
      [b1 = beta1, b2 = beta2, eps = eps, m_coef, g_coef, v_scale](auto& x, auto dx, auto& m,
                                                                   auto& v) {
        using T = decltype(dx);
        m = T(b1) * m + T(1 - b1) * dx;
        v = T(b2) * v + T(1 - b2) * dx * dx;
        x -= (T(m_coef) * m + T(g_coef) * dx) / (std::sqrt(v) * T(v_scale) + T(eps));
      },
      s.m, s.v);
  s.step = t;
}

void AdaBelief::apply(State& s, const Tensor& param, const Tensor& grad) const {
  const int64_t t = s.step + 1;
  const AdamScalars c(lr, beta1, beta2, t);
  foreach_element(
      "AdaBelief", param, grad,
      [b1 = beta1, b2 = beta2, eps = eps, c](auto& x, auto dx, auto& m, auto& belief) {
        using T = decltype(dx);
        m = T(b1) * m + T(1 - b1) * dx;
        const T surprise = dx - m;
        belief = T(b2) * belief + T(1 - b2) * surprise * surprise + T(eps);
        x -= T(c.step_size) * m / (std::sqrt(belief) * T(c.inv_sqrt_bc2) + T(eps));
      },
      s.m, s.v);
  s.step = t;
}

void Lion::apply(State& s, const Tensor& param, const Tensor& grad) const {
  foreach_element(
      "Lion", param, grad,
      [lr = lr, b1 = beta1, b2 = beta2](auto& x, auto dx, auto& m) {
        using T = decltype(dx);
        const T c = T(b1) * m + T(1 - b1) * dx;
        x -= T(lr) * T((c > 0) - (c < 0));
        m = T(b2) * m + T(1 - b2) * dx;
      },
      s.m);
}

}  // namespace fx::optim
