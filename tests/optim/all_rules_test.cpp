// Every Optimisers.jl rule against a scalar re-derivation of its documented formula (written
// here, element by element, independently of src/optim/rules.cpp), over 30 steps of a gradient
// that depends on the parameter; plus gradient transforms, chains, freeze/thaw and adjust.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <fluxion/ops.hpp>
#include <fluxion/optim/adjust.hpp>
#include <fluxion/optim/by_name.hpp>
#include <fluxion/optim/rules.hpp>
#include <fluxion/optim/transforms.hpp>
#include <fluxion/optim/update.hpp>
#include <fluxion/testing.hpp>

using namespace fx::optim;

namespace {

std::vector<double> values(const fx::Tensor& t) { return fx::to_vector<double>(t); }
void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-15) << "element " << i;
}
double sgn(double v) { return double((v > 0) - (v < 0)); }

// The test problem's gradient: coupled to x, of both signs and varying magnitude.
double grad_of(double x, int i, int t) { return std::sin(1.3 * x + 0.7 * i + 0.2 * t) * (1 + i); }

// One element's reference step: x, its gradient, its state (starts as `init`), the step t >= 1.
using RefStep = std::function<void(double& x, double g, std::vector<double>& s, int t)>;

template <class R>
void expect_matches_reference(const R& rule, std::vector<double> init, const RefStep& ref,
                              fx::DType dtype = fx::f64, int steps = 30) {
  const std::vector<double> x0{0.5, -1.2, 2.0, 0.05, -0.3};
  std::vector<fx::Tensor> model{fx::from_vector(x0).astype(dtype)};
  auto opt = setup(rule, model);
  std::vector<double> x = x0;
  std::vector<std::vector<double>> state(x.size(), init);
  for (int t = 1; t <= steps; ++t) {
    std::vector<double> xs = values(model[0]), g(x.size());
    for (size_t i = 0; i < x.size(); ++i) g[i] = grad_of(xs[i], int(i), t);
    update(opt, model, std::vector<fx::Tensor>{fx::from_vector(g).astype(dtype)});
    for (size_t i = 0; i < x.size(); ++i) ref(x[i], grad_of(x[i], int(i), t), state[i], t);
  }
  const double tol = dtype == fx::f64 ? 1e-11 : 2e-5;
  auto got = values(model[0]);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(got[i], x[i], tol * std::max(1.0, std::abs(x[i]))) << "element " << i;
  EXPECT_NE(got, x0);
}

}  // namespace

TEST(AllRules, Nesterov) {
  const double lr = 0.05, rho = 0.8;
  expect_matches_reference(Nesterov{lr, rho}, {0}, [&](double& x, double g, auto& s, int) {
    double& v = s[0];
    x += rho * rho * v - (1 + rho) * lr * g;  // Optimisers.jl: x -= -rho^2 v + (1 + rho) lr g
    v = rho * v - lr * g;
  });
}

TEST(AllRules, RMSPropPlainAndCentred) {
  for (bool centred : {false, true}) {
    RMSProp r{.lr = 0.01, .rho = 0.8, .eps = 1e-3, .centred = centred};
    expect_matches_reference(r, {0, 0}, [&](double& x, double g, auto& s, int) {
      s[0] = r.rho * s[0] + (1 - r.rho) * g * g;
      if (centred) s[1] = r.rho * s[1] + (1 - r.rho) * g;
      x -= r.lr * g / (std::sqrt(s[0] - s[1] * s[1]) + r.eps);
    });
  }
}

TEST(AllRules, Rprop) {
  Rprop r{.lr = 0.1, .eta_minus = 0.4, .eta_plus = 1.5, .step_min = 0.01, .step_max = 0.3};
  expect_matches_reference(r, {0, r.lr}, [&](double& x, double g, auto& s, int) {
    double &prev = s[0], &step = s[1];
    if (prev * g > 0) step = std::min(step * r.eta_plus, r.step_max);
    else if (prev * g < 0) step = std::max(step * r.eta_minus, r.step_min);
    prev = prev * g < 0 ? 0 : g;
    x -= step * sgn(prev);
  });
}

// Adam's bias-corrected step for the moments m, v at step t.
double adam_step(double m, double v, double b1, double b2, double eps, int t) {
  return m / (1 - std::pow(b1, t)) / (std::sqrt(v / (1 - std::pow(b2, t))) + eps);
}

TEST(AllRules, AdamAndAdamWCoupledAndNot) {
  const double lr = 0.02, b1 = 0.8, b2 = 0.95, eps = 1e-6, wd = 0.1;
  auto moments = [&](double g, auto& s) {
    s[0] = b1 * s[0] + (1 - b1) * g;
    s[1] = b2 * s[1] + (1 - b2) * g * g;
  };
  expect_matches_reference(Adam{lr, b1, b2, eps}, {0, 0}, [&](double& x, double g, auto& s, int t) {
    moments(g, s);
    x -= lr * adam_step(s[0], s[1], b1, b2, eps, t);
  });
  for (bool couple : {true, false}) {
    AdamW r{lr, b1, b2, eps, wd, couple};
    expect_matches_reference(r, {0, 0}, [&](double& x, double g, auto& s, int t) {
      moments(g, s);
      const double a = adam_step(s[0], s[1], b1, b2, eps, t);
      x -= couple ? lr * (a + wd * x) : lr * a + wd * x;
    });
  }
}

TEST(AllRules, RAdamRectifiesAfterTheThreshold) {
  const double lr = 0.02, b1 = 0.8, b2 = 0.9, eps = 1e-6;  // rho_inf = 19: rectified from t = 5
  for (double threshold : {4.0, 5.0}) {
    RAdam r{lr, b1, b2, eps, threshold};
    expect_matches_reference(r, {0, 0}, [&](double& x, double g, auto& s, int t) {
      s[0] = b1 * s[0] + (1 - b1) * g;
      s[1] = b2 * s[1] + (1 - b2) * g * g;
      const double rinf = 2 / (1 - b2) - 1, bt = std::pow(b2, t);
      const double rho = rinf - 2 * t * bt / (1 - bt);
      if (rho > threshold) {
        const double rect =
            std::sqrt((rho - 4) * (rho - 2) * rinf / ((rinf - 4) * (rinf - 2) * rho));
        x -= lr * rect * adam_step(s[0], s[1], b1, b2, eps, t);
      } else {
        x -= lr * s[0] / (1 - std::pow(b1, t));
      }
    });
  }
}

TEST(AllRules, AdaMaxAndOAdam) {
  const double lr = 0.03, b1 = 0.7, b2 = 0.9, eps = 1e-6;
  expect_matches_reference(AdaMax{lr, b1, b2, eps}, {0, 0},
                           [&](double& x, double g, auto& s, int t) {
                             s[0] = b1 * s[0] + (1 - b1) * g;
                             s[1] = std::max(b2 * s[1], std::abs(g));
                             x -= lr / (1 - std::pow(b1, t)) * s[0] / (s[1] + eps);
                           });
  expect_matches_reference(OAdam{lr, b1, b2, eps}, {0, 0, 0},
                           [&](double& x, double g, auto& s, int t) {
                             s[0] = b1 * s[0] + (1 - b1) * g;
                             s[1] = b2 * s[1] + (1 - b2) * g * g;
                             const double term = lr * adam_step(s[0], s[1], b1, b2, eps, t);
                             x -= 2 * term - s[2];
                             s[2] = term;
                           });
}

TEST(AllRules, AdaGradAdaDeltaAMSGrad) {
  expect_matches_reference(AdaGrad{0.2, 1e-3}, {1e-3}, [&](double& x, double g, auto& s, int) {
    s[0] += g * g;  // the accumulator starts at eps
    x -= 0.2 * g / (std::sqrt(s[0]) + 1e-3);
  });
  expect_matches_reference(AdaDelta{0.8, 1e-4}, {0, 0}, [&](double& x, double g, auto& s, int) {
    s[0] = 0.8 * s[0] + 0.2 * g * g;
    const double d = g * std::sqrt(s[1] + 1e-4) / std::sqrt(s[0] + 1e-4);
    s[1] = 0.8 * s[1] + 0.2 * d * d;
    x -= d;
  });
  const double lr = 0.05, b1 = 0.8, b2 = 0.9, eps = 1e-4;
  expect_matches_reference(AMSGrad{lr, b1, b2, eps}, {eps, eps, eps},
                           [&](double& x, double g, auto& s, int) {
                             s[0] = b1 * s[0] + (1 - b1) * g;
                             s[1] = b2 * s[1] + (1 - b2) * g * g;
                             s[2] = std::max(s[2], s[1]);
                             x -= lr * s[0] / (std::sqrt(s[2]) + eps);
                           });
}

TEST(AllRules, NAdamAdaBeliefLion) {
  const double lr = 0.03, b1 = 0.8, b2 = 0.9, eps = 1e-6;
  expect_matches_reference(NAdam{lr, b1, b2, eps}, {0, 0},
                           [&](double& x, double g, auto& s, int t) {
                             s[0] = b1 * s[0] + (1 - b1) * g;
                             s[1] = b2 * s[1] + (1 - b2) * g * g;
                             const double b1t = std::pow(b1, t), b2t = std::pow(b2, t);
                             x -= lr * (b1 * s[0] / (1 - b1 * b1t) + (1 - b1) * g / (1 - b1t)) /
                                  (std::sqrt(s[1] * b2 / (1 - b2t)) + eps);
                           });
  expect_matches_reference(AdaBelief{lr, b1, b2, eps}, {0, 0},
                           [&](double& x, double g, auto& s, int t) {
                             s[0] = b1 * s[0] + (1 - b1) * g;
                             s[1] = b2 * s[1] + (1 - b2) * (g - s[0]) * (g - s[0]) + eps;
                             x -= lr * adam_step(s[0], s[1], b1, b2, eps, t);
                           });
  expect_matches_reference(Lion{lr, b1, b2}, {0}, [&](double& x, double g, auto& s, int) {
    x -= lr * sgn(b1 * s[0] + (1 - b1) * g);  // the paper's update, from the old momentum
    s[0] = b2 * s[0] + (1 - b2) * g;
  });
}

// The torch.optim forms (variant = pytorch), from the algorithm boxes of its documentation.
TEST(AllRules, PytorchVariantsOfAMSGradAndNAdam) {
  const double lr = 0.05, b1 = 0.8, b2 = 0.9, eps = 1e-4;
  expect_matches_reference(
      AMSGrad{lr, b1, b2, eps, AMSGrad::pytorch}, {0, 0, 0},
      [&](double& x, double g, auto& s, int t) {
        s[0] = b1 * s[0] + (1 - b1) * g;
        s[1] = b2 * s[1] + (1 - b2) * g * g;
        s[2] = std::max(s[2], s[1]);  // before the bias correction, as torch Adam(amsgrad = true)
        const double mhat = s[0] / (1 - std::pow(b1, t));
        x -= lr * mhat / (std::sqrt(s[2] / (1 - std::pow(b2, t))) + eps);
      });
  for (double psi : {4e-3, 0.5}) {
    NAdam rule{lr, b1, b2, eps, NAdam::pytorch, psi};
    expect_matches_reference(rule, {0, 0, 1}, [&](double& x, double g, auto& s, int t) {
      auto mu = [&](int i) { return b1 * (1 - 0.5 * std::pow(0.96, i * psi)); };
      s[0] = b1 * s[0] + (1 - b1) * g;
      s[1] = b2 * s[1] + (1 - b2) * g * g;
      s[2] *= mu(t);  // the product mu_1 ... mu_t
      const double mhat = mu(t + 1) * s[0] / (1 - s[2] * mu(t + 1)) + (1 - mu(t)) * g / (1 - s[2]);
      x -= lr * mhat / (std::sqrt(s[1] / (1 - std::pow(b2, t))) + eps);
    });
  }
  // NAdam's variants keep different state: switching after setup is refused, naming both.
  std::vector<fx::Tensor> model{fx::from_vector(std::vector<double>{1.0, 2.0})};
  auto opt = setup(NAdam{}, model);
  adjust(opt, [](NAdam& r) { r.variant = NAdam::pytorch; });
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] { update(opt, model, std::vector<fx::Tensor>{fx::ones_like(model[0])}); },
      {"NAdam", "pytorch", "optimisers_jl"}));
}

TEST(AllRules, VariantsByName) {
  bool nadam = false, amsgrad = false, plain = false;
  with_rule_named("nadam_pytorch", [&](auto r) {
    if constexpr (std::is_same_v<decltype(r), NAdam>) nadam = r.variant == Variant::pytorch;
  });
  with_rule_named("amsgrad_pytorch", [&](auto r) {
    if constexpr (std::is_same_v<decltype(r), AMSGrad>) amsgrad = r.variant == Variant::pytorch;
  });
  with_rule_named("nadam", [&](auto r) {
    if constexpr (std::is_same_v<decltype(r), NAdam>)
      plain = r.variant == Variant::optimisers_jl && r.lr == 1e-3;
  });
  EXPECT_TRUE(nadam);
  EXPECT_TRUE(amsgrad);
  EXPECT_TRUE(plain);
  EXPECT_NE(rule_names().find("nadam_pytorch"), std::string::npos);
}

TEST(AllRules, F32RunsTheSameFormulas) {
  expect_matches_reference(
      Adam{0.02, 0.8, 0.95, 1e-6}, {0, 0},
      [&](double& x, double g, auto& s, int t) {
        s[0] = 0.8 * s[0] + 0.2 * g;
        s[1] = 0.95 * s[1] + 0.05 * g * g;
        x -= 0.02 * adam_step(s[0], s[1], 0.8, 0.95, 1e-6, t);
      },
      fx::f32, 10);
}

TEST(Transforms, AloneEachIsDescentWithRateOne) {
  auto run = [](auto rule, std::vector<double> g) {
    std::vector<fx::Tensor> m{fx::tensor({1.0, -2.0, 0.0}, fx::f64)};
    auto opt = setup(rule, m);
    update(opt, m, std::vector<fx::Tensor>{fx::from_vector(g)});
    return values(m[0]);
  };
  expect_near(run(WeightDecay{0.5}, {1, 1, 1}), {-0.5, -2.0, -1.0});
  expect_near(run(SignDecay{0.25}, {0, 0, 0}), {0.75, -1.75, 0.0});
  expect_near(run(ClipGrad{0.5}, {3, -0.25, -9}), {0.5, -1.75, 0.5});
  // ClipNorm per leaf: |(3, 4)| = 5 scaled to 1; under the threshold nothing changes.
  expect_near(run(ClipNorm{1.0}, {3, 4, 0}), {1 - 0.6, -2 - 0.8, 0});
  expect_near(run(ClipNorm{10.0}, {3, 4, 0}), {-2, -6, 0});
  expect_near(run(ClipNorm{1.0, 1.0}, {1, 1, 2}), {0.75, -2.25, -0.5});
  expect_near(run(ClipNorm{1.0, INFINITY}, {1, -4, 2}), {0.75, -1, -0.5});
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        run(ClipNorm{1.0}, {NAN, 0, 0});
      },
      {"ClipNorm", "norm"}));
}

TEST(Transforms, ClipNormIsPerLeaf) {
  std::vector<fx::Tensor> m{fx::zeros({2}, fx::f64), fx::zeros({1}, fx::f64)};
  auto opt = setup(OptimiserChain(ClipNorm{1.0}, Descent{1.0}), m);
  update(opt, m,
         std::vector<fx::Tensor>{fx::tensor({3.0, 4.0}, fx::f64), fx::tensor({0.5}, fx::f64)});
  expect_near(values(m[0]), {-0.6, -0.8});
  expect_near(values(m[1]), {-0.5});  // its own norm is under 1
}

TEST(Chains, EachRuleTransformsTheGradientForTheNext) {
  // Optimisers.jl's doc example: ClipGrad(1) then Descent(0.1) on (0.3, 1, 7).
  std::vector<fx::Tensor> m{fx::zeros({3}, fx::f64)};
  auto opt = setup(OptimiserChain(ClipGrad{1.0}, Descent{0.1}), m);
  update(opt, m, std::vector<fx::Tensor>{fx::tensor({0.3, 1.0, 7.0}, fx::f64)});
  auto x = values(m[0]);
  EXPECT_NEAR(x[0], -0.03, 1e-15);
  EXPECT_NEAR(x[1], -0.1, 1e-15);
  EXPECT_NEAR(x[2], -0.1, 1e-15);
  // Weight decay before Momentum: the velocity sees dx + lambda x.
  std::vector<fx::Tensor> w{fx::tensor({2.0}, fx::f64)};
  auto wopt = setup(OptimiserChain(WeightDecay{0.5}, Momentum{0.1, 0.5}), w);
  update(wopt, w, std::vector<fx::Tensor>{fx::tensor({1.0}, fx::f64)});  // v = 0.1 * 2
  update(wopt, w, std::vector<fx::Tensor>{fx::tensor({1.0}, fx::f64)});  // v = 0.1 + 0.1 * 1.9
  EXPECT_NEAR(values(w[0])[0], 2.0 - 0.2 - 0.29, 1e-15);
  EXPECT_NEAR(values(std::get<1>(wopt.leaves[0].states).velocity)[0], 0.29, 1e-15);
}

TEST(Chains, AccumGradAppliesTheMeanEveryNthStep) {
  // Optimisers.jl's doc example: AccumGrad(2), WeightDecay(0.01), Descent(0.1).
  std::vector<fx::Tensor> m{fx::tensor({1.0}, fx::f64), fx::tensor({2.0}, fx::f64)};
  auto opt = setup(OptimiserChain(AccumGrad{2}, WeightDecay{0.01}, Descent{0.1}), m);
  update(opt, m, std::vector<fx::Tensor>{fx::tensor({33.0}, fx::f64), fx::zeros({1}, fx::f64)});
  EXPECT_EQ(values(m[0]), (std::vector<double>{1.0}));  // not yet
  update(opt, m, std::vector<fx::Tensor>{fx::zeros({1}, fx::f64), fx::tensor({444.0}, fx::f64)});
  EXPECT_NEAR(values(m[0])[0], 1 - 0.1 * (16.5 + 0.01 * 1), 1e-13);
  EXPECT_NEAR(values(m[1])[0], 2 - 0.1 * (222 + 0.01 * 2), 1e-13);
  // The next round starts afresh.
  update(opt, m, std::vector<fx::Tensor>{fx::tensor({4.0}, fx::f64), fx::zeros({1}, fx::f64)});
  update(opt, m, std::vector<fx::Tensor>{fx::tensor({4.0}, fx::f64), fx::zeros({1}, fx::f64)});
  EXPECT_NEAR(values(m[0])[0], -0.651 - 0.1 * (4 - 0.00651), 1e-13);
}

TEST(Chains, NestedChainsAndAdamAtTheEnd) {
  std::vector<fx::Tensor> a{fx::tensor({1.0, -3.0}, fx::f64)}, b{a[0].clone()};
  auto nested = setup(OptimiserChain(OptimiserChain(ClipGrad{0.5}, SignDecay{0.1}), Adam{0.1}), a);
  auto flat = setup(OptimiserChain(ClipGrad{0.5}, SignDecay{0.1}, Adam{0.1}), b);
  for (int i = 0; i < 5; ++i) {
    update(nested, a, std::vector<fx::Tensor>{fx::tensor({2.0, 0.1 * i}, fx::f64)});
    update(flat, b, std::vector<fx::Tensor>{fx::tensor({2.0, 0.1 * i}, fx::f64)});
  }
  EXPECT_EQ(values(a[0]), values(b[0]));
  EXPECT_NE(values(a[0]), (std::vector<double>{1.0, -3.0}));
}

namespace {
struct Two {
  fx::Tensor w, b;
  FX_FIELDS(w, b)
};
struct Model {
  std::vector<Two> layers;
  FX_FIELDS(layers)
};
Model ones_model() {
  return {{{fx::ones({2}, fx::f64), fx::ones({1}, fx::f64)},
           {fx::ones({2}, fx::f64), fx::ones({1}, fx::f64)}}};
}
Model ones_grad() { return ones_model(); }
}  // namespace

TEST(FreezeThaw, FrozenSubtreesKeepParametersAndState) {
  Model m = ones_model();
  auto opt = setup(Momentum{0.1, 0.5}, m);
  freeze(opt, "layers.0");
  update(opt, m, ones_grad());
  EXPECT_EQ(values(m.layers[0].w), (std::vector<double>{1, 1}));
  EXPECT_EQ(values(opt.leaves[0].velocity), (std::vector<double>{0, 0}));
  EXPECT_EQ(values(m.layers[1].w), (std::vector<double>{0.9, 0.9}));
  thaw(opt, "layers.0.b");
  update(opt, m, ones_grad());
  EXPECT_EQ(values(m.layers[0].w), (std::vector<double>{1, 1}));
  EXPECT_NEAR(values(m.layers[0].b)[0], 0.9, 1e-15);
  EXPECT_NEAR(values(m.layers[1].b)[0], 0.9 - 0.15, 1e-15);
  thaw(opt);
  update(opt, m, ones_grad());
  EXPECT_NEAR(values(m.layers[0].w)[0], 0.9, 1e-15);
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { freeze(opt, "layers.2"); },
                                             {"freeze", "layers.2", "layers.0.w"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { freeze(opt, "layers.0.w.x"); }, {"freeze"}));
}

TEST(Adjust, LearningRateNamedFieldsAndSubtrees) {
  Model m = ones_model();
  auto opt = setup(OptimiserChain(ClipGrad{10.0}, Momentum{0.1, 0.5}), m);
  adjust(opt, 0.2);
  adjust(opt, 0.3, "layers.1");
  adjust(opt, &Momentum::rho, 0.0);
  adjust(
      opt, [](ClipGrad& c) { c.delta = 0.5; }, "layers.0.w");
  update(opt, m, ones_grad());
  EXPECT_NEAR(values(m.layers[0].w)[0], 1 - 0.2 * 0.5, 1e-15);  // clipped to 0.5
  EXPECT_NEAR(values(m.layers[0].b)[0], 1 - 0.2, 1e-15);
  EXPECT_NEAR(values(m.layers[1].w)[0], 1 - 0.3, 1e-15);
  EXPECT_EQ(std::get<1>(opt.rules[3].rules).lr, 0.3);
  EXPECT_EQ(std::get<1>(opt.rules[0].rules).rho, 0.0);
  // A rule without a learning rate is left as it is; changing RMSProp's variant is refused.
  auto ad = setup(AdaDelta{}, m);
  adjust(ad, 0.5);
  EXPECT_EQ(ad.rules[0].rho, 0.9);
  auto rms = setup(RMSProp{}, m);
  adjust(rms, &RMSProp::centred, true);
  EXPECT_TRUE(
      fx::testing::throws_mentioning([&] { update(rms, m, ones_grad()); }, {"RMSProp", "centred"}));
}
