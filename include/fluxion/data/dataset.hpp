// fx::data::Dataset: inputs and targets that belong together, sample i being row i of each.
//
//   fx::data::Dataset train = fx::data::fashion_mnist(fx::data::kFashionMnistDir, "train");
//   train.images.shape();   // (60000, 784) f32 in [0, 1]
//   train.labels.shape();   // (60000,) i64
//   for (auto [x, y] : fx::data::DataLoader(train, {.batch = 128})) { /* x: (128, 784) */ }
//
// It is a plain pair of tensors rather than an interface with virtual `get(i)`: batches are cut
// from whole tensors with memcpy, which is what keeps a data loader off the profile.
#pragma once
#include "fluxion/core/tensor.hpp"

namespace fx::data {

struct Dataset {
  Tensor images;  // inputs, first dimension = samples
  Tensor labels;  // targets, same first dimension
  int64_t size() const { return images.defined() ? images.shape()[0] : 0; }
};

}  // namespace fx::data
