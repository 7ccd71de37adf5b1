// Batching rules shared by several primitives, and the example-by-example fallback.
#include "ops/batching.hpp"

#include <algorithm>
#include <vector>

#include "fluxion/ops/view.hpp"

namespace fx::detail {

Shape with_batch(int64_t b, const Shape& s) {
  Shape r{b};
  for (int64_t d : s) r.push_back(d);
  return r;
}

Tensor batched_input(const BatchArgs& a, size_t i) {
  const Tensor& x = a.in[i];
  if (a.is_batched(i)) return x;
  return expand(unsqueeze(x, 0), with_batch(a.size, x.shape()));
}

Tensor batch_elementwise(const Primitive& p, const BatchArgs& a) {
  const size_t n = a.in.size();
  int rank = 0;
  for (size_t i = 0; i < n; ++i)
    if (a.in[i].defined()) rank = std::max(rank, a.in[i].ndim() - int(a.is_batched(i)));
  std::vector<Tensor> in(a.in.begin(), a.in.end());
  Shape common;
  bool first = true;
  for (size_t i = 0; i < n; ++i) {
    if (!in[i].defined()) continue;
    if (a.is_batched(i) && in[i].ndim() - 1 < rank) {
      Shape s{a.size};
      for (int k = in[i].ndim() - 1; k < rank; ++k) s.push_back(1);
      for (int d = 1; d < in[i].ndim(); ++d) s.push_back(in[i].shape()[d]);
      in[i] = reshape(in[i], s);
    }
    common = first ? in[i].shape() : broadcast_shapes(common, in[i].shape(), p.name);
    first = false;
  }
  for (Tensor& x : in)
    if (x.defined()) x = expand(x, common);
  return bind(p, std::span<const Tensor>(in), a.attrs);
}

Tensor batch_reduce(const Primitive& p, const BatchArgs& a) {
  ReduceAttrs q = a.attrs.get<ReduceAttrs>();
  q.axes <<= 1;
  q.input_shape = with_batch(a.size, q.input_shape);
  return bind(p, {a.in[0]}, q);
}

std::vector<Tensor> batched_inputs(const BatchArgs& a) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < a.in.size(); ++i) in.push_back(batched_input(a, i));
  return in;
}

Tensor batch_leading(const Primitive& p, const BatchArgs& a) {
  const std::vector<Tensor> in = batched_inputs(a);
  return bind(p, std::span<const Tensor>(in), a.attrs);
}

void batch_leading_n(const Primitive& p, const BatchArgs& a, Tensor* out) {
  const std::vector<Tensor> in = batched_inputs(a);
  bind_n(p, std::span<const Tensor>(in), a.attrs, out);
}

Tensor batch_by_loop(const Primitive& p, const BatchArgs& a) {
  std::vector<Tensor> outs, in(a.in.size());
  outs.reserve(size_t(a.size));
  for (int64_t b = 0; b < a.size; ++b) {
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = a.is_batched(i) ? select(a.in[i], 0, b) : a.in[i];
    outs.push_back(bind(p, std::span<const Tensor>(in), a.attrs));
  }
  return stack(outs, 0);
}

void batch_by_loop_n(const Primitive& p, const BatchArgs& a, Tensor* out) {
  const size_t nout = size_t(p.num_outputs);
  std::vector<std::vector<Tensor>> outs(nout);
  std::vector<Tensor> in(a.in.size()), one(nout);
  for (int64_t b = 0; b < a.size; ++b) {
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = a.is_batched(i) ? select(a.in[i], 0, b) : a.in[i];
    bind_n(p, std::span<const Tensor>(in), a.attrs, one.data());
    for (size_t k = 0; k < nout; ++k) outs[k].push_back(one[k]);
  }
  for (size_t k = 0; k < nout; ++k) out[k] = stack(outs[k], 0);
}

}  // namespace fx::detail
