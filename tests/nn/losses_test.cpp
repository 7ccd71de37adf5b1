#include <gtest/gtest.h>

#include <cmath>

#include <fluxion/ad/reverse.hpp>
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
