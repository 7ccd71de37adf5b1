// Loss functions: every loss of Flux, with Flux's names, definitions and defaults. Each takes an
// `agg` (how the per-element or per-sample losses become the result): fx::agg::mean (the
// default), fx::agg::sum, fx::agg::none (the unreduced tensor) or any callable.
//
//   auto model = fx::nn::Dense(784, 10);
//   fx::Tensor x = fx::randn({32, 784}), labels = fx::zeros({32}, fx::i64);
//   fx::Tensor onehot = fx::data::onehot(labels, 10), yhat = fx::randn({32}), y = fx::randn({32});
//   fx::Tensor scores = fx::randn({32}), targets = fx::rand({32});
//   auto loss = fx::logitcrossentropy(model(x), labels);   // logits (N, C), labels i64 (N,)
//   auto same = fx::logitcrossentropy(model(x), onehot);   // or one-hot / probabilities (N, C)
//   auto soft = fx::logitcrossentropy(model(x), fx::label_smoothing(onehot, 0.1));
//   auto l2 = fx::mse(yhat, y);                              // mean((yhat - y)^2)
//   auto per = fx::mae(yhat, y, fx::agg::none);              // |yhat - y|, shape (32,)
//   auto tot = fx::huber_loss(yhat, y, fx::agg::sum, 0.5);   // summed, delta 0.5
//   auto top = fx::mse(yhat, y, [](const fx::Tensor& l) { return fx::max(l); });
//   auto bce = fx::logitbinarycrossentropy(scores, targets); // targets in [0, 1], same shape
//
// fluxion is batch-first, so the class axis of the class losses (crossentropy,
// logitcrossentropy, kldivergence, focal_loss, label_smoothing) is their `dims` argument,
// default the LAST axis where Flux's default is the first: (N, C) or (N, T, C) logits. Those
// losses sum over the class axis and drop it, then aggregate: with fx::agg::none they return one
// loss per sample, (N,) or (N, T). Integer labels (i64/i32, the prediction's shape without the
// class axis) go through fx::gather, never through a one-hot tensor; they need the class axis
// last. A target whose shape does not match throws fx::Error naming the loss and both shapes;
// a label outside [0, C) names the label and its position. The `logit` versions take
// unnormalised scores and are the stable choice; the others take probabilities and add `eps`
// (machine epsilon of the prediction's dtype when left negative) inside the log, as Flux does.
#pragma once
#include <concepts>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

#include "fluxion/core/tensor.hpp"

namespace fx {

// How a loss reduces its unreduced values: mean (Flux's default), sum, none, or a callable.
class Agg {
 public:
  enum class Kind { mean, sum, none, custom };
  Agg(Kind kind = Kind::mean) : kind_(kind) {}  // NOLINT: fx::agg::sum converts implicitly
  template <class F>
    requires(!std::same_as<std::decay_t<F>, Agg> && !std::same_as<std::decay_t<F>, Kind> &&
             std::is_invocable_r_v<Tensor, const F&, const Tensor&>)
  Agg(F f) : kind_(Kind::custom), fn_(std::move(f)) {}  // NOLINT: lambdas convert implicitly
  Tensor operator()(const Tensor& values) const;
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
  std::function<Tensor(const Tensor&)> fn_;
};
namespace agg {
inline constexpr Agg::Kind mean = Agg::Kind::mean;  // over every element: a 0-d tensor
inline constexpr Agg::Kind sum = Agg::Kind::sum;    // over every element: a 0-d tensor
inline constexpr Agg::Kind none = Agg::Kind::none;  // the unreduced tensor
}  // namespace agg

// --- regression: yhat and y of the same shape ----------------------------------------------------
// agg(|yhat - y|)
Tensor mae(const Tensor& yhat, const Tensor& y, const Agg& agg = {});
// agg((yhat - y)^2)
Tensor mse(const Tensor& yhat, const Tensor& y, const Agg& agg = {});
// agg(log((yhat + eps) / (y + eps))^2), for positive targets spanning magnitudes.
Tensor msle(const Tensor& yhat, const Tensor& y, const Agg& agg = {}, double eps = -1);
// agg of e^2 / 2 where e = |yhat - y| < delta, delta (e - delta / 2) elsewhere.
Tensor huber_loss(const Tensor& yhat, const Tensor& y, const Agg& agg = {}, double delta = 1);

// --- classification ------------------------------------------------------------------------------
// y (1 - alpha) + alpha / C, C the length of axis `dims`: smoothed one-hot targets, 0 < alpha < 1.
Tensor label_smoothing(const Tensor& y, double alpha, int64_t dims = -1);
// y (1 - alpha) + alpha / 2, for binary targets (Flux's dims = 0).
Tensor binary_label_smoothing(const Tensor& y, double alpha);
// agg(-sum(y log(probs + eps), dims)); with labels, agg(-log(probs[label] + eps)).
Tensor crossentropy(const Tensor& probs, const Tensor& y, const Agg& agg = {}, int64_t dims = -1,
                    double eps = -1);
// agg(-sum(y logsoftmax(logits, dims), dims)); with labels, agg(-logsoftmax(logits)[label]).
Tensor logitcrossentropy(const Tensor& logits, const Tensor& y, const Agg& agg = {},
                         int64_t dims = -1);
// agg(-y log(probs + eps) - (1 - y) log(1 - probs + eps)), elementwise.
Tensor binarycrossentropy(const Tensor& probs, const Tensor& y, const Agg& agg = {},
                          double eps = -1);
// agg((1 - y) x - logsigmoid(x)) = binarycrossentropy(sigmoid(x), y) without its rounding.
Tensor logitbinarycrossentropy(const Tensor& logits, const Tensor& y, const Agg& agg = {});
// KL(y || probs) = agg(sum(y log y, dims)) + crossentropy(probs, y, agg, dims, eps).
Tensor kldivergence(const Tensor& probs, const Tensor& y, const Agg& agg = {}, int64_t dims = -1,
                    double eps = -1);
// agg(yhat - y log(yhat)), for a predicted Poisson rate yhat > 0.
Tensor poisson_loss(const Tensor& yhat, const Tensor& y, const Agg& agg = {});
// agg(max(0, 1 - yhat y)), for targets y in {-1, 1}.
Tensor hinge_loss(const Tensor& yhat, const Tensor& y, const Agg& agg = {});
// agg(max(0, 1 - yhat y)^2)
Tensor squared_hinge_loss(const Tensor& yhat, const Tensor& y, const Agg& agg = {});
// 1 - (2 sum(y yhat) + smooth) / (sum(y^2) + sum(yhat^2) + smooth): a 0-d tensor (no agg in Flux).
Tensor dice_coeff_loss(const Tensor& yhat, const Tensor& y, double smooth = 1);
// 1 - (sum(y yhat) + 1) / (sum(y yhat + beta (1 - y) yhat + (1 - beta) y (1 - yhat)) + 1).
Tensor tversky_loss(const Tensor& yhat, const Tensor& y, double beta = 0.7);
// agg(-(1 - p_t)^gamma log(p_t)), p_t = y (probs + eps) + (1 - y) (1 - probs - eps).
Tensor binary_focal_loss(const Tensor& probs, const Tensor& y, const Agg& agg = {},
                         double gamma = 2, double eps = -1);
// agg(sum(-y (1 - p)^gamma log(p), dims)), p = probs + eps.
Tensor focal_loss(const Tensor& probs, const Tensor& y, const Agg& agg = {}, int64_t dims = -1,
                  double gamma = 2, double eps = -1);
// agg((1 - y) yhat^2 + y max(0, margin - yhat)^2): yhat a distance, y 1 for dissimilar pairs.
Tensor siamese_contrastive_loss(const Tensor& yhat, const Tensor& y, const Agg& agg = {},
                                double margin = 1);

// --- sequences -----------------------------------------------------------------------------------
// Connectionist temporal classification: -log of the total probability of every alignment of
// each target with its input, by the forward (alpha) recursion in log space, written in tensor
// ops so that it differentiates (twice, too). logits (N, T, C) are unnormalised (logsoftmax is
// applied, as Flux does; log-probabilities pass through unchanged); targets (N, S) integer
// labels, padded (or (T, C) logits and (S,) targets: one sequence, as Flux's ctc_loss takes);
// input_lengths / target_lengths give each sample's T_n <= T and S_n <= S (empty:
// all T, all S). blank is a class index, negative counting from the end: -1, the last class,
// is Flux's choice (PyTorch's default is 0). Returns agg of the per-sample losses (N,); PyTorch's
// reduction='mean' divides each by its target length first. An impossible alignment (T_n too
// short for the target) costs about 1e30 rather than PyTorch's inf.
Tensor ctc_loss(const Tensor& logits, const Tensor& targets,
                const std::vector<int64_t>& input_lengths = {},
                const std::vector<int64_t>& target_lengths = {}, int64_t blank = -1,
                const Agg& agg = {});

}  // namespace fx
