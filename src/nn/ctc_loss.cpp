// CTC loss (Graves et al. 2006) as tensor ops: the forward recursion over the extended label
// sequence z' = (blank, l1, blank, l2, ..., blank) of length L = 2S + 1,
//   alpha_t(s) = logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), [alpha_{t-1}(s-2)]) + log y_t(z'_s),
// where the s-2 term is allowed only when z'_s is a label different from z'_{s-2}. Everything
// the recursion reads from the targets (gather indices, the skip mask, each sample's last two
// states) is built once on the host; the T steps are then a handful of batched ops each, so
// reverse mode differentiates them like any other composition (the backward beta recursion of
// the paper is what the pullbacks compute).
#include <algorithm>
#include <vector>

#include "fluxion/nn/activations.hpp"
#include "fluxion/nn/losses.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/device.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/index.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"

namespace fx {
namespace {

// log 0 as a finite number: exp underflows to exactly 0 against any reachable state, and a
// logsumexp over states that are all unreachable stays finite (no inf - inf = NaN in gradients).
constexpr double kLogZero = -1e30;

// A bool tensor from host flags (compared, so it is made by public ops only).
Tensor mask_of(const std::vector<double>& flags, const Shape& shape) {
  return from_vector(flags, shape) > 0.5;
}

template <class I>
std::vector<int64_t> read_labels(const Tensor& t) {
  Tensor c = contiguous(t);
  const I* p = c.data<I>();
  return std::vector<int64_t>(p, p + c.numel());
}

}  // namespace

Tensor ctc_loss(const Tensor& logits_in, const Tensor& targets_in,
                const std::vector<int64_t>& input_lengths,
                const std::vector<int64_t>& target_lengths, int64_t blank, const Agg& agg) {
  FX_CHECK(logits_in.defined() && is_floating(logits_in.dtype()),
           "fx::ctc_loss: logits must be a floating tensor");
  FX_CHECK(targets_in.defined() && (targets_in.dtype() == i64 || targets_in.dtype() == i32),
           "fx::ctc_loss: targets must be i64 or i32 labels");
  // One sequence, (T, C) and (S,): a batch of one.
  const bool single = logits_in.ndim() == 2 && targets_in.ndim() == 1;
  Tensor logits = single ? unsqueeze(logits_in, 0) : logits_in;
  Tensor targets = single ? unsqueeze(targets_in, 0) : targets_in;
  FX_CHECK(logits.ndim() == 3 && targets.ndim() == 2 && targets.shape()[0] == logits.shape()[0],
           "fx::ctc_loss: expected logits (N, T, C) and targets (N, S), got logits ",
           logits_in.shape(), " and targets ", targets_in.shape());
  FX_CHECK(targets.device() == Device::cpu, "fx::ctc_loss: targets must be on the CPU");
  const int64_t n = logits.shape()[0], steps = logits.shape()[1], classes = logits.shape()[2];
  const int64_t s_max = targets.shape()[1], len = 2 * s_max + 1;
  FX_CHECK(classes >= 1 && steps >= 1, "fx::ctc_loss: logits ", logits.shape(),
           " need at least one class and one time step");
  FX_CHECK(blank >= -classes && blank < classes, "fx::ctc_loss: blank ", blank,
           " is out of range for ", classes, " classes");
  if (blank < 0) blank += classes;

  std::vector<int64_t> t_len = input_lengths, s_len = target_lengths;
  if (t_len.empty()) t_len.assign(size_t(n), steps);
  if (s_len.empty()) s_len.assign(size_t(n), s_max);
  FX_CHECK(int64_t(t_len.size()) == n && int64_t(s_len.size()) == n, "fx::ctc_loss: ", n,
           " sequences but ", t_len.size(), " input lengths and ", s_len.size(), " target lengths");
  std::vector<int64_t> labels =
      targets.dtype() == i64 ? read_labels<int64_t>(targets) : read_labels<int32_t>(targets);
  for (int64_t b = 0; b < n; ++b) {
    FX_CHECK(t_len[b] >= 1 && t_len[b] <= steps, "fx::ctc_loss: input length ", t_len[b],
             " of sequence ", b, " is outside [1, ", steps, "]");
    FX_CHECK(s_len[b] >= 0 && s_len[b] <= s_max, "fx::ctc_loss: target length ", s_len[b],
             " of sequence ", b, " is outside [0, ", s_max, "]");
    for (int64_t s = 0; s < s_len[b]; ++s) {
      int64_t l = labels[b * s_max + s];
      FX_CHECK(l >= 0 && l < classes && l != blank, "fx::ctc_loss: label ", l, " at position (", b,
               ", ", s, ") is not a class other than the blank ", blank, " of ", classes);
    }
  }

  // The extended labels, and what the recursion needs from them.
  std::vector<int64_t> ext(size_t(n * len), blank);
  std::vector<double> skip(size_t(n * len), 0.0), start(size_t(n * len), 0.0),
      finish(size_t(n * len), 0.0);
  for (int64_t b = 0; b < n; ++b) {
    int64_t* z = ext.data() + b * len;
    for (int64_t s = 0; s < s_len[b]; ++s) z[2 * s + 1] = labels[b * s_max + s];
    for (int64_t s = 2; s < len; ++s) skip[b * len + s] = z[s] != blank && z[s] != z[s - 2];
    start[b * len] = 1;                        // a path starts on the blank before l1 ...
    if (s_len[b] > 0) start[b * len + 1] = 1;  // ... or on l1 itself
    const int64_t last = 2 * s_len[b];
    finish[b * len + last] = 1;
    if (last >= 1) finish[b * len + last - 1] = 1;
  }
  // Emissions log y_t(z'_s) for every t: (N, T, L), gathered from the log-softmax once.
  std::vector<int64_t> index(static_cast<size_t>(n * steps * len));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t t = 0; t < steps; ++t)
      std::copy_n(ext.data() + b * len, len, index.data() + (b * steps + t) * len);
  Tensor lp = logsoftmax(logits, -1);
  const Device dev = lp.device();
  const DType dt = lp.dtype();
  auto on_device = [&](const Tensor& t) { return dev == Device::cpu ? t : to(t, dev); };
  Tensor emit = gather(lp, 2, on_device(from_vector(index, {n, steps, len})));

  const Shape states{n, len};
  Tensor skip_mask = on_device(mask_of(skip, states));
  Tensor alpha = where(on_device(mask_of(start, states)), select(emit, 1, 0), kLogZero);
  Tensor none1 = full({n, 1}, kLogZero, dt, dev), none2 = full({n, 2}, kLogZero, dt, dev);
  for (int64_t t = 1; t < steps; ++t) {
    Tensor next;
    if (len == 1) {  // no labels at all: the path stays on the one blank state
      next = alpha + select(emit, 1, t);
    } else {
      Tensor from1 = concat({none1, slice(alpha, 1, 0, len - 1)}, 1);
      Tensor from2 = where(skip_mask, concat({none2, slice(alpha, 1, 0, len - 2)}, 1), kLogZero);
      next = logsumexp(stack({alpha, from1, from2}, 0), 0) + select(emit, 1, t);
    }
    // A sequence whose input has ended keeps its last alpha.
    std::vector<double> active(static_cast<size_t>(n));
    bool all_active = true;
    for (int64_t b = 0; b < n; ++b) all_active &= (active[b] = t < t_len[b]) != 0;
    alpha = all_active ? next : where(on_device(mask_of(active, {n, 1})), next, alpha);
  }
  // The loss: -log(alpha_T(L_n - 1) + alpha_T(L_n - 2)), over each sample's own last states.
  Tensor per = neg(logsumexp(where(on_device(mask_of(finish, states)), alpha, kLogZero), 1));
  return agg(single ? squeeze(per, 0) : per);
}

}  // namespace fx
