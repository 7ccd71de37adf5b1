// Losses as composites of public ops, except logitcrossentropy with integer labels, one
// primitive (ops/crossentropy.cpp); the only non-differentiable work is validating labels.
#include "fluxion/nn/losses.hpp"

#include <limits>

#include "fluxion/nn/activations.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/index.hpp"
#include "fluxion/ops/primitives.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/fused.hpp"

namespace fx {
namespace {

std::string describe(const Tensor& t) {
  return t.defined() ? std::string(dtype_name(t.dtype())) + " " + t.shape().to_string()
                     : std::string("undefined");
}

void check_floating(const Tensor& x, const char* loss, const char* what) {
  FX_CHECK(x.defined() && is_floating(x.dtype()), "fx::", loss, ": ", what,
           " must be a floating tensor, got ", describe(x));
}

// Targets follow the prediction's dtype, so an f32 model gets an f32 loss whatever y holds.
Tensor like_prediction(const Tensor& y, const Tensor& pred) {
  return y.dtype() == pred.dtype() ? y : astype(y, pred.dtype());
}

// Targets of the prediction's shape, in the prediction's floating dtype.
Tensor dense_target(const Tensor& pred, const Tensor& y, const char* loss) {
  check_floating(pred, loss, "the prediction");
  FX_CHECK(y.defined() && y.shape() == pred.shape(), "fx::", loss, ": prediction ", pred.shape(),
           " and target ", y.defined() ? y.shape().to_string() : "undefined", " differ in shape");
  return like_prediction(y, pred);
}

double eps_of(DType t) {
  return t == f64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
}

// Reads the labels once to check their range: a bad label would otherwise surface as a gather
// error that does not say which loss or which sample was wrong.
template <class I>
void check_label_range(const Tensor& labels, int64_t classes, const char* loss) {
  const I* p = labels.data<I>();
  for (int64_t i = 0, n = labels.numel(); i < n; ++i)
    FX_CHECK(p[i] >= 0 && p[i] < classes, "fx::", loss, ": label ", int64_t(p[i]), " at position ",
             i, " is out of range for ", classes, " classes");
}

bool is_labels(const Tensor& y) { return y.defined() && (y.dtype() == i64 || y.dtype() == i32); }

// Integer labels y for the prediction x: shaped like x without its class axis and, on the CPU,
// each in range; contiguous.
Tensor checked_labels(const Tensor& x, const Tensor& y, const char* loss) {
  Shape want(std::span<const int64_t>(x.shape().data(), x.ndim() - 1));
  FX_CHECK(y.shape() == want, "fx::", loss, ": labels ", y.shape(), " do not match prediction ",
           x.shape(), " (expected labels ", want, ")");
  Tensor labels = contiguous(y);
  // Device labels, and labels without data of their own (traced, or batched by fx::vmap), are
  // left to gather's own check.
  if (labels.device() == Device::cpu && labels.storage()->data) {
    if (y.dtype() == i64) check_label_range<int64_t>(labels, x.shape().back(), loss);
    else check_label_range<int32_t>(labels, x.shape().back(), loss);
  }
  return labels;
}

// x[..., y[...]] as shape (..., 1) for integer labels y of shape (...).
Tensor pick(const Tensor& x, const Tensor& y, const char* loss) {
  return gather(x, -1, unsqueeze(checked_labels(x, y, loss), -1));
}

// One-hot or probability targets: the prediction's shape, converted to its dtype.
Tensor class_target(const Tensor& pred, const Tensor& y, const char* loss) {
  FX_CHECK(y.defined() && y.shape() == pred.shape(), "fx::", loss, ": prediction ", pred.shape(),
           " and target ", describe(y),
           " differ in shape (targets are one-hot or probabilities of the prediction's shape, "
           "or integer labels without the class axis)");
  return like_prediction(y, pred);
}

// The number of samples a class-axis loss averages over: every position but the class axis.
double per_sample(const Tensor& pred) {
  int64_t classes = pred.shape().back();
  return classes == 0 ? 0.0 : 1.0 / double(pred.numel() / classes);
}

void check_class_axis(const Tensor& pred, const char* loss) {
  check_floating(pred, loss, "the prediction");
  FX_CHECK(pred.ndim() >= 1, "fx::", loss, ": the prediction needs a class axis, got ",
           pred.shape());
}

}  // namespace

Tensor mse(const Tensor& yhat, const Tensor& y) {
  Tensor t = dense_target(yhat, y, "mse");
  return mean(square(yhat - t));
}

Tensor logitcrossentropy(const Tensor& logits, const Tensor& y) {
  const char* loss = "logitcrossentropy";
  check_class_axis(logits, loss);
  // Integer labels: one primitive (ops/crossentropy.cpp) over the logits as (N, C) rows.
  const int64_t classes = logits.shape().back();
  if (is_labels(y) && (logits.dtype() == f32 || logits.dtype() == f64) && classes > 0 &&
      logits.numel() > 0 && logits.device() == Device::cpu &&
      has_kernel(logitcrossentropy_p, logits.device())) {
    Tensor labels = checked_labels(logits, y, loss);
    return bind(logitcrossentropy_p,
                {reshape(contiguous(logits), {-1, classes}), reshape(labels, {-1})});
  }
  Tensor lp = logsoftmax(logits, -1);
  Tensor total = is_labels(y) ? sum(pick(lp, y, loss)) : sum(class_target(lp, y, loss) * lp);
  return neg(total) * per_sample(logits);
}

Tensor crossentropy(const Tensor& probs, const Tensor& y) {
  const char* loss = "crossentropy";
  check_class_axis(probs, loss);
  double eps = eps_of(probs.dtype());
  // With labels, only the picked probabilities go through the log.
  Tensor total = is_labels(y) ? sum(log(pick(probs, y, loss) + eps))
                              : sum(class_target(probs, y, loss) * log(probs + eps));
  return neg(total) * per_sample(probs);
}

Tensor binarycrossentropy(const Tensor& probs, const Tensor& y) {
  Tensor t = dense_target(probs, y, "binarycrossentropy");
  double eps = eps_of(probs.dtype());
  return mean(neg(t * log(probs + eps) + (1.0 - t) * log((1.0 - probs) + eps)));
}

Tensor logitbinarycrossentropy(const Tensor& logits, const Tensor& y) {
  Tensor t = dense_target(logits, y, "logitbinarycrossentropy");
  return mean((1.0 - t) * logits + softplus(neg(logits)));
}

}  // namespace fx
