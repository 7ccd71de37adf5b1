// Small evaluation helpers for training loops: classification accuracy of a model over a
// dataset, and a running mean for the loss shown on a progress bar.
//
//   auto model = fx::nn::Dense(784, 10);
//   auto test = fx::data::fashion_mnist(fx::data::kFashionMnistDir, "test");
//   double acc = fx::train::accuracy(model, test.images, test.labels);   // in [0, 1]
//   fx::Tensor x = test.images, l = fx::logitcrossentropy(model(x), test.labels);
//   fx::train::ProgressBar bar(1);
//   fx::train::RunningMean loss;
//   loss.add(l.item(), x.size(0));       // weighted by batch size
//   bar.update({{"loss", loss.value()}});
//
// accuracy evaluates in batches so memory stays bounded on large test sets; the labels may be
// class indices (N,) or one-hot / probability rows (N, C), in which case their argmax counts.
#pragma once
#include <cstdint>

#include "fluxion/core/tensor.hpp"
#include "fluxion/data/dataloader.hpp"

namespace fx::train {

// How many entries of predicted (i64) equal labels (integer dtype), which must have its shape.
int64_t count_equal(const Tensor& predicted, const Tensor& labels);

template <class Model>
double accuracy(const Model& model, const Tensor& x, const Tensor& y, int64_t batch = 1000) {
  int64_t correct = 0, seen = 0;
  for (auto [xb, yb] : data::DataLoader(x, y, {.batch = batch})) {
    Tensor pred = data::onecold(model(xb));
    correct += count_equal(pred, yb.ndim() == pred.ndim() + 1 ? data::onecold(yb) : yb);
    seen += pred.numel();
  }
  return seen ? double(correct) / double(seen) : 0.0;
}

struct RunningMean {
  double sum = 0;
  double weight = 0;
  void add(double value, double w = 1) {
    sum += value * w;
    weight += w;
  }
  double value() const { return weight > 0 ? sum / weight : 0.0; }
  void reset() { *this = {}; }
};

}  // namespace fx::train
