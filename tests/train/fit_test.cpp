#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <fluxion/nn/activations.hpp>
#include <fluxion/nn/chain.hpp>
#include <fluxion/nn/dense.hpp>
#include <fluxion/nn/losses.hpp>
#include <fluxion/ops/create.hpp>
#include <fluxion/ops/elementwise.hpp>
#include <fluxion/optim/adjust.hpp>
#include <fluxion/optim/rules.hpp>
#include <fluxion/optim/transforms.hpp>
#include <fluxion/train/fit.hpp>

#include "../io/io_test_helpers.hpp"

using fx::testing_io::same_bits;
using fx::testing_io::TempDir;

namespace {

auto make_mlp(uint64_t seed) {
  fx::Generator gen(seed);
  return fx::nn::Chain(fx::nn::Dense(4, 8, fx::relu, gen), fx::nn::Dense(8, 3, fx::identity, gen));
}

struct Problem {
  fx::Tensor x, y;
  Problem() {
    fx::Generator gen(7);
    x = fx::randn({96, 4}, gen);
    y = fx::Tensor::empty(fx::Shape{96}, fx::i64);
    const float* px = x.data<float>();
    for (int i = 0; i < 96; ++i)
      y.data<int64_t>()[i] = px[4 * i] > 0 ? (px[4 * i + 1] > 0 ? 2 : 1) : 0;
  }
  fx::data::DataLoader loader() const { return {x, y, {.batch = 16, .shuffle = true, .seed = 3}}; }
};

auto ce = [](const auto& m, const fx::Tensor& x, const fx::Tensor& y) {
  return fx::logitcrossentropy(m(x), y);
};

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

template <class M>
bool same_model(const M& a, const M& b) {
  fx::io::TensorMap ta = fx::io::named_tensors(a), tb = fx::io::named_tensors(b);
  for (const auto& [name, t] : ta)
    if (!same_bits(t, tb.at(name))) return false;
  return true;
}

}  // namespace

TEST(Fit, TrainsAndRecordsLossesAndEvaluations) {
  Problem p;
  auto model = make_mlp(1);
  auto opt = fx::optim::setup(fx::optim::Adam{.lr = 0.01}, model);
  auto loader = p.loader();
  std::ostringstream out;
  int evals = 0;
  auto eval = fx::train::evaluate([&] {
    ++evals;
    return fx::train::Metrics{{"val_loss", fx::logitcrossentropy(model(p.x), p.y).item()}};
  });
  fx::train::History h = fx::train::fit(
      model, opt, loader, ce,
      {.epochs = 4, .callbacks = {eval}, .record_every = 3, .progress = false, .out = &out});
  EXPECT_EQ(evals, 4);
  auto train = h.series("train_loss"), val = h.series("val_loss");
  ASSERT_EQ(train.size(), 4u);
  EXPECT_EQ(train.back().first, 24);  // 6 batches per epoch
  EXPECT_LT(val.back().second, val.front().second);
  EXPECT_EQ(h.series("loss").size(), 8u);
  EXPECT_TRUE(has(out.str(), "epoch=1 train_loss=")) << out.str();
  EXPECT_TRUE(has(out.str(), " val_loss=")) << out.str();
}

// Two epochs, a checkpoint, a resume for the third: the same parameters, optimiser state and
// epoch-3 loss as three uninterrupted epochs, to the bit.
TEST(Fit, ResumingFromACheckpointRepeatsTheRunBitForBit) {
  Problem p;
  TempDir dir;
  auto run = [&](int64_t epochs, const std::string& ckdir, const std::string& resume, auto& model,
                 auto& opt) {
    auto loader = p.loader();
    std::ostringstream out;
    return fx::train::fit(model, opt, loader, ce,
                          {.epochs = epochs,
                           .checkpoint_dir = ckdir,
                           .resume_dir = resume,
                           .progress = false,
                           .out = &out});
  };
  auto m1 = make_mlp(1);
  auto o1 = fx::optim::setup(fx::optim::Adam{.lr = 0.01}, m1);
  fx::train::History h1 = run(3, "", "", m1, o1);

  auto m2 = make_mlp(1);
  auto o2 = fx::optim::setup(fx::optim::Adam{.lr = 0.01}, m2);
  run(2, dir.file("ck"), "", m2, o2);
  auto m3 = make_mlp(9);  // different initial weights: all of them come from the checkpoint
  auto o3 = fx::optim::setup(fx::optim::Adam{.lr = 0.5}, m3);
  fx::train::History h3 = run(3, "", dir.file("ck"), m3, o3);

  EXPECT_TRUE(same_model(m1, m3));
  EXPECT_TRUE(same_model(o1, o3));
  EXPECT_EQ(fx::train::learning_rates(o3), std::vector<double>(4, 0.01));
  EXPECT_EQ(o3.leaves[0].step, o1.leaves[0].step);
  ASSERT_EQ(h3.series("train_loss").size(), 1u);
  EXPECT_EQ(h3.series("train_loss")[0], h1.series("train_loss")[2]);
}

TEST(Fit, CheckpointsRestoreGeneratorsLoaderAndNumbers) {
  TempDir dir;
  Problem p;
  auto model = make_mlp(1);
  auto opt = fx::optim::setup(fx::optim::Adam{}, model);
  opt.leaves[1].step = 41;
  fx::optim::adjust(opt, 0.125);
  fx::optim::adjust(opt, 0.25, "layers.1");  // each leaf's own rate is kept
  fx::Generator gen(77);
  gen.normal();  // leaves a Box-Muller spare in the state
  auto loader = p.loader();
  loader.set_epoch(5);
  fx::train::Checkpoint ck{.epoch = 5,
                           .step = 30,
                           .schedule = 0.1,
                           .generators = {{"g", &gen}},
                           .loader = &loader,
                           .metadata = {{"who", "test"}}};
  fx::train::save_checkpoint(dir.file("c.safetensors"), model, opt, ck);
  const double next_normal = fx::Generator(gen).normal(),
               next_uniform = fx::Generator(gen).uniform();

  auto model2 = make_mlp(2);
  auto opt2 = fx::optim::setup(fx::optim::Adam{}, model2);
  fx::Generator gen2(1);
  auto loader2 = p.loader();
  fx::train::Checkpoint back{.generators = {{"g", &gen2}}, .loader = &loader2};
  fx::train::load_checkpoint(dir.file("c.safetensors"), model2, opt2, back);
  EXPECT_TRUE(same_model(model, model2));
  EXPECT_EQ(opt2.leaves[1].step, 41);
  EXPECT_EQ(fx::train::learning_rates(opt2), (std::vector<double>{0.125, 0.125, 0.25, 0.25}));
  EXPECT_EQ(back.epoch, 5);
  EXPECT_EQ(back.step, 30);
  EXPECT_EQ(back.schedule, 0.1);
  EXPECT_EQ(back.metadata.at("who"), "test");
  EXPECT_EQ(loader2.epoch(), 5);
  EXPECT_EQ(fx::Generator(gen2).normal(), next_normal);
  EXPECT_EQ(fx::Generator(gen2).uniform(), next_uniform);

  // A loader with another seed would not repeat the run: refused, naming both seeds.
  fx::data::DataLoader other(p.x, p.y, {.batch = 16, .shuffle = true, .seed = 4});
  fx::train::Checkpoint wrong{.loader = &other};
  try {
    fx::train::load_checkpoint(dir.file("c.safetensors"), model2, opt2, wrong);
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    EXPECT_TRUE(has(e.what(), "seed 3")) << e.what();
  }
  // An optimiser with another number of learning rates (AdaDelta has none) is refused before
  // anything is written.
  auto model3 = make_mlp(3);
  auto ada = fx::optim::setup(fx::optim::AdaDelta{}, model3);
  auto model3_before = make_mlp(3);
  fx::train::Checkpoint plain;
  try {
    fx::train::load_checkpoint(dir.file("c.safetensors"), model3, ada, plain);
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    EXPECT_TRUE(has(e.what(), "holds 4 learning rates, the optimiser has 0")) << e.what();
  }
  EXPECT_TRUE(same_model(model3, model3_before));
  // A plain safetensors file is not a checkpoint.
  fx::io::save(dir.file("plain.safetensors"), model);
  fx::train::Checkpoint none;
  EXPECT_THROW(fx::train::load_checkpoint(dir.file("plain.safetensors"), model2, opt2, none),
               fx::Error);
}

// Every rule's state, however nested: a chain's AccumGrad sums and count and its Adam moments
// and step counters come back from a checkpoint as they were saved.
TEST(Fit, CheckpointsKeepTheStateOfEveryRuleInAChain) {
  TempDir dir;
  Problem p;
  using Chain = fx::optim::OptimiserChain<fx::optim::AccumGrad, fx::optim::Adam>;
  auto model = make_mlp(1);
  auto opt = fx::optim::setup(Chain(fx::optim::AccumGrad{3}, fx::optim::Adam{}), model);
  auto loader = p.loader();
  std::ostringstream out;
  fx::train::fit(model, opt, loader, ce, {.epochs = 1, .progress = false, .out = &out});  // 6 steps
  std::get<0>(opt.leaves[2].states).count = 2;  // as if mid-accumulation
  fx::train::Checkpoint ck;
  fx::train::save_checkpoint(dir.file("c.safetensors"), model, opt, ck);
  const fx::io::TensorMap saved = fx::io::read_safetensors(dir.file("c.safetensors")).tensors;
  EXPECT_TRUE(saved.count("optimiser.leaves.2.states.0.count"));
  EXPECT_TRUE(saved.count("optimiser.leaves.2.states.0.mean"));
  EXPECT_TRUE(saved.count("optimiser.leaves.2.states.1.step"));

  auto model2 = make_mlp(2);
  auto opt2 = fx::optim::setup(Chain(fx::optim::AccumGrad{3}, fx::optim::Adam{}), model2);
  fx::train::Checkpoint back;
  fx::train::load_checkpoint(dir.file("c.safetensors"), model2, opt2, back);
  EXPECT_TRUE(same_model(model, model2));
  EXPECT_TRUE(same_model(opt, opt2));
  EXPECT_EQ(std::get<0>(opt2.leaves[2].states).count, 2);
  EXPECT_EQ(std::get<1>(opt2.leaves[0].states).step, 2);  // 6 gradients, 3 per Adam step
}

TEST(Fit, AScheduleNeedsARuleWithALearningRate) {
  Problem p;
  auto model = make_mlp(1);
  auto opt = fx::optim::setup(fx::optim::AdaDelta{}, model);
  auto loader = p.loader();
  std::ostringstream out;
  try {
    fx::train::fit(model, opt, loader, ce,
                   {.schedule = [](int64_t) { return 0.1; }, .progress = false, .out = &out});
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    EXPECT_TRUE(has(e.what(), "no rule of the optimiser has a learning rate")) << e.what();
  }
}

TEST(Fit, GeneratorStateRejectsTheAllZeroState) {
  fx::Generator g;
  EXPECT_THROW(g.set_state({0, 0, 0, 0, 0, 0}), fx::Error);
  EXPECT_THROW(g.set_state({1, 0, 0, 0, 2, 0}), fx::Error);
}

// A loss that turns NaN at step 5: an fx::Error naming the step, and the model as it was after
// step 3 (the last parameters whose loss was finite; step 4's update produced the bad ones).
TEST(Fit, NonFiniteLossStopsWithTheLastGoodParameters) {
  Problem p;
  auto model = make_mlp(1);
  auto opt = fx::optim::setup(fx::optim::Adam{.lr = 0.01}, model);
  auto loader = p.loader();
  std::vector<decltype(make_mlp(1))> after;  // after[k]: a copy of the model after step k
  after.push_back(make_mlp(1));
  struct Copy : fx::train::Callback {
    decltype(model)& m;
    std::vector<decltype(make_mlp(1))>& out;
    Copy(decltype(model)& m, std::vector<decltype(make_mlp(1))>& o) : m(m), out(o) {}
    void on_step(fx::train::FitContext&) override {
      auto c = make_mlp(1);
      fx::io::TensorMap src = fx::io::named_tensors(m), dst = fx::io::named_tensors(c);
      for (auto& [n, t] : dst) t.copy_(src.at(n));
      out.push_back(c);
    }
  };
  int calls = 0;
  auto loss = [&](const auto& m, const fx::Tensor& x, const fx::Tensor& y) {
    fx::Tensor l = fx::logitcrossentropy(m(x), y);
    return ++calls == 5 ? l * std::numeric_limits<double>::quiet_NaN() : l;
  };
  std::ostringstream out;
  try {
    fx::train::fit(model, opt, loader, loss,
                   {.epochs = 2,
                    .callbacks = {std::make_shared<Copy>(model, after)},
                    .progress = false,
                    .out = &out});
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    EXPECT_TRUE(has(e.what(), "nan at step 5")) << e.what();
    EXPECT_TRUE(has(e.what(), "(step 3)")) << e.what();
  }
  ASSERT_EQ(after.size(), 5u);  // the initial model and steps 1-4
  EXPECT_TRUE(same_model(model, after[3]));
  EXPECT_FALSE(same_model(model, after[4]));
}

TEST(Fit, EarlyStoppingAndPlateauReactToTheMonitoredMetric) {
  Problem p;
  auto model = make_mlp(1);
  auto opt = fx::optim::setup(fx::optim::Descent{.lr = 0.1}, model);
  auto loader = p.loader();
  // A validation loss that improves twice, then stalls.
  std::vector<double> vals{1.0, 0.8, 0.9, 0.85, 0.95, 0.99, 1.2, 1.3};
  size_t i = 0;
  auto eval = fx::train::evaluate([&] { return fx::train::Metrics{{"val_loss", vals.at(i++)}}; });
  auto plateau = fx::train::reduce_lr_on_plateau({.factor = 0.5, .patience = 2});
  auto stop = fx::train::early_stopping({.patience = 4});
  std::ostringstream out;
  fx::train::History h = fx::train::fit(
      model, opt, loader, ce,
      {.epochs = 8, .callbacks = {stop, plateau, eval}, .progress = false, .out = &out});
  // Best 0.8 at epoch 2; four evaluations without improvement end training after epoch 6.
  EXPECT_EQ(h.series("train_loss").size(), 6u);
  EXPECT_TRUE(has(out.str(), "early stopping")) << out.str();
  // Plateau: two bad evaluations (epochs 3, 4) halve the rate; two more (5, 6) halve it again.
  EXPECT_EQ(h.series("lr").size(), 2u);
  EXPECT_DOUBLE_EQ(opt.rules[0].lr, 0.025);
  EXPECT_DOUBLE_EQ(opt.rules[3].lr, 0.025);
}

TEST(Fit, ScheduleSetsTheRateAndCsvHoldsTheHistory) {
  TempDir dir;
  Problem p;
  auto model = make_mlp(1);
  auto opt = fx::optim::setup(fx::optim::Descent{}, model);
  auto loader = p.loader();
  std::ostringstream out;
  fx::train::History h =
      fx::train::fit(model, opt, loader, ce,
                     {.epochs = 2,
                      .schedule = [](int64_t step) { return 0.1 / double(step + 1); },
                      .record_every = 2,
                      .csv = dir.file("m.csv"),
                      .progress = false,
                      .out = &out});
  EXPECT_DOUBLE_EQ(opt.rules[0].lr, 0.1 / 12);  // the 12th step used step index 11
  EXPECT_DOUBLE_EQ(opt.rules[3].lr, 0.1 / 12);
  fx::train::History back = fx::train::History::read_csv(dir.file("m.csv"));
  ASSERT_EQ(back.records().size(), h.records().size());
  for (size_t k = 0; k < h.records().size(); ++k) {
    EXPECT_EQ(back.records()[k].name, h.records()[k].name);
    EXPECT_EQ(back.records()[k].value, h.records()[k].value);  // exact: shortest round-trip text
    EXPECT_EQ(back.records()[k].step, h.records()[k].step);
  }
  fx::testing_io::write_bytes(dir.file("bad.csv"), "step,epoch,metric,value\n1,1,loss\n");
  EXPECT_THROW(fx::train::History::read_csv(dir.file("bad.csv")), fx::Error);
}

TEST(Fit, LogEveryPrintsThrottledLines) {
  Problem p;
  auto model = make_mlp(1);
  auto opt = fx::optim::setup(fx::optim::Descent{}, model);
  auto loader = p.loader();
  std::ostringstream out, log;
  fx::train::fit(model, opt, loader, ce,
                 {.epochs = 1,
                  .callbacks = {fx::train::log_every({.every_steps = 2, .out = &log})},
                  .progress = false,
                  .out = &out});
  const std::string lines = log.str();
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 3);  // steps 2, 4, 6
  EXPECT_TRUE(has(lines, "step=4 epoch=1 loss=")) << lines;
  EXPECT_TRUE(has(lines, " lr=0.1")) << lines;
}
