#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/data/dataloader.hpp>
#include <fluxion/nn/activations.hpp>
#include <fluxion/nn/losses.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/ops/primitives.hpp>
#include <fluxion/testing.hpp>

namespace {

fx::Tensor onehot(const std::vector<int64_t>& labels, int64_t classes, fx::DType t = fx::f64) {
  std::vector<double> v(labels.size() * classes, 0.0);
  for (size_t i = 0; i < labels.size(); ++i) v[i * classes + labels[i]] = 1;
  return fx::from_vector(v, {int64_t(labels.size()), classes}).astype(t);
}

}  // namespace

TEST(Losses, MseIsTheMeanSquaredError) {
  auto yhat = fx::tensor({1, 2, 3, 4}, fx::f64).reshape({2, 2});
  auto y = fx::tensor({0, 2, 5, 4}, fx::f64).reshape({2, 2});
  EXPECT_DOUBLE_EQ(fx::mse(yhat, y).item(), (1.0 + 0 + 4 + 0) / 4);
  EXPECT_EQ(fx::mse(yhat, y).ndim(), 0);
}

TEST(Losses, LogitcrossentropyMatchesItsDefinition) {
  auto x = fx::tensor({1, 2, 3, 0.5, -1, 2}, fx::f64).reshape({2, 3});
  auto labels = fx::tensor({2, 0}, fx::i64);
  double lse0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  double lse1 = std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0));
  double want = ((lse0 - 3) + (lse1 - 0.5)) / 2;
  EXPECT_NEAR(fx::logitcrossentropy(x, labels).item(), want, 1e-12);
}

TEST(Losses, LogitcrossentropyWithLabelsEqualsOneHot) {
  auto x = fx::testing::randn({5, 4}, {.seed = 1});
  std::vector<int64_t> ls = {3, 0, 1, 1, 2};
  auto labels = fx::from_vector(ls);
  auto y = onehot(ls, 4);
  EXPECT_NEAR(fx::logitcrossentropy(x, labels).item(), fx::logitcrossentropy(x, y).item(), 1e-12);
  EXPECT_NEAR(fx::logitcrossentropy(x, labels.astype(fx::i32)).item(),
              fx::logitcrossentropy(x, y).item(), 1e-12);
  auto g_labels =
      fx::gradient([&](const fx::Tensor& x) { return fx::logitcrossentropy(x, labels); }, x);
  auto g_onehot = fx::gradient([&](const fx::Tensor& x) { return fx::logitcrossentropy(x, y); }, x);
  EXPECT_TRUE(fx::allclose(g_labels, g_onehot, 1e-12, 1e-14));
  // d/dx = (softmax(x) - y) / N
  EXPECT_TRUE(fx::allclose(g_onehot, (fx::softmax(x) - y) / 5.0, 1e-12, 1e-14));
}

// With integer labels the loss is one primitive: its first-order pullback is one fused kernel,
// its recorded (higher-order) pullback and its pushforward composed ops. All three must agree
// with (softmax(x) - onehot(y)) / N.
TEST(Losses, LogitcrossentropyPrimitiveAgreesInEveryMode) {
  for (fx::DType t : {fx::f32, fx::f64}) {
    auto x = fx::testing::randn({7, 5}, {.seed = 11, .dtype = t});
    std::vector<int64_t> ls = {4, 0, 2, 2, 1, 3, 0};
    auto labels = fx::from_vector(ls);
    auto want = (fx::softmax(x) - onehot(ls, 5, t)) / 7.0;
    auto f = [&](const fx::Tensor& a) { return fx::logitcrossentropy(a, labels); };
    const double tol = t == fx::f32 ? 1e-6 : 1e-14;
    EXPECT_TRUE(fx::allclose(fx::gradient(f, x), want, tol, tol));
    // Inside an outer gradient the pullback is recorded: the composed form runs.
    auto v = fx::testing::randn({7, 5}, {.seed = 12, .dtype = t});
    auto gv = fx::gradient([&](const fx::Tensor& a) { return fx::sum(fx::gradient(f, a) * v); }, x);
    EXPECT_EQ(gv.shape(), x.shape());
    EXPECT_GT(fx::max(fx::abs(gv)).item(), 0.0);
    auto [y, dy] = fx::jvp(f, x, v);
    EXPECT_NEAR(y.item(), f(x).item(), tol);
    EXPECT_NEAR(dy.item(), fx::sum(want * v).item(), 10 * tol);
  }
  // Bound directly, the primitive checks its labels in the kernel.
  auto x = fx::zeros({2, 3}, fx::f64);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)fx::bind(fx::logitcrossentropy_p, {x, fx::tensor({1, 3}, fx::i64)});
      },
      {"logitcrossentropy", "label 3", "position 1", "3 classes"}));
}

TEST(Losses, CrossentropyOnProbabilitiesAgreesWithTheLogitForm) {
  auto x = fx::testing::randn({6, 3}, {.seed = 2});
  std::vector<int64_t> ls = {0, 1, 2, 2, 1, 0};
  auto labels = fx::from_vector(ls);
  double want = fx::logitcrossentropy(x, labels).item();
  EXPECT_NEAR(fx::crossentropy(fx::softmax(x), labels).item(), want, 1e-12);
  EXPECT_NEAR(fx::crossentropy(fx::softmax(x), onehot(ls, 3)).item(), want, 1e-12);
}

TEST(Losses, BinaryCrossentropyAgreesWithTheLogitForm) {
  auto x = fx::testing::randn({4, 3}, {.seed = 3});
  auto y = fx::testing::uniform({4, 3}, {.seed = 4, .lo = 0, .hi = 1});
  EXPECT_NEAR(fx::binarycrossentropy(fx::sigmoid(x), y).item(),
              fx::logitbinarycrossentropy(x, y).item(), 1e-12);
  // A confident, right prediction costs almost nothing; the logit form does not overflow.
  auto big = fx::tensor({100, -100}, fx::f32);
  auto t = fx::tensor({1, 0}, fx::f32);
  EXPECT_NEAR(fx::logitbinarycrossentropy(big, t).item(), 0.0, 1e-6);
  EXPECT_NEAR(fx::logitbinarycrossentropy(big, fx::tensor({0, 1}, fx::f32)).item(), 100.0, 1e-3);
}

TEST(Losses, GradientsMatchFiniteDifferences) {
  auto x = fx::testing::randn({4, 3}, {.seed = 5});
  auto p = fx::softmax(fx::testing::randn({4, 3}, {.seed = 6}));
  auto yprob = fx::softmax(fx::testing::randn({4, 3}, {.seed = 7}));
  auto y01 = fx::testing::uniform({4, 3}, {.seed = 8, .lo = 0.05, .hi = 0.95});
  auto labels = fx::tensor({2, 0, 1, 2}, fx::i64);
  auto target = fx::testing::randn({4, 3}, {.seed = 9});
  auto check = [](const char* name, auto f, const fx::Tensor& at) {
    auto r = fx::testing::gradcheck(f, at);
    EXPECT_TRUE(r) << name << ": " << r;
  };
  check(
      "mse", [&](const fx::Tensor& a) { return fx::mse(a, target); }, x);
  check(
      "logitce labels", [&](const fx::Tensor& a) { return fx::logitcrossentropy(a, labels); }, x);
  check(
      "logitce probs", [&](const fx::Tensor& a) { return fx::logitcrossentropy(a, yprob); }, x);
  check(
      "ce labels", [&](const fx::Tensor& a) { return fx::crossentropy(a, labels); }, p);
  check(
      "ce probs", [&](const fx::Tensor& a) { return fx::crossentropy(a, yprob); }, p);
  check(
      "bce", [&](const fx::Tensor& a) { return fx::binarycrossentropy(a, y01); }, fx::sigmoid(x));
  check(
      "logitbce", [&](const fx::Tensor& a) { return fx::logitbinarycrossentropy(a, y01); }, x);
}

TEST(Losses, ClassAxisIsLastSoSequencesWork) {
  auto x = fx::testing::randn({2, 3, 4}, {.seed = 10});
  auto labels = fx::tensor({0, 1, 2, 3, 3, 0}, fx::i64).reshape({2, 3});
  auto flat = fx::logitcrossentropy(x.reshape({6, 4}), labels.reshape({6}));
  EXPECT_NEAR(fx::logitcrossentropy(x, labels).item(), flat.item(), 1e-12);
}

TEST(Losses, ShapeMismatchNamesTheLossAndBothShapes) {
  auto a = fx::zeros({4, 3}), b = fx::zeros({4, 2});
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::mse(a, b); }, {"mse", "(4, 3)", "(4, 2)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::logitcrossentropy(a, b); },
                                             {"logitcrossentropy", "(4, 3)", "(4, 2)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::crossentropy(a, b); },
                                             {"crossentropy", "(4, 3)", "(4, 2)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::binarycrossentropy(a, b); },
                                             {"binarycrossentropy", "(4, 3)", "(4, 2)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::logitbinarycrossentropy(a, b); },
                                             {"logitbinarycrossentropy", "(4, 3)", "(4, 2)"}));
  auto labels = fx::zeros({5}, fx::i64);
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::logitcrossentropy(a, labels); },
                                             {"logitcrossentropy", "(5,)", "(4, 3)", "(4,)"}));
}

TEST(Losses, LabelOutOfRangeNamesTheLabelAndItsPosition) {
  auto x = fx::zeros({3, 4});
  auto labels = fx::tensor({0, 4, 1}, fx::i64);
  EXPECT_TRUE(
      fx::testing::throws_mentioning([&] { fx::logitcrossentropy(x, labels); },
                                     {"logitcrossentropy", "label 4", "position 1", "4 classes"}));
  auto neg = fx::tensor({0, 1, -1}, fx::i32);
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::crossentropy(x, neg); },
                                             {"crossentropy", "label -1", "position 2"}));
}

TEST(Losses, IntegerPredictionIsRejected) {
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] {
        fx::logitcrossentropy(fx::zeros({2, 3}, fx::i64), fx::zeros({2}, fx::i64));
      },
      {"logitcrossentropy", "floating", "(2, 3)"}));
}

// --- agg, and every Flux loss ---------------------------------------------------------------------

namespace {

constexpr double kEps = 2.220446049250313e-16;  // f64 machine epsilon, Flux's default eps

struct Elementwise {
  const char* name;
  std::function<fx::Tensor(const fx::Tensor&, const fx::Tensor&, const fx::Agg&)> loss;
  double (*ref)(double yhat, double y);  // the per-element definition, on scalars
  bool signed_targets;                   // targets +-1 and unbounded predictions (hinges)
};

const Elementwise kElementwise[] = {
    {"mae", [](auto& a, auto& b, auto& g) { return fx::mae(a, b, g); },
     [](double a, double b) { return std::abs(a - b); }, false},
    {"mse", [](auto& a, auto& b, auto& g) { return fx::mse(a, b, g); },
     [](double a, double b) { return (a - b) * (a - b); }, false},
    {"msle", [](auto& a, auto& b, auto& g) { return fx::msle(a, b, g); },
     [](double a, double b) { return std::pow(std::log((a + kEps) / (b + kEps)), 2); }, false},
    {"huber_loss(0.2)", [](auto& a, auto& b, auto& g) { return fx::huber_loss(a, b, g, 0.2); },
     [](double a, double b) {
       double e = std::abs(a - b);
       return e < 0.2 ? 0.5 * e * e : 0.2 * (e - 0.1);
     },
     false},
    {"binarycrossentropy",
     [](auto& a, auto& b, auto& g) { return fx::binarycrossentropy(a, b, g); },
     [](double p, double y) { return -y * std::log(p + kEps) - (1 - y) * std::log(1 - p + kEps); },
     false},
    {"logitbinarycrossentropy",
     [](auto& a, auto& b, auto& g) { return fx::logitbinarycrossentropy(a, b, g); },
     [](double x, double y) {
       return -y * std::log(1 / (1 + std::exp(-x))) -
              (1 - y) * std::log(1 - 1 / (1 + std::exp(-x)));
     },
     false},
    {"poisson_loss", [](auto& a, auto& b, auto& g) { return fx::poisson_loss(a, b, g); },
     [](double a, double y) { return a - y * std::log(a); }, false},
    {"hinge_loss", [](auto& a, auto& b, auto& g) { return fx::hinge_loss(a, b, g); },
     [](double a, double y) { return std::max(0.0, 1 - a * y); }, true},
    {"squared_hinge_loss",
     [](auto& a, auto& b, auto& g) { return fx::squared_hinge_loss(a, b, g); },
     [](double a, double y) { return std::pow(std::max(0.0, 1 - a * y), 2); }, true},
    {"binary_focal_loss", [](auto& a, auto& b, auto& g) { return fx::binary_focal_loss(a, b, g); },
     [](double p, double y) {
       double pe = p + kEps, pt = y * pe + (1 - y) * (1 - pe);
       return -(1 - pt) * (1 - pt) * std::log(pt);
     },
     false},
    {"binary_focal_loss(gamma 0.5)",
     [](auto& a, auto& b, auto& g) { return fx::binary_focal_loss(a, b, g, 0.5); },
     [](double p, double y) {
       double pe = p + kEps, pt = y * pe + (1 - y) * (1 - pe);
       return -std::sqrt(1 - pt) * std::log(pt);
     },
     false},
    {"siamese_contrastive_loss",
     [](auto& a, auto& b, auto& g) { return fx::siamese_contrastive_loss(a, b, g); },
     [](double d, double y) { return (1 - y) * d * d + y * std::pow(std::max(0.0, 1 - d), 2); },
     false},
    {"siamese_contrastive_loss(margin 0.5)",
     [](auto& a, auto& b, auto& g) { return fx::siamese_contrastive_loss(a, b, g, 0.5); },
     [](double d, double y) { return (1 - y) * d * d + y * std::pow(std::max(0.0, 0.5 - d), 2); },
     false},
};

struct Inputs {
  fx::Tensor yhat, y;
};
Inputs inputs_for(const Elementwise& c) {
  if (c.signed_targets)
    return {fx::testing::randn({4, 5}, {.seed = 31}) * 1.5,
            fx::sign(fx::testing::randn({4, 5}, {.seed = 32}))};
  return {fx::testing::uniform({4, 5}, {.seed = 33, .lo = 0.05, .hi = 0.95}),
          fx::testing::uniform({4, 5}, {.seed = 34, .lo = 0.05, .hi = 0.95})};
}

}  // namespace

TEST(Losses, EveryElementwiseLossMatchesItsScalarDefinitionUnderEachAgg) {
  for (const Elementwise& c : kElementwise) {
    auto [yhat, y] = inputs_for(c);
    auto a = fx::to_vector<double>(yhat), b = fx::to_vector<double>(y);
    auto none = c.loss(yhat, y, fx::agg::none);
    ASSERT_EQ(none.shape(), yhat.shape()) << c.name;
    auto v = fx::to_vector<double>(none);
    double total = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(v[i], c.ref(a[i], b[i]), 1e-12 * (1 + std::abs(v[i]))) << c.name << " at " << i;
      total += c.ref(a[i], b[i]);
    }
    EXPECT_NEAR(c.loss(yhat, y, fx::agg::sum).item(), total, 1e-12 * (1 + total)) << c.name;
    auto mean = c.loss(yhat, y, {});
    EXPECT_EQ(mean.ndim(), 0) << c.name;
    EXPECT_NEAR(mean.item(), total / double(a.size()), 1e-12 * (1 + total)) << c.name;
    double mx = fx::max(none).item();
    auto custom = c.loss(yhat, y, [](const fx::Tensor& l) { return fx::max(l); });
    EXPECT_EQ(custom.item(), mx) << c.name;
  }
}

TEST(Losses, EveryElementwiseLossHasFirstAndSecondOrderGradients) {
  for (const Elementwise& c : kElementwise) {
    auto [yhat, y] = inputs_for(c);
    for (fx::Agg agg : {fx::Agg(fx::agg::mean), fx::Agg(fx::agg::sum)}) {
      auto r = fx::testing::gradcheck([&](const fx::Tensor& a) { return c.loss(a, y, agg); }, yhat);
      EXPECT_TRUE(r) << c.name << ": " << r;
    }
    // The gradient with respect to the target too (soft labels can be learned).
    auto r = fx::testing::gradcheck([&](const fx::Tensor& t) { return c.loss(yhat, t, {}); }, y);
    EXPECT_TRUE(r) << c.name << " (target): " << r;
  }
}

TEST(Losses, ClassLossesTakeAClassAxisAndReturnOneLossPerSampleWithAggNone) {
  auto logits = fx::testing::randn({4, 3, 5}, {.seed = 35});  // (N, T, C)
  auto y = fx::softmax(fx::testing::randn({4, 3, 5}, {.seed = 36}));
  auto per = fx::logitcrossentropy(logits, y, fx::agg::none);
  EXPECT_EQ(per.shape(), (fx::Shape{4, 3}));
  auto lv = fx::to_vector<double>(logits), yv = fx::to_vector<double>(y),
       pv = fx::to_vector<double>(per);
  for (int i = 0; i < 12; ++i) {
    double lse = 0, dot = 0;
    for (int k = 0; k < 5; ++k) lse += std::exp(lv[i * 5 + k]);
    for (int k = 0; k < 5; ++k) dot += yv[i * 5 + k] * (lv[i * 5 + k] - std::log(lse));
    EXPECT_NEAR(pv[i], -dot, 1e-12);
  }
  // The class axis moved to the front gives the same losses with dims = 0.
  auto lt = fx::contiguous(fx::permute(logits, {2, 0, 1})),
       yt = fx::contiguous(fx::permute(y, {2, 0, 1}));
  EXPECT_TRUE(fx::allclose(fx::logitcrossentropy(lt, yt, fx::agg::none, 0), per, 1e-12, 1e-14));
  auto p = fx::softmax(logits);
  EXPECT_TRUE(fx::allclose(
      fx::crossentropy(fx::contiguous(fx::permute(p, {2, 0, 1})), yt, fx::agg::none, 0),
      fx::crossentropy(p, y, fx::agg::none), 1e-12, 1e-14));
  EXPECT_NEAR(fx::crossentropy(p, y).item(), fx::logitcrossentropy(logits, y).item(), 1e-12);
  EXPECT_NEAR(fx::logitcrossentropy(logits, y, fx::agg::sum).item(), fx::sum(per).item(), 1e-12);
  // Labels with a non-mean agg take the composed path; they agree with one-hot targets.
  auto labels = fx::tensor({0, 4, 2, 1, 3, 3, 0, 1, 2, 4, 4, 0}, fx::i64).reshape({4, 3});
  auto onehot_y = fx::data::onehot(labels, 5).astype(fx::f64);
  EXPECT_TRUE(fx::allclose(fx::logitcrossentropy(logits, labels, fx::agg::none),
                           fx::logitcrossentropy(logits, onehot_y, fx::agg::none), 1e-12, 1e-14));
  EXPECT_TRUE(fx::allclose(fx::crossentropy(p, labels, fx::agg::sum),
                           fx::crossentropy(p, onehot_y, fx::agg::sum), 1e-12, 1e-14));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::logitcrossentropy(lt, labels, {}, 0); },
                                             {"logitcrossentropy", "class axis last"}));
}

TEST(Losses, KldivergenceIsCrossEntropyLessEntropy) {
  auto p = fx::softmax(fx::testing::randn({6, 4}, {.seed = 37}));
  auto y = fx::softmax(fx::testing::randn({6, 4}, {.seed = 38}));
  auto pv = fx::to_vector<double>(p), yv = fx::to_vector<double>(y);
  double total = 0;
  for (size_t i = 0; i < pv.size(); ++i) total += yv[i] * std::log(yv[i] / pv[i]);
  EXPECT_NEAR(fx::kldivergence(p, y).item(), total / 6, 1e-12);
  EXPECT_NEAR(fx::kldivergence(p, y, fx::agg::sum).item(), total, 1e-12);
  EXPECT_EQ(fx::kldivergence(p, y, fx::agg::none).shape(), (fx::Shape{6}));
  EXPECT_NEAR(fx::kldivergence(y, y).item(), 0, 1e-12);
  // A one-hot target has zero entropy: its 0 log 0 terms are 0, not NaN.
  auto onehot_y = fx::data::onehot(fx::tensor({0, 1, 2, 3, 0, 1}, fx::i64), 4).astype(fx::f64);
  EXPECT_NEAR(fx::kldivergence(p, onehot_y).item(), fx::crossentropy(p, onehot_y).item(), 1e-12);
  auto g = fx::to_vector<double>(
      fx::gradient([&](const fx::Tensor& t) { return fx::kldivergence(p, t); }, onehot_y));
  for (double v : g) EXPECT_TRUE(std::isfinite(v));
}

TEST(Losses, FocalLossWithGammaZeroIsCrossentropy) {
  auto p = fx::softmax(fx::testing::randn({5, 3}, {.seed = 39}));
  auto y = fx::data::onehot(fx::tensor({0, 2, 1, 1, 0}, fx::i64), 3).astype(fx::f64);
  EXPECT_NEAR(fx::focal_loss(p, y, {}, -1, 0.0).item(), fx::crossentropy(p, y).item(), 1e-12);
  // gamma 2 down-weights each sample by (1 - p_label)^2.
  auto pv = fx::to_vector<double>(p),
       per = fx::to_vector<double>(fx::focal_loss(p, y, fx::agg::none));
  int labels[] = {0, 2, 1, 1, 0};
  for (int i = 0; i < 5; ++i) {
    double q = pv[i * 3 + labels[i]] + kEps;
    EXPECT_NEAR(per[i], -(1 - q) * (1 - q) * std::log(q), 1e-12);
  }
}

TEST(Losses, LabelSmoothing) {
  auto y = fx::data::onehot(fx::tensor({1, 0}, fx::i64), 4);
  auto s = fx::to_vector<double>(fx::label_smoothing(y, 0.2));
  EXPECT_NEAR(s[0], 0.05, 1e-7);
  EXPECT_NEAR(s[1], 0.85, 1e-7);
  auto s0 = fx::to_vector<double>(fx::label_smoothing(y.astype(fx::f64), 0.2, 0));  // 2 "classes"
  EXPECT_NEAR(s0[1], 0.9, 1e-15);
  EXPECT_NEAR(s0[0], 0.1, 1e-15);
  auto b = fx::to_vector<double>(fx::binary_label_smoothing(fx::tensor({0, 1}, fx::f64), 0.2));
  EXPECT_NEAR(b[0], 0.1, 1e-15);
  EXPECT_NEAR(b[1], 0.9, 1e-15);
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::label_smoothing(y, 1.5); },
                                             {"label_smoothing", "1.5"}));
}

TEST(Losses, DiceAndTversky) {
  auto yhat = fx::testing::uniform({3, 4}, {.seed = 40, .lo = 0, .hi = 1});
  auto y = fx::testing::uniform({3, 4}, {.seed = 41, .lo = 0, .hi = 1});
  auto a = fx::to_vector<double>(yhat), b = fx::to_vector<double>(y);
  double yy = 0, aa = 0, ab = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    yy += b[i] * b[i];
    aa += a[i] * a[i];
    ab += a[i] * b[i];
    den += a[i] * b[i] + 0.7 * (1 - b[i]) * a[i] + 0.3 * b[i] * (1 - a[i]);
  }
  EXPECT_NEAR(fx::dice_coeff_loss(yhat, y).item(), 1 - (2 * ab + 1) / (yy + aa + 1), 1e-12);
  EXPECT_NEAR(fx::dice_coeff_loss(yhat, y, 0.5).item(), 1 - (2 * ab + 0.5) / (yy + aa + 0.5),
              1e-12);
  EXPECT_NEAR(fx::tversky_loss(yhat, y).item(), 1 - (ab + 1) / (den + 1), 1e-12);
  EXPECT_NEAR(fx::dice_coeff_loss(y, y, 0).item(), 0, 1e-12);  // perfect overlap
  for (auto f : {+[](const fx::Tensor&a, const fx::Tensor&b) { return fx::dice_coeff_loss(a, b); },
                 +[](const fx::Tensor&a, const fx::Tensor&b) { return fx::tversky_loss(a, b); }}) {
    auto r = fx::testing::gradcheck(f, yhat, y);
    EXPECT_TRUE(r) << r;
  }
}

TEST(Losses, ClassLossGradientsMatchFiniteDifferencesToSecondOrder) {
  auto x = fx::testing::randn({4, 3}, {.seed = 42});
  auto p = fx::softmax(fx::testing::randn({4, 3}, {.seed = 43}));
  auto yprob = fx::softmax(fx::testing::randn({4, 3}, {.seed = 44}));
  auto labels = fx::tensor({2, 0, 1, 2}, fx::i64);
  auto check = [](const char* name, auto f, const fx::Tensor& at) {
    auto r = fx::testing::gradcheck(f, at);
    EXPECT_TRUE(r) << name << ": " << r;
  };
  check(
      "kldivergence", [&](const fx::Tensor& a) { return fx::kldivergence(a, yprob); }, p);
  check(
      "kldivergence dims 0",
      [&](const fx::Tensor& a) { return fx::kldivergence(a, yprob, fx::agg::sum, 0); }, p);
  check(
      "focal_loss", [&](const fx::Tensor& a) { return fx::focal_loss(a, yprob); }, p);
  check(
      "logitce sum labels",
      [&](const fx::Tensor& a) { return fx::logitcrossentropy(a, labels, fx::agg::sum); }, x);
  check(
      "logitce dims 0",
      [&](const fx::Tensor& a) { return fx::logitcrossentropy(a, yprob, fx::agg::sum, 0); }, x);
  check(
      "crossentropy smoothed",
      [&](const fx::Tensor& a) {
        return fx::crossentropy(a, fx::label_smoothing(fx::data::onehot(labels, 3), 0.1));
      },
      p);
}

// --- ctc ------------------------------------------------------------------------------------------

namespace {

// -log of the summed probability of every path over C^T that collapses (merge repeats, drop
// blanks) to the target: the definition, by enumeration.
double ctc_brute_force(const std::vector<double>& logits, int64_t steps, int64_t classes,
                       const std::vector<int64_t>& target, int64_t blank) {
  std::vector<double> lp(logits.size());
  for (int64_t t = 0; t < steps; ++t) {
    double z = 0;
    for (int64_t c = 0; c < classes; ++c) z += std::exp(logits[t * classes + c]);
    for (int64_t c = 0; c < classes; ++c)
      lp[t * classes + c] = logits[t * classes + c] - std::log(z);
  }
  double total = 0;
  std::vector<int64_t> path(steps, 0);
  int64_t count = 1;
  for (int64_t t = 0; t < steps; ++t) count *= classes;
  for (int64_t k = 0; k < count; ++k) {
    int64_t r = k;
    for (int64_t t = 0; t < steps; ++t, r /= classes) path[t] = r % classes;
    std::vector<int64_t> out;
    for (int64_t t = 0; t < steps; ++t)
      if (path[t] != blank && (t == 0 || path[t] != path[t - 1])) out.push_back(path[t]);
    if (out != target) continue;
    double s = 0;
    for (int64_t t = 0; t < steps; ++t) s += lp[t * classes + path[t]];
    total += std::exp(s);
  }
  return -std::log(total);
}

}  // namespace

TEST(Losses, CtcMatchesTheSumOverEveryAlignment) {
  const int64_t n = 4, steps = 6, classes = 4;
  auto logits = fx::testing::randn({n, steps, classes}, {.seed = 45});
  // Padded targets of lengths 2, 3 (with a repeat, which needs a blank between), 0 and 1, and
  // inputs of lengths 6, 5, 3, 6.
  auto targets = fx::tensor({0, 1, 0, 2, 2, 1, 0, 0, 0, 1, 0, 0}, fx::i64).reshape({n, 3});
  std::vector<int64_t> t_len = {6, 5, 3, 6}, s_len = {2, 3, 0, 1};
  std::vector<std::vector<int64_t>> want_targets = {{0, 1}, {2, 2, 1}, {}, {1}};
  auto lv = fx::to_vector<double>(logits);
  for (int64_t blank : {int64_t(3), int64_t(-1)}) {
    auto per =
        fx::to_vector<double>(fx::ctc_loss(logits, targets, t_len, s_len, blank, fx::agg::none));
    for (int64_t b = 0; b < n; ++b) {
      std::vector<double> own(lv.begin() + b * steps * classes,
                              lv.begin() + (b * steps + t_len[b]) * classes);
      EXPECT_NEAR(per[b], ctc_brute_force(own, t_len[b], classes, want_targets[b], 3), 1e-10)
          << "sequence " << b;
    }
  }
  // Blank 0 (PyTorch's default): labels shift up by one.
  auto per0 = fx::to_vector<double>(fx::ctc_loss(logits, fx::add(targets, fx::ones_like(targets)),
                                                 t_len, s_len, 0, fx::agg::none));
  for (int64_t b = 0; b < n; ++b) {
    std::vector<int64_t> shifted;
    for (int64_t l : want_targets[b]) shifted.push_back(l + 1);
    std::vector<double> own(lv.begin() + b * steps * classes,
                            lv.begin() + (b * steps + t_len[b]) * classes);
    EXPECT_NEAR(per0[b], ctc_brute_force(own, t_len[b], classes, shifted, 0), 1e-10);
  }
  // One sequence, (T, C) and (S,), as Flux takes it; and the default agg is the mean.
  auto one = fx::ctc_loss(fx::select(logits, 0, 0), fx::tensor({0, 1}, fx::i64));
  EXPECT_EQ(one.ndim(), 0);
  EXPECT_NEAR(one.item(),
              ctc_brute_force(std::vector<double>(lv.begin(), lv.begin() + steps * classes), steps,
                              classes, {0, 1}, 3),
              1e-10);
  auto mean = fx::ctc_loss(logits, targets, t_len, s_len);
  auto none = fx::ctc_loss(logits, targets, t_len, s_len, -1, fx::agg::none);
  EXPECT_NEAR(mean.item(), fx::mean(none).item(), 1e-12);
}

TEST(Losses, CtcGradientsMatchFiniteDifferences) {
  auto logits = fx::testing::randn({2, 5, 3}, {.seed = 46});
  auto targets = fx::tensor({0, 1, 1, 0}, fx::i64).reshape({2, 2});
  std::vector<int64_t> t_len = {5, 4}, s_len = {2, 1};
  auto r = fx::testing::gradcheck(
      [&](const fx::Tensor& x) { return fx::ctc_loss(x, targets, t_len, s_len, -1, fx::agg::sum); },
      logits);
  EXPECT_TRUE(r) << r;
  // The gradient of a log-probability sums to zero over classes at each step (softmax).
  auto g = fx::gradient([&](const fx::Tensor& x) { return fx::ctc_loss(x, targets, t_len, s_len); },
                        logits);
  EXPECT_LT(fx::max(fx::abs(fx::sum(g, {2}))).item(), 1e-12);
  // Steps past a sequence's input length get no gradient.
  EXPECT_EQ(fx::max(fx::abs(fx::select(fx::select(g, 0, 1), 0, 4))).item(), 0.0);
}

TEST(Losses, CtcRejectsBadTargets) {
  auto logits = fx::zeros({1, 4, 3}, fx::f64);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        fx::ctc_loss(logits, fx::tensor({0, 2}, fx::i64).reshape({1, 2}));
      },
      {"ctc_loss", "label 2", "blank 2"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        fx::ctc_loss(logits, fx::tensor({0, 1}, fx::i64).reshape({1, 2}), {5});
      },
      {"ctc_loss", "input length 5"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        fx::ctc_loss(logits, fx::tensor({0, 1}, fx::i64));
      },
      {"ctc_loss", "(1, 4, 3)", "(2,)"}));
}

TEST(Losses, BadConfigurationsNameTheLoss) {
  auto a = fx::zeros({4, 3}, fx::f64), b = fx::zeros({4, 3}, fx::f64);
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::huber_loss(a, b, {}, 0.0); },
                                             {"huber_loss", "delta"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::siamese_contrastive_loss(a, b, {}, -1.0); },
                                             {"siamese_contrastive_loss", "margin", "-1"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::kldivergence(a, fx::zeros({4}, fx::i64)); },
                                             {"kldivergence", "(4, 3)", "(4,)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::crossentropy(a, b, {}, 2); },
                                             {"crossentropy", "class axis 2", "(4, 3)"}));
  for (auto f : {+[](const fx::Tensor&p, const fx::Tensor&y) { return fx::mae(p, y); },
                 +[](const fx::Tensor&p, const fx::Tensor&y) { return fx::msle(p, y); },
                 +[](const fx::Tensor&p, const fx::Tensor&y) { return fx::poisson_loss(p, y); },
                 +[](const fx::Tensor&p, const fx::Tensor&y) { return fx::hinge_loss(p, y); },
                 +[](const fx::Tensor&p, const fx::Tensor&y) { return fx::dice_coeff_loss(p, y); },
                 +[](const fx::Tensor&p, const fx::Tensor&y) { return fx::focal_loss(p, y); }})
    EXPECT_TRUE(fx::testing::throws_mentioning(
        [&] {
          f(a, fx::zeros({4, 2}, fx::f64));
        },
        {"(4, 3)", "(4, 2)"}));
}

TEST(Losses, F32PredictionsGiveF32LossesThatAgreeWithF64) {
  auto p = fx::testing::uniform({5, 4}, {.seed = 47, .lo = 0.05, .hi = 0.95});
  auto y = fx::testing::uniform({5, 4}, {.seed = 48, .lo = 0.05, .hi = 0.95});
  auto p32 = p.astype(fx::f32);
  for (auto f :
       {+[](const fx::Tensor&a, const fx::Tensor&t) { return fx::binarycrossentropy(a, t); },
        +[](const fx::Tensor&a, const fx::Tensor&t) { return fx::binary_focal_loss(a, t); },
        +[](const fx::Tensor&a, const fx::Tensor&t) { return fx::kldivergence(a, t); },
        +[](const fx::Tensor&a, const fx::Tensor&t) { return fx::msle(a, t); }}) {
    auto l32 = f(p32, y);  // an f64 target follows the prediction's dtype
    EXPECT_EQ(l32.dtype(), fx::f32);
    EXPECT_NEAR(l32.item(), f(p, y).item(), 1e-5 * (1 + std::abs(f(p, y).item())));
  }
}
