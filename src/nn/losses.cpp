// Losses as composites of public ops, except logitcrossentropy with integer labels and the
// default mean, one primitive (ops/crossentropy.cpp); the only non-differentiable work is
// validating labels. Definitions follow Flux's src/losses/functions.jl term for term.
#include "fluxion/nn/losses.hpp"

#include <limits>

#include "fluxion/ad/custom.hpp"
#include "fluxion/ad/tape.hpp"
#include "fluxion/nn/activations.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/index.hpp"
#include "fluxion/ops/primitives.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"
#include "nn/activation_kernels.hpp"
#include "nn/loss_kernels.hpp"
#include "ops/fused.hpp"

namespace fx {

Tensor Agg::operator()(const Tensor& values) const {
  switch (kind_) {
    case Kind::mean: return mean(values);
    case Kind::sum: return sum(values);
    case Kind::none: return values;
    case Kind::custom: break;
  }
  return fn_(values);
}

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

double eps_of(DType t, double eps) {
  if (eps >= 0) return eps;
  return t == f64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
}

// x log(y), 0 where x == 0 (Flux's xlogy). The log's argument is replaced there too, so the
// branch `where` discards cannot send 0 * inf = NaN into a gradient.
Tensor xlogy(const Tensor& x, const Tensor& y) {
  Tensor zero = x == 0.0;
  return where(zero, 0.0, x * log(where(zero, 1.0, y)));
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

// x[..., y[...]] for integer labels y of shape (...): shape (...).
Tensor pick(const Tensor& x, const Tensor& y, const char* loss) {
  return squeeze(gather(x, -1, unsqueeze(checked_labels(x, y, loss), -1)), -1);
}

// One-hot or probability targets: the prediction's shape, converted to its dtype.
Tensor class_target(const Tensor& pred, const Tensor& y, const char* loss) {
  FX_CHECK(y.defined() && y.shape() == pred.shape(), "fx::", loss, ": prediction ", pred.shape(),
           " and target ", describe(y),
           " differ in shape (targets are one-hot or probabilities of the prediction's shape, "
           "or integer labels without the class axis)");
  return like_prediction(y, pred);
}

// The class axis `dims` of pred as a non-negative index; labels need it to be the last.
int64_t class_axis(const Tensor& pred, const Tensor& y, int64_t dims, const char* loss) {
  check_floating(pred, loss, "the prediction");
  FX_CHECK(pred.ndim() >= 1, "fx::", loss, ": the prediction needs a class axis, got ",
           pred.shape());
  const int64_t nd = pred.ndim();
  FX_CHECK(dims >= -nd && dims < nd, "fx::", loss, ": class axis ", dims,
           " is out of range for the prediction ", pred.shape());
  const int64_t axis = dims < 0 ? dims + nd : dims;
  FX_CHECK(!is_labels(y) || axis == nd - 1, "fx::", loss,
           ": integer labels need the class axis last, got dims ", dims, " for ", pred.shape());
  return axis;
}

}  // namespace

// --- regression ----------------------------------------------------------------------------------

Tensor mae(const Tensor& yhat, const Tensor& y, const Agg& agg) {
  return agg(abs(yhat - dense_target(yhat, y, "mae")));
}

Tensor mse(const Tensor& yhat, const Tensor& y, const Agg& agg) {
  Tensor t = dense_target(yhat, y, "mse");
  // The mean or sum of a constant target (no tape tracks it) on the CPU: one fused node
  // (loss_kernels.hpp) in the first-order reverse mode, the kernel alone outside any recording.
  const bool reduces = agg.kind() == Agg::Kind::mean || agg.kind() == Agg::Kind::sum;
  if (reduces && nn::detail::activation_fusable(yhat) && t.dtype() == yhat.dtype() &&
      t.device() == Device::cpu && t.impl()->ntags == 0) {
    const double scale = agg.kind() == Agg::Kind::mean ? 1.0 / double(yhat.numel()) : 1.0;
    auto fwd = [t, scale](const Tensor& yhat) {
      return nn::detail::squared_error_forward(yhat, t, scale);
    };
    if (ad::num_active_tapes() == 0) return fwd(yhat);
    return custom_rule("fx::mse", fwd,
                       [t, scale](const Tensor& yhat, const Tensor&, const Tensor& dy) {
                         return nn::detail::squared_error_backward(yhat, t, dy, scale);
                       })(yhat);
  }
  return agg(square(yhat - t));
}

Tensor msle(const Tensor& yhat, const Tensor& y, const Agg& agg, double eps) {
  Tensor t = dense_target(yhat, y, "msle");
  double e = eps_of(yhat.dtype(), eps);
  return agg(square(log((yhat + e) / (t + e))));
}

Tensor huber_loss(const Tensor& yhat, const Tensor& y, const Agg& agg, double delta) {
  Tensor t = dense_target(yhat, y, "huber_loss");
  FX_CHECK(delta > 0, "fx::huber_loss: delta must be positive, got ", delta);
  Tensor d = yhat - t, e = abs(d);
  // The quadratic branch squares d itself, not |d|, so it is smooth through 0 (second order).
  return agg(where(e < delta, square(d) * 0.5, (e - 0.5 * delta) * delta));
}

// --- classification ------------------------------------------------------------------------------

Tensor label_smoothing(const Tensor& y, double alpha, int64_t dims) {
  FX_CHECK(y.defined() && y.ndim() >= 1,
           "fx::label_smoothing: needs targets with a class axis, got ", describe(y));
  FX_CHECK(alpha > 0 && alpha < 1, "fx::label_smoothing: alpha must lie in (0, 1), got ", alpha);
  const int64_t nd = y.ndim();
  FX_CHECK(dims >= -nd && dims < nd, "fx::label_smoothing: class axis ", dims,
           " is out of range for ", y.shape());
  Tensor t = is_floating(y.dtype()) ? y : astype(y, f32);
  return t * (1.0 - alpha) + alpha / double(y.shape()[dims < 0 ? dims + nd : dims]);
}

Tensor binary_label_smoothing(const Tensor& y, double alpha) {
  FX_CHECK(y.defined(), "fx::binary_label_smoothing: undefined targets");
  FX_CHECK(alpha > 0 && alpha < 1, "fx::binary_label_smoothing: alpha must lie in (0, 1), got ",
           alpha);
  Tensor t = is_floating(y.dtype()) ? y : astype(y, f32);
  return t * (1.0 - alpha) + alpha * 0.5;
}

Tensor logitcrossentropy(const Tensor& logits, const Tensor& y, const Agg& agg, int64_t dims) {
  const char* loss = "logitcrossentropy";
  const int64_t axis = class_axis(logits, y, dims, loss);
  // Integer labels and the mean: one primitive (ops/crossentropy.cpp) over (N, C) rows.
  const int64_t classes = logits.shape()[axis];
  if (agg.kind() == Agg::Kind::mean && is_labels(y) &&
      (logits.dtype() == f32 || logits.dtype() == f64) && classes > 0 && logits.numel() > 0 &&
      logits.device() == Device::cpu && has_kernel(logitcrossentropy_p, logits.device())) {
    Tensor labels = checked_labels(logits, y, loss);
    return bind(logitcrossentropy_p,
                {reshape(contiguous(logits), {-1, classes}), reshape(labels, {-1})});
  }
  Tensor lp = logsoftmax(logits, axis);
  Tensor per =
      is_labels(y) ? neg(pick(lp, y, loss)) : neg(sum(class_target(lp, y, loss) * lp, axis));
  return agg(per);
}

Tensor crossentropy(const Tensor& probs, const Tensor& y, const Agg& agg, int64_t dims,
                    double eps) {
  const char* loss = "crossentropy";
  const int64_t axis = class_axis(probs, y, dims, loss);
  double e = eps_of(probs.dtype(), eps);
  // With labels, only the picked probabilities go through the log.
  Tensor per = is_labels(y) ? neg(log(pick(probs, y, loss) + e))
                            : neg(sum(xlogy(class_target(probs, y, loss), probs + e), axis));
  return agg(per);
}

Tensor binarycrossentropy(const Tensor& probs, const Tensor& y, const Agg& agg, double eps) {
  Tensor t = dense_target(probs, y, "binarycrossentropy");
  double e = eps_of(probs.dtype(), eps);
  return agg(neg(xlogy(t, probs + e) + xlogy(1.0 - t, (1.0 - probs) + e)));
}

Tensor logitbinarycrossentropy(const Tensor& logits, const Tensor& y, const Agg& agg) {
  Tensor t = dense_target(logits, y, "logitbinarycrossentropy");
  // -logsigmoid(x) = softplus(-x), which never overflows.
  return agg((1.0 - t) * logits + softplus(neg(logits)));
}

Tensor kldivergence(const Tensor& probs, const Tensor& y, const Agg& agg, int64_t dims,
                    double eps) {
  const char* loss = "kldivergence";
  const int64_t axis = class_axis(probs, y, dims, loss);
  FX_CHECK(!is_labels(y),
           "fx::kldivergence: needs a target distribution of the prediction's shape ",
           probs.shape(), ", got integer labels ", y.shape());
  Tensor t = class_target(probs, y, loss);
  // As Flux: the target's negative entropy and the cross-entropy, each aggregated.
  Tensor entropy = agg(sum(xlogy(t, t), axis));
  return entropy + crossentropy(probs, t, agg, axis, eps);
}

Tensor poisson_loss(const Tensor& yhat, const Tensor& y, const Agg& agg) {
  Tensor t = dense_target(yhat, y, "poisson_loss");
  return agg(yhat - xlogy(t, yhat));
}

Tensor hinge_loss(const Tensor& yhat, const Tensor& y, const Agg& agg) {
  Tensor t = dense_target(yhat, y, "hinge_loss");
  return agg(relu(1.0 - yhat * t));
}

Tensor squared_hinge_loss(const Tensor& yhat, const Tensor& y, const Agg& agg) {
  Tensor t = dense_target(yhat, y, "squared_hinge_loss");
  return agg(square(relu(1.0 - yhat * t)));
}

Tensor dice_coeff_loss(const Tensor& yhat, const Tensor& y, double smooth) {
  Tensor t = dense_target(yhat, y, "dice_coeff_loss");
  return 1.0 - (sum(t * yhat) * 2.0 + smooth) / (sum(square(t)) + sum(square(yhat)) + smooth);
}

Tensor tversky_loss(const Tensor& yhat, const Tensor& y, double beta) {
  Tensor t = dense_target(yhat, y, "tversky_loss");
  Tensor num = sum(t * yhat) + 1.0;
  Tensor den = sum(t * yhat + (1.0 - t) * yhat * beta + t * (1.0 - yhat) * (1.0 - beta)) + 1.0;
  return 1.0 - num / den;
}

Tensor binary_focal_loss(const Tensor& probs, const Tensor& y, const Agg& agg, double gamma,
                         double eps) {
  Tensor t = dense_target(probs, y, "binary_focal_loss");
  Tensor p = probs + eps_of(probs.dtype(), eps);
  Tensor p_t = t * p + (1.0 - t) * (1.0 - p);
  return agg(pow(1.0 - p_t, gamma) * neg(log(p_t)));
}

Tensor focal_loss(const Tensor& probs, const Tensor& y, const Agg& agg, int64_t dims, double gamma,
                  double eps) {
  const char* loss = "focal_loss";
  const int64_t axis = class_axis(probs, y, dims, loss);
  FX_CHECK(!is_labels(y), "fx::focal_loss: needs one-hot targets of the prediction's shape ",
           probs.shape(), ", got integer labels ", y.shape());
  Tensor t = class_target(probs, y, loss);
  Tensor p = probs + eps_of(probs.dtype(), eps);
  return agg(sum(neg(t) * pow(1.0 - p, gamma) * log(p), axis));
}

Tensor siamese_contrastive_loss(const Tensor& yhat, const Tensor& y, const Agg& agg,
                                double margin) {
  Tensor t = dense_target(yhat, y, "siamese_contrastive_loss");
  FX_CHECK(margin >= 0, "fx::siamese_contrastive_loss: margin must be non-negative, got ", margin);
  return agg((1.0 - t) * square(yhat) + t * square(relu(margin - yhat)));
}

}  // namespace fx
