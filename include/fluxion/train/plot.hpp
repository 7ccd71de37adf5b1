// plot_history: training and validation curves from a History, as a PNG (encoded by libpng).
//
//   auto model = fx::nn::Dense(784, 10);
//   auto opt = fx::optim::setup(fx::optim::Adam{}, model);
//   fx::data::DataLoader loader(fx::randn({256, 784}), fx::zeros({256}, fx::i64), {.batch = 64});
//   auto loss = [](const auto& m, const fx::Tensor& x, const fx::Tensor& y) {
//     return fx::logitcrossentropy(m(x), y);
//   };
//   fx::train::History h = fx::train::fit(model, opt, loader, loss, {.epochs = 2});
//   fx::train::plot_history(h, "run/curves.png");                   // every "...loss..." series
//   fx::train::plot_history(h, "run/acc.png", {.series = {"test_accuracy"}, .title = "accuracy"});
//
// The picture is drawn here, into an RGB buffer: axes, "nice" ticks (1, 2, 5 x 10^k) with
// labels, light grid lines, one polyline per series against the optimiser step, and a legend in
// the corner. Series take the colours of plot_colour(0), plot_colour(1), ... in order, drawn
// without anti-aliasing, so each curve's pixels carry exactly its colour. The file is written
// atomically.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fluxion/train/history.hpp"

namespace fx::train {

struct PlotOptions {
  int width = 800;
  int height = 500;
  // Metric names to draw; empty: every series whose name contains "loss" (all, if none does).
  std::vector<std::string> series = {};
  std::string title = {};
};

using Rgb = std::array<uint8_t, 3>;
Rgb plot_colour(size_t i);  // the i-th series' colour (a palette of 6, repeating)

void plot_history(const History& history, const std::string& path, const PlotOptions& options = {});

}  // namespace fx::train
