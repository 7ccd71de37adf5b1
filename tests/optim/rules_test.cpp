#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <memory>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/chain.hpp>
#include <fluxion/nn/dense.hpp>
#include <fluxion/nn/losses.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/optim/elementwise.hpp>
#include <fluxion/optim/rules.hpp>
#include <fluxion/optim/update.hpp>
#include <fluxion/testing.hpp>

namespace {

struct Affine {
  fx::Tensor w, b;
  FX_FIELDS(w, b)
};

std::vector<double> values(const fx::Tensor& t) { return fx::to_vector<double>(t); }

}  // namespace

TEST(Descent, OneStepIsXMinusLrTimesGrad) {
  Affine m{fx::tensor({1, 2, 3}, fx::f32), fx::tensor({-1}, fx::f32)};
  Affine g{fx::tensor({0.5, -1, 2}, fx::f32), fx::tensor({4}, fx::f32)};
  auto opt = fx::optim::setup(fx::optim::Descent{0.1}, m);
  uint64_t version = m.w.storage()->version;
  fx::optim::update(opt, m, g);
  auto w = values(m.w);
  EXPECT_NEAR(w[0], 0.95, 1e-7);
  EXPECT_NEAR(w[1], 2.1, 1e-6);
  EXPECT_NEAR(w[2], 2.8, 1e-6);
  EXPECT_NEAR(values(m.b)[0], -1.4, 1e-6);
  EXPECT_GT(m.w.storage()->version, version);  // a tape holding m.w would see the write
}

TEST(Descent, ConvergesOnAQuadratic) {
  auto target = fx::tensor({3, -2, 0.5, 7}, fx::f64);
  Affine m{fx::zeros({4}, fx::f64), fx::zeros({1}, fx::f64)};
  auto loss = [&](const Affine& a) {
    return fx::sum(fx::square(a.w - target)) + fx::sum(fx::square(a.b - 1.0));
  };
  auto opt = fx::optim::setup(fx::optim::Descent{.lr = 0.1}, m);
  for (int i = 0; i < 200; ++i) fx::optim::update(opt, m, fx::gradient(loss, m));
  EXPECT_TRUE(fx::allclose(m.w, target, 0, 1e-9));
  EXPECT_NEAR(values(m.b)[0], 1.0, 1e-9);
}

TEST(Momentum, FirstStepsMatchTheHandComputedVelocity) {
  Affine m{fx::tensor({1.0}, fx::f64), fx::tensor({0.0}, fx::f64)};
  Affine g{fx::tensor({2.0}, fx::f64), fx::tensor({-1.0}, fx::f64)};
  auto opt = fx::optim::setup(fx::optim::Momentum{.lr = 0.1, .rho = 0.5}, m);
  fx::optim::update(opt, m, g);  // v = 0.2;          w = 0.8
  fx::optim::update(opt, m, g);  // v = 0.1 + 0.2;    w = 0.5
  EXPECT_NEAR(values(m.w)[0], 0.5, 1e-15);
  EXPECT_NEAR(values(opt.leaves[0].velocity)[0], 0.3, 1e-15);
  EXPECT_NEAR(values(m.b)[0], 0.25, 1e-15);  // v = -0.1, then -0.15
}

TEST(Adam, FirstStepsMatchAHandComputedReference) {
  // Two parameters, three steps with changing gradients, against the formula written out in
  // scalar double arithmetic.
  std::vector<double> w0 = {0.5, -1.5}, g1 = {0.2, -3.0}, g2 = {-0.1, 1.0}, g3 = {0.05, 0.0};
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  std::vector<double> w = w0, m(2, 0), v(2, 0);
  std::vector<std::vector<double>> want;
  int t = 0;
  for (const auto& g : {g1, g2, g3}) {
    ++t;
    for (int i = 0; i < 2; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      double mhat = m[i] / (1 - std::pow(b1, t)), vhat = v[i] / (1 - std::pow(b2, t));
      w[i] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
    want.push_back(w);
  }
  // Step one moves every coordinate by lr against the gradient's sign, whatever its size.
  EXPECT_NEAR(want[0][0], 0.49, 1e-9);
  EXPECT_NEAR(want[0][1], -1.49, 1e-9);

  for (auto dtype : {fx::f64, fx::f32}) {
    std::vector<fx::Tensor> model = {fx::from_vector(w0).astype(dtype)};
    auto opt = fx::optim::setup(fx::optim::Adam{.lr = lr}, model);
    int step = 0;
    for (const auto& g : {g1, g2, g3}) {
      fx::optim::update(opt, model, std::vector<fx::Tensor>{fx::from_vector(g).astype(dtype)});
      auto got = values(model[0]);
      double tol = dtype == fx::f64 ? 1e-12 : 1e-6;
      EXPECT_NEAR(got[0], want[step][0], tol)
          << "step " << step + 1 << " " << fx::dtype_name(dtype);
      EXPECT_NEAR(got[1], want[step][1], tol)
          << "step " << step + 1 << " " << fx::dtype_name(dtype);
      ++step;
    }
    EXPECT_EQ(opt.leaves[0].step, 3);
  }
}

// A unit whose gradient stops (a dead ReLU, an always-black pixel) has its first moment shrink
// by beta1 every step; it must end at zero, not linger in the subnormal range, where every
// operation on it takes the slow path of x86 arithmetic.
TEST(Adam, StateDecayingBelowTheNormalRangeIsStoredAsZero) {
  for (auto dtype : {fx::f32, fx::f64}) {
    SCOPED_TRACE(fx::dtype_name(dtype));
    const double tiny = dtype == fx::f32 ? 1e-30 : 1e-300;
    std::vector<fx::Tensor> model = {fx::tensor({0.5, -0.25, 2.0}, fx::f64).astype(dtype)};
    auto opt = fx::optim::setup(fx::optim::Adam{}, model);
    const std::vector<fx::Tensor> zero = {fx::zeros({3}, dtype)};
    fx::optim::update(opt, model, std::vector<fx::Tensor>{fx::full({3}, tiny, dtype)});
    const double smallest_normal = dtype == fx::f32 ? double(std::numeric_limits<float>::min())
                                                    : std::numeric_limits<double>::min();
    bool went_subnormal = false, reached_zero = false;
    for (int step = 0; step < 400 && !reached_zero; ++step) {
      fx::optim::update(opt, model, zero);
      for (const fx::Tensor& state : {opt.leaves[0].m, opt.leaves[0].v})
        for (double e : values(state)) went_subnormal |= e != 0 && std::abs(e) < smallest_normal;
      reached_zero = values(opt.leaves[0].m) == std::vector<double>(3, 0.0);
    }
    EXPECT_FALSE(went_subnormal);
    EXPECT_TRUE(reached_zero);  // 0.1 * tiny * 0.9^k leaves the normal range within 400 steps
    // Nothing that small moved the parameters.
    EXPECT_EQ(values(model[0]), (std::vector<double>{0.5, -0.25, 2.0}));
  }
}

TEST(AdamW, DecaysWeightsIndependentlyOfTheGradient) {
  std::vector<fx::Tensor> m = {fx::tensor({2.0, -4.0}, fx::f64)};
  auto opt = fx::optim::setup(fx::optim::AdamW{.lr = 0.1, .weight_decay = 0.5}, m);
  fx::optim::update(opt, m, std::vector<fx::Tensor>{fx::zeros({2}, fx::f64)});
  // A zero gradient leaves the Adam part at 0: only x *= 1 - lr * wd remains.
  EXPECT_EQ(values(m[0]), (std::vector<double>{1.9, -3.8}));
  fx::optim::update(opt, m, std::vector<fx::Tensor>{fx::tensor({1.0, 1.0}, fx::f64)});
  auto w = values(m[0]);
  // step 2: mhat = 0.1 / 0.19, vhat = 0.001 / 0.001999
  double adam = 0.1 * (0.1 / 0.19) / (std::sqrt(0.001 / (1 - 0.999 * 0.999)) + 1e-8);
  EXPECT_NEAR(w[0], 1.9 * 0.95 - adam, 1e-12);
  EXPECT_NEAR(w[1], -3.8 * 0.95 - adam, 1e-12);
}

TEST(Optimisers, ReadStridedAndExpandedZeroGradients) {
  auto w = fx::tensor({1, 2, 3, 4, 5, 6}, fx::f32).reshape({2, 3});
  std::vector<fx::Tensor> m = {w};
  auto opt = fx::optim::setup(fx::optim::Descent{1.0}, m);
  // An allocation-free zero (stride 0) leaves the weights as they are.
  fx::optim::update(opt, m, std::vector<fx::Tensor>{fx::expanded_zeros_like(w)});
  EXPECT_EQ(values(w), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // A transposed view is read element by element in the parameter's order.
  auto gt = fx::tensor({1, 4, 2, 5, 3, 6}, fx::f32).reshape({3, 2}).t();
  fx::optim::update(opt, m, std::vector<fx::Tensor>{gt});
  EXPECT_EQ(values(w), (std::vector<double>{0, 0, 0, 0, 0, 0}));
  // A broadcast non-zero scalar is applied everywhere; f64 gradients convert to the parameter.
  fx::optim::update(opt, m, std::vector<fx::Tensor>{fx::expand(fx::scalar(2, fx::f64), {2, 3})});
  EXPECT_EQ(values(w), (std::vector<double>{-2, -2, -2, -2, -2, -2}));
}

TEST(Optimisers, SteadyStateAdamStepsAllocateNothing) {
  fx::Generator gen(1);
  auto model =
      fx::nn::Chain(fx::nn::Dense(64, 32, fx::relu, gen), fx::nn::Dense(32, 8, fx::identity, gen));
  auto grad =
      fx::nn::Chain(fx::nn::Dense(64, 32, fx::relu, gen), fx::nn::Dense(32, 8, fx::identity, gen));
  auto opt = fx::optim::setup(fx::optim::Adam{}, model);
  fx::optim::update(opt, model, grad);
  auto before = fx::allocator_stats();
  for (int i = 0; i < 10; ++i) fx::optim::update(opt, model, grad);
  auto after = fx::allocator_stats();
  EXPECT_EQ(after.system_allocs, before.system_allocs);
  EXPECT_EQ(after.cache_hits, before.cache_hits);
}

TEST(Optimisers, MismatchedGradientThrowsAndLeavesTheModelIntact) {
  auto model = fx::nn::Chain(fx::nn::Dense(3, 2), fx::nn::Dense(2, 1));
  auto opt = fx::optim::setup(fx::optim::Adam{}, model);
  auto grad = fx::nn::fmap([](const fx::Tensor& t) { return fx::ones_like(t); }, model);
  std::get<1>(grad.layers).weight = fx::ones({2, 1});
  auto before = fx::nn::fmap([](const fx::Tensor& t) { return t.clone(); }, model);
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::optim::update(opt, model, grad); },
                                             {"update", "(2, 1)", "layers.1.weight", "(1, 2)"}));
  fx::zip_tensors(
      [](const fx::Tensor& a, const fx::Tensor& b) { EXPECT_TRUE(fx::allclose(a, b, 0, 0)); },
      model, before);
  EXPECT_EQ(opt.leaves[0].step, 0);
}

TEST(Optimisers, StateForAnotherModelIsRejected) {
  std::vector<fx::Tensor> small = {fx::zeros({2})}, big = {fx::zeros({2}), fx::zeros({3})};
  auto opt = fx::optim::setup(fx::optim::Momentum{}, small);
  EXPECT_TRUE(
      fx::testing::throws_mentioning([&] { fx::optim::update(opt, big, big); }, {"update", "1"}));
  std::vector<fx::Tensor> reshaped = {fx::zeros({3})};
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::optim::update(opt, reshaped, reshaped); },
                                             {"update", "(3,)", "(2,)"}));
  std::vector<fx::Tensor> two = {fx::zeros({2}), fx::zeros({2})};
  EXPECT_THROW(fx::optim::update(opt, small, two), fx::Error);
}

TEST(Optimisers, UndefinedGradientLeavesAreSkipped) {
  Affine m{fx::tensor({1.0}, fx::f64), fx::tensor({1.0}, fx::f64)};
  auto opt = fx::optim::setup(fx::optim::Adam{.lr = 0.5}, m);
  fx::optim::update(opt, m, Affine{fx::tensor({1.0}, fx::f64), fx::Tensor()});
  EXPECT_NEAR(values(m.w)[0], 0.5, 1e-7);
  EXPECT_EQ(values(m.b)[0], 1.0);
  EXPECT_EQ(opt.leaves[1].step, 0);
}

namespace {

// A user's rule, written exactly as the built-in ones are.
struct SignDescent {
  double lr = 0.25;
  struct State {
    int64_t calls = 0;
  };
  State init(const fx::Tensor&) const { return {}; }
  void apply(State& s, const fx::Tensor& p, const fx::Tensor& g) const {
    ++s.calls;
    fx::optim::foreach_element("SignDescent", p, g, [lr = lr](auto& x, auto dx) {
      x -= decltype(dx)(lr) * ((dx > 0) - (dx < 0));
    });
  }
};
static_assert(fx::optim::Rule<SignDescent>);
static_assert(fx::optim::Rule<fx::optim::AdamW>);
static_assert(!fx::optim::Rule<int>);

}  // namespace

TEST(Optimisers, AUsersRuleWorksThroughTheSameDoor) {
  Affine m{fx::tensor({1, 1, 1}, fx::f32), fx::tensor({0}, fx::f32)};
  auto opt = fx::optim::setup(SignDescent{}, m);
  fx::optim::update(opt, m, Affine{fx::tensor({3, -0.001, 0}, fx::f32), fx::tensor({-7}, fx::f32)});
  EXPECT_EQ(values(m.w), (std::vector<double>{0.75, 1.25, 1}));
  EXPECT_EQ(values(m.b), (std::vector<double>{0.25}));
  EXPECT_EQ(opt.leaves[0].calls, 1);
}

namespace {

// A loops-only rule that throws from its second apply: the first leaf's loop is queued by then.
// Each leaf holds a copy of the rule, so the count is shared.
struct FailsOnSecondLeaf {
  static constexpr bool loops_only = true;
  struct State {};
  std::shared_ptr<int> calls = std::make_shared<int>(0);
  State init(const fx::Tensor&) const { return {}; }
  void apply(State&, const fx::Tensor& p, const fx::Tensor& g) const {
    FX_CHECK(++*calls < 2, "FailsOnSecondLeaf: second leaf");
    fx::optim::foreach_element("FailsOnSecondLeaf", p, g, [](auto& x, auto dx) { x -= dx; });
  }
};

}  // namespace

// update runs a loops-only rule's loops together (one parallel region, small leaves whole on
// one thread each): the result must equal applying the rule leaf by leaf, last leaf first, bit
// for bit, with tied leaves (one tensor named twice, large and small) taking both their steps.
TEST(Optimisers, BatchedStepMatchesLeafByLeafOnTwoThreads) {
  struct TwoThreads {
    int saved = omp_get_max_threads();
    TwoThreads() { omp_set_num_threads(2); }
    ~TwoThreads() { omp_set_num_threads(saved); }
  } two;
  fx::Generator gen(4);
  auto make = [&] {
    fx::Tensor big = fx::randn({300, 200}, gen), small = fx::randn({7}, gen);
    return std::vector<fx::Tensor>{big, small, fx::randn({3}, gen),
                                   big, small, fx::randn({40000}, gen)};
  };
  auto batched = make();
  std::vector<fx::Tensor> by_leaf;
  for (size_t i = 0; i < batched.size(); ++i)  // the same ties, as copies
    by_leaf.push_back(i == 3 ? by_leaf[0] : i == 4 ? by_leaf[1] : batched[i].clone());
  std::vector<fx::Tensor> grads;
  for (const auto& t : batched) grads.push_back(fx::randn(t.shape(), gen));
  const fx::optim::Adam rule{.lr = 0.01};
  auto opt = fx::optim::setup(rule, batched);
  auto ref = fx::optim::setup(rule, by_leaf);
  for (int step = 0; step < 3; ++step) {
    fx::optim::update(opt, batched, grads);
    for (size_t k = by_leaf.size(); k-- > 0;) rule.apply(ref.leaves[k], by_leaf[k], grads[k]);
  }
  for (size_t i = 0; i < batched.size(); ++i)
    EXPECT_EQ(values(batched[i]), values(by_leaf[i])) << "leaf " << i;
  EXPECT_NE(values(batched[0]), values(make()[0]));  // the steps did move the weights
}

TEST(Optimisers, AThrowingBatchedStepWritesNothing) {
  std::vector<fx::Tensor> m = {fx::ones({40000}), fx::ones({3})};
  auto opt = fx::optim::setup(FailsOnSecondLeaf{}, m);
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        fx::optim::update(opt, m, std::vector<fx::Tensor>{fx::ones({40000}), fx::ones({3})});
      },
      {"second leaf"}));
  EXPECT_EQ(fx::sum(m[0]).item(), 40000.0);  // the last leaf's queued loop never ran
  EXPECT_EQ(fx::sum(m[1]).item(), 3.0);
  // The next step, with no batch left open on this thread, runs as usual.
  *opt.rules[0].calls = -10;
  fx::optim::update(opt, m, std::vector<fx::Tensor>{fx::ones({40000}), fx::ones({3})});
  EXPECT_EQ(fx::sum(m[0]).item(), 0.0);
}

TEST(Optimisers, AdamTrainsASmallNetwork) {
  // y = sin(3x) on [-1, 1] with a 1-16-1 tanh network: the loss must drop by 10x.
  fx::Generator gen(4);
  auto x = fx::uniform({64, 1}, -1, 1, gen);
  auto y = fx::sin(x * 3.0);
  auto model =
      fx::nn::Chain(fx::nn::Dense(1, 16, fx::tanh, gen), fx::nn::Dense(16, 1, fx::identity, gen));
  auto opt = fx::optim::setup(fx::optim::Adam{.lr = 0.02}, model);
  auto loss = [&](const auto& m) { return fx::mse(m(x), y); };
  double first = loss(model).item();
  for (int i = 0; i < 300; ++i) {
    auto [l, g] = fx::withgradient(loss, model);
    fx::optim::update(opt, model, g);
  }
  EXPECT_LT(loss(model).item(), first / 10);
}

TEST(Optimisers, TheDesignDocumentsTrainingLoopClassifies) {
  // Three Gaussian blobs in 2-d with i64 labels, trained as DESIGN.md's loop does.
  fx::Generator gen(8);
  const int64_t n = 90;
  std::vector<int64_t> ls(n);
  for (int64_t i = 0; i < n; ++i) ls[size_t(i)] = i % 3;
  auto labels = fx::from_vector(ls);
  auto centres = fx::tensor({2, 0, -1, 1.7, -1, -1.7}).reshape({3, 2});
  auto x = fx::index_select(centres, 0, labels) + fx::randn({n, 2}, gen) * 0.4;
  auto model =
      fx::nn::Chain(fx::nn::Dense(2, 16, fx::relu, gen), fx::nn::Dense(16, 3, fx::identity, gen));
  auto opt = fx::optim::setup(fx::optim::Adam(1e-2), model);
  for (int epoch = 0; epoch < 100; ++epoch) {
    auto [loss, grad] =
        fx::withgradient([&](const auto& m) { return fx::logitcrossentropy(m(x), labels); }, model);
    fx::optim::update(opt, model, grad);
  }
  auto correct = fx::sum(fx::argmax(model(x), -1) == labels).item();
  EXPECT_GE(correct, 0.95 * n);
}
