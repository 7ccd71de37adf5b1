// Loss functions, following Flux's names and conventions: each returns a 0-d tensor, the mean
// over the batch (for the cross-entropies, the sum over classes, then the mean over samples).
//
//   auto model = fx::nn::Dense(784, 10);
//   fx::Tensor x = fx::randn({32, 784}), labels = fx::zeros({32}, fx::i64);
//   fx::Tensor onehot = fx::data::onehot(labels, 10), yhat = fx::randn({32}), y = fx::randn({32});
//   fx::Tensor scores = fx::randn({32}), targets = fx::rand({32});
//   auto loss = fx::logitcrossentropy(model(x), labels);   // logits (N, C), labels i64 (N,)
//   auto same = fx::logitcrossentropy(model(x), onehot);   // or one-hot / probabilities (N, C)
//   auto l2 = fx::mse(yhat, y);                              // mean((yhat - y)^2)
//   auto bce = fx::logitbinarycrossentropy(scores, targets); // targets in [0, 1], same shape
//
// Classes lie along the last axis, so (N, T, C) logits with (N, T) labels also work. Targets
// given as integer labels go through fx::gather, never through a one-hot tensor. A target whose
// shape does not match throws fx::Error naming the loss and both shapes; a label outside
// [0, C) names the label and its position. The `logit` versions take unnormalised scores and
// are the stable choice; the others take probabilities and add machine epsilon inside the log.
#pragma once
#include "fluxion/core/tensor.hpp"

namespace fx {

// mean((yhat - y)^2) over every element; shapes must be equal.
Tensor mse(const Tensor& yhat, const Tensor& y);

// -sum(y * logsoftmax(logits)) / N, or with labels -mean(logsoftmax(logits)[i, y[i]]).
Tensor logitcrossentropy(const Tensor& logits, const Tensor& y);
// The same for probabilities p: log(p + eps) instead of logsoftmax.
Tensor crossentropy(const Tensor& probs, const Tensor& y);

// mean(-y log(p + eps) - (1 - y) log(1 - p + eps)) over every element.
Tensor binarycrossentropy(const Tensor& probs, const Tensor& y);
// mean((1 - y) x + softplus(-x)) = binarycrossentropy(sigmoid(x), y) without its rounding.
Tensor logitbinarycrossentropy(const Tensor& logits, const Tensor& y);

}  // namespace fx
