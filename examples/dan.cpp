// Discriminative adversarial network (the Flux paper's DAN example): a predictor classifies
// Fashion-MNIST images while a judge, seeing only the predictor's output and the true label,
// tries to recover a protected attribute; the predictor is trained to do its task and to fool
// the judge.
//
//   ./build/examples/dan                                   # 1500 steps, lambda 1, 20000 images
//   ./build/examples/dan --steps 600 --train-subset 10000 --plot dan.png
//
// Data: each image gets a protected attribute a in {0, 1}, shown in the image as a white 4 x 4
// patch in the top-left corner (a "watermark"). In the training set a is biased towards the
// label: P(a = 1) = bias for classes 0-4 and 1 - bias for 5-9, so a classifier picks the patch up
// as a shortcut. In the test set a is a fair coin, independent of the label.
//
// Judge: Chain(Dense(20, 32, relu), Dense(32, 1)) on [logsoftmax(predictor logits), onehot(y)],
// predicting a (binary cross-entropy). Given the true label, a perfect classifier's output says
// nothing about a; whatever the judge can still read is the patch reaching the output (the
// equalised-odds adversary of Zhang, Lemoine & Mitchell 2018). Each step first updates the judge
// on the predictor's current output (--judge-steps Adam steps at lr 1e-2), then the predictor
// (Adam, lr 1e-3) on
//   predictor_loss = crossentropy(logits, y) - lambda * judge_loss,
// the min-max of the DAN: the predictor's gradient through the judge is reversed.
//
// The program trains two predictors from the same initial weights on the same batches, one with
// lambda = 0 (baseline) and one with --lambda. For each it prints test_accuracy (the task, on the
// fair test set; chance 0.1), judge_accuracy (the in-training judge on the test set; chance 0.5)
// and probe_accuracy: a fresh judge trained on half of the test set's predictor outputs and
// scored on the other half, so the figure measures what the output leaks, not how well the
// in-training judge happened to keep up. Loss lines are `step=N predictor_loss=...
// judge_loss=...` (the adversarial run; predictor_loss is the task cross-entropy, both averaged
// since the previous line); --plot writes both runs' curves with fx::train::plot_history.
// Ends with `dan: ok` when the adversarial predictor is accurate (test_accuracy >= 0.7), the
// baseline leaks (its judge and probe accuracies >= 0.8), the adversarial judge is near chance
// (<= 0.6) and the probe's leak above chance is at most 0.65 of the baseline's; else exits 1.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/data/dataloader.hpp>
#include <fluxion/data/idx.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/optim.hpp>
#include <fluxion/train/history.hpp>
#include <fluxion/train/plot.hpp>

#include "cli.hpp"

using fx::Tensor;

// OpenBLAS keeps its own thread pool, which omp_set_num_threads does not reach. Weak, so the
// example still links against a BLAS without this function.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

struct Args {
  int64_t steps = 1500, batch = 128, train_subset = 20000, probe_steps = 400, judge_steps = 5;
  int threads = 0;  // 0: leave the OpenMP / OpenBLAS defaults
  double lambda = 1.0, bias = 0.9;
  uint64_t seed = 1;
  std::string data = fx::data::kFashionMnistDir, plot;
};

// Images with their protected attribute: x (N, 784) f32 with the patch drawn where a = 1,
// y (N,) i64, a (N, 1) f32 in {0, 1}.
struct Marked {
  Tensor x, y, a;
};

// Draws a for every image (P(a = 1) = p_low for labels 0-4, 1 - p_low for 5-9) and paints the
// patch: the 4 x 4 top-left pixels set to 1 where a = 1.
Marked mark(const fx::data::Dataset& d, double p_low, fx::Generator& gen) {
  const int64_t n = d.size();
  const Tensor owned = d.labels.contiguous();  // keeps the storage `labels` points into alive
  const int64_t* labels = owned.data<int64_t>();
  std::vector<float> a(size_t(n), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    a[size_t(i)] = gen.uniform() < (labels[i] < 5 ? p_low : 1 - p_low) ? 1.0f : 0.0f;
  std::vector<float> mask(784, 0.0f);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) mask[size_t(r * 28 + c)] = 1.0f;
  const Tensor at = fx::from_vector(a, {n, 1});
  const Tensor patch = at * fx::from_vector(mask, {1, 784});  // (N, 784): 1 on painted pixels
  return {d.images * (1.0f - patch) + patch, d.labels, at};
}

// What the judge sees: the predictor's log-probabilities beside the one-hot true label.
Tensor judge_input(const Tensor& logits, const Tensor& y) {
  return fx::concat({fx::logsoftmax(logits), fx::data::onehot(y, 10)}, 1);
}

auto make_judge(fx::Generator& gen) {
  return fx::nn::Chain(fx::nn::Dense(20, 32, fx::relu, gen),
                       fx::nn::Dense(32, 1, fx::identity, gen));
}
using Judge = decltype(make_judge(std::declval<fx::Generator&>()));

double binary_accuracy(const Tensor& judge_logits, const Tensor& a) {
  return fx::mean(
             fx::astype(
                 fx::eq(fx::astype(fx::gt(judge_logits, fx::zeros_like(judge_logits)), fx::f32), a),
                 fx::f32))
      .item();
}

// A fresh judge trained (full batch, Adam) on the first half of (features, a), scored on the
// second half: how much of a the features give away.
double probe_accuracy(const Tensor& features, const Tensor& a, int64_t steps, uint64_t seed) {
  const int64_t n = features.size(0), half = n / 2;
  std::vector<int64_t> first(static_cast<size_t>(half)), second(static_cast<size_t>(n - half));
  std::iota(first.begin(), first.end(), int64_t(0));
  std::iota(second.begin(), second.end(), half);
  const Tensor xf = fx::data::take_rows(features, first), af = fx::data::take_rows(a, first);
  const Tensor xs = fx::data::take_rows(features, second), as = fx::data::take_rows(a, second);
  fx::Generator gen(seed + 1000);
  Judge probe = make_judge(gen);
  auto opt = fx::optim::setup(fx::optim::Adam{.lr = 1e-2}, probe);
  for (int64_t s = 0; s < steps; ++s) {
    auto g =
        fx::gradient([&](const Judge& j) { return fx::logitbinarycrossentropy(j(xf), af); }, probe);
    fx::optim::update(opt, probe, g);
  }
  return binary_accuracy(probe(xs), as);
}

struct Outcome {
  double test_accuracy = 0, probe_accuracy = 0, judge_accuracy = 0;
};

// Trains a predictor against a judge with weight lambda; records "<tag>predictor_loss" and
// "<tag>judge_loss" in `history` and prints the loss lines when `print` is set.
template <class Predictor>
Outcome train(Predictor predictor, double lambda, const Args& args, const Marked& train_set,
              const Marked& test_set, fx::train::History& history, const std::string& tag,
              bool print) {
  // A copy of a model shares its tensors, and update() writes them in place: own them first.
  fx::for_each_tensor(predictor, [](Tensor& t) { t = t.clone(); });
  fx::Generator gen(args.seed);  // the same judge weights and batches for every lambda
  Judge judge = make_judge(gen);
  auto popt = fx::optim::setup(fx::optim::Adam{.lr = 1e-3}, predictor);
  auto jopt = fx::optim::setup(fx::optim::Adam{.lr = 1e-2}, judge);
  const int64_t n = train_set.x.size(0);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t(0));
  size_t next = order.size();
  const int64_t log_every = std::max<int64_t>(1, args.steps / 30);
  double task_sum = 0, judge_sum = 0;
  int64_t count = 0;
  for (int64_t step = 1; step <= args.steps; ++step) {
    if (next + size_t(args.batch) > order.size()) {  // a new epoch: reshuffle
      for (size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[gen.below(i + 1)]);
      next = 0;
    }
    const std::span<const int64_t> rows(order.data() + next, size_t(args.batch));
    next += size_t(args.batch);
    const Tensor x = fx::data::take_rows(train_set.x, rows);
    const Tensor y = fx::data::take_rows(train_set.y, rows);
    const Tensor a = fx::data::take_rows(train_set.a, rows);

    // The judge learns from the predictor as it is now (its output a constant here), with
    // several steps and a 10x larger rate so that it keeps up: against a stale judge the
    // predictor learns to fool that judge (flip its answers) instead of hiding the attribute.
    const Tensor seen = judge_input(predictor(x), y);
    Tensor jl;
    for (int64_t k = 0; k < args.judge_steps; ++k) {
      auto [jl1, jg] = fx::withgradient(
          [&](const Judge& j) { return fx::logitbinarycrossentropy(j(seen), a); }, judge);
      fx::optim::update(jopt, judge, jg);
      if (k == 0) jl = jl1;
    }

    // The predictor does its task and pushes the (fixed) judge's loss up.
    Tensor task;
    auto pg = fx::gradient(
        [&](const Predictor& p) {
          const Tensor logits = p(x);
          task = fx::logitcrossentropy(logits, y);
          if (lambda == 0) return task;
          return task - lambda * fx::logitbinarycrossentropy(judge(judge_input(logits, y)), a);
        },
        predictor);
    fx::optim::update(popt, predictor, pg);

    task_sum += task.item();
    judge_sum += jl.item();
    ++count;
    if (step % log_every == 0 || step == args.steps) {
      history.add(
          {.step = step, .epoch = 1, .name = tag + "predictor_loss", .value = task_sum / count});
      history.add(
          {.step = step, .epoch = 1, .name = tag + "judge_loss", .value = judge_sum / count});
      if (print)
        std::printf("step=%lld predictor_loss=%.4f judge_loss=%.4f\n", (long long)step,
                    task_sum / count, judge_sum / count);
      task_sum = judge_sum = 0;
      count = 0;
    }
  }

  Outcome out;
  const Tensor logits = predictor(test_set.x);
  out.test_accuracy =
      fx::mean(fx::astype(fx::eq(fx::data::onecold(logits), test_set.y), fx::f32)).item();
  const Tensor features = judge_input(logits, test_set.y);
  out.judge_accuracy = binary_accuracy(judge(features), test_set.a);
  out.probe_accuracy = probe_accuracy(features, test_set.a, args.probe_steps, args.seed);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  fx::examples::Cli cli("dan",
                        "Trains a Fashion-MNIST classifier against a judge that tries to recover a "
                        "protected attribute from its output (a discriminative adversarial "
                        "network), beside a lambda = 0 baseline.");
  cli.option("--steps", "N", "training steps (batches) per run", args.steps, {.min = int64_t(1)});
  cli.option("--batch", "B", "images per batch", args.batch, {.min = int64_t(1)});
  cli.option("--lambda", "L", "weight of the judge's loss in the predictor's", args.lambda,
             {.min = 0.0});
  cli.option("--bias", "P", "P(a = 1) for classes 0-4 in training (1 - P for 5-9)", args.bias,
             {.min = 0.0, .max = 1.0});
  cli.option("--train-subset", "N", "train on the first N images", args.train_subset,
             {.min = int64_t(1)});
  cli.option("--judge-steps", "K", "judge updates per predictor update", args.judge_steps,
             {.min = int64_t(1)});
  cli.option("--probe-steps", "N", "Adam steps of the probe judge", args.probe_steps,
             {.min = int64_t(1)});
  cli.option("--seed", "S", "seed of the weights, attributes and batches", args.seed);
  cli.option("--data", "DIR", "directory with the Fashion-MNIST IDX files", args.data);
  cli.option("--plot", "FILE", "both runs' loss curves (PNG)", args.plot);
  cli.option("--threads", "T", "CPU threads for OpenMP and OpenBLAS", args.threads,
             {.min = 0, .shown_default = "all"});
  cli.parse_or_exit(argc, argv);
  if (args.threads > 0) {  // small matrices: on a shared machine one thread is often fastest
    omp_set_num_threads(args.threads);
    if (openblas_set_num_threads) openblas_set_num_threads(args.threads);
  }

  fx::data::Dataset train_raw, test_raw;
  try {
    train_raw = fx::data::fashion_mnist(args.data, "train");
    test_raw = fx::data::fashion_mnist(args.data, "test");
  } catch (const fx::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  if (args.train_subset < train_raw.size()) {
    std::vector<int64_t> rows(size_t(args.train_subset));
    std::iota(rows.begin(), rows.end(), int64_t(0));
    train_raw.images = fx::data::take_rows(train_raw.images, rows);
    train_raw.labels = fx::data::take_rows(train_raw.labels, rows);
  }
  if (args.batch > train_raw.size()) {
    std::cerr << "dan: --batch " << args.batch << " exceeds the " << train_raw.size()
              << " training images\n";
    return 2;
  }
  fx::Generator data_gen(args.seed + 7);
  const Marked train_set = mark(train_raw, args.bias, data_gen);
  const Marked test_set = mark(test_raw, 0.5, data_gen);
  std::printf(
      "train_images=%lld train_attribute_label_agreement=%.3f\n", (long long)train_raw.size(),
      fx::mean(fx::astype(
                   fx::eq(fx::reshape(train_set.a, {train_raw.size()}),
                          fx::astype(fx::lt(train_set.y, fx::full_like(train_set.y, 5)), fx::f32)),
                   fx::f32))
          .item());

  // The judge's loss when it knows the label alone (a is Bernoulli(bias) given the label's
  // group): the level an adversarial run's judge_loss should settle at, the entropy H(bias).
  const double b = std::clamp(args.bias, 1e-12, 1 - 1e-12);
  std::printf("judge_loss_label_only=%.4f\n", -(b * std::log(b) + (1 - b) * std::log(1 - b)));

  fx::Generator init_gen(args.seed);
  const auto predictor = fx::nn::Chain(fx::nn::Dense(784, 128, fx::relu, init_gen),
                                       fx::nn::Dense(128, 10, fx::identity, init_gen));
  fx::train::History history;
  const Outcome base =
      train(predictor, 0.0, args, train_set, test_set, history, "baseline_", false);
  const Outcome adv = train(predictor, args.lambda, args, train_set, test_set, history, "", true);

  std::printf(
      "baseline_test_accuracy=%.4f\nbaseline_probe_accuracy=%.4f\nbaseline_judge_accuracy=%.4f\n",
      base.test_accuracy, base.probe_accuracy, base.judge_accuracy);
  std::printf("test_accuracy=%.4f\nprobe_accuracy=%.4f\njudge_accuracy=%.4f\n", adv.test_accuracy,
              adv.probe_accuracy, adv.judge_accuracy);
  std::printf("leak_ratio=%.3f\n", (adv.probe_accuracy - 0.5) / (base.probe_accuracy - 0.5));
  if (!args.plot.empty()) {
    char title[64];
    std::snprintf(title, sizeof title, "dan lambda %g", args.lambda);
    fx::train::plot_history(history, args.plot,
                            {.series = {"predictor_loss", "judge_loss", "baseline_predictor_loss",
                                        "baseline_judge_loss"},
                             .title = title});
  }
  const bool ok = adv.test_accuracy >= 0.7 && base.judge_accuracy >= 0.8 &&
                  base.probe_accuracy >= 0.8 && adv.judge_accuracy <= 0.6 &&
                  adv.probe_accuracy - 0.5 <= 0.65 * (base.probe_accuracy - 0.5);
  if (!ok) return 1;
  std::printf("dan: ok\n");
  return 0;
}
