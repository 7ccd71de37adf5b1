// logitcrossentropy with integer labels as one primitive: the mean over rows of
// logsumexp(x_i) - x_i[y_i] in one pass over the logits, and its pullback,
// (softmax(x) - onehot(y)) dy / N, in one more. Composed (logsoftmax, pick, sum, scale) the
// loss was seven recorded ops and ten kernels forward and back; a 128 x 10 classifier's took
// ~11 us of kernels a step, serial work that the rest of a 2-thread step could not hide.
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/index.hpp"
#include "fluxion/ops/primitives.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/batching.hpp"
#include "ops/fused.hpp"

namespace fx {
namespace {

Tensor softmax_rows(const Tensor& x) { return exp(x - logsumexp(x, {1}, true)); }

// Batching rule (fx::vmap): the composed loss per example, logsumexp(x_i) - x_i[y_i] averaged
// over each example's rows.
Tensor logitcrossentropy_batch(const Primitive&, const BatchArgs& a) {
  const Tensor x = detail::batched_input(a, 0), labels = detail::batched_input(a, 1);
  const Tensor picked = squeeze(gather(x, -1, unsqueeze(labels, -1)), -1);
  return mean(logsumexp(x, {-1}) - picked, {-1});
}

}  // namespace

// Internal, no pullback: only used when nothing records (the pullback below).
Primitive logitcrossentropy_backward_p{
    .name = "logitcrossentropy_backward",
    .forward = [](const Primitive& p, std::span<const Tensor> in, Attrs pr) {
      Tensor out = Tensor::empty(in[1].shape(), in[1].dtype(), in[1].device());
      dispatch({p, in, out, pr});
      return out;
    }};

// Inputs (logits (N, C) f32 or f64, labels (N,) i64 or i32 in [0, C)), N and C at least 1;
// the output is 0-d, of the logits' dtype.
Primitive logitcrossentropy_p{
    .name = "logitcrossentropy",
    .forward =
        [](const Primitive& p, std::span<const Tensor> in, Attrs pr) {
          Tensor out = Tensor::empty({}, in[0].dtype(), output_device(in));
          dispatch({p, in, out, pr});
          return out;
        },
    .saves = saves::input(0) | saves::input(1),
    .pullback =
        [](const PullbackArgs& a, const Tensor& dy, Tensor* dx) {
          if (!a.wants(0)) return;  // the labels have no cotangent
          const Tensor &x = a.input(0), &labels = a.input(1);
          if (!detail::must_compose() && dy.dtype() == x.dtype() &&
              has_kernel(logitcrossentropy_backward_p, x.device())) {
            dx[0] = bind(logitcrossentropy_backward_p, {dy, x, labels});
            return;
          }
          const Tensor hot =
              astype(eq(unsqueeze(labels, 1), arange(x.shape()[1], labels.dtype())), x.dtype());
          dx[0] = (softmax_rows(x) - hot) * (dy * (1.0 / double(x.shape()[0])));
        },
    .jvp = [](const JvpArgs& a, const Tensor* dx) -> Tensor {
      if (!dx[0].defined()) return Tensor();
      const Tensor &x = a.input(0), &labels = a.input(1);
      const Tensor picked = gather(dx[0], 1, unsqueeze(labels, 1));
      return (sum(softmax_rows(x) * dx[0]) - sum(picked)) * (1.0 / double(x.shape()[0]));
    },
    .batch = logitcrossentropy_batch};

}  // namespace fx
