// oneDNN 2.6's vanilla_rnn, lstm and lbr_gru primitives (operation descriptors, then primitive
// descriptors) for one layer of fx::nn::RNN, LSTM or GRU; the interface is in rnn_onednn.hpp.
//
// Data tensors are handed over as they are: oneDNN reads and writes batch-first sequences (its
// ntc tag, dims (T, N, C)) and (layers, directions, N, H) states (ldnc) directly. The weights are
// described as oneDNN's ldgoi, which is PyTorch's (gates * hidden, in) row-major layout, and the
// primitives ask for `any`: oneDNN picks its own layout (ldigo or a blocked one) and a reorder
// converts them on every call, since a tensor carries no version to tell an optimiser's in-place
// update from an unchanged buffer. The reorder is one pass over the weights, small beside the
// T steps of products that read them.
//
// Creating the primitives costs milliseconds, so each thread keeps an LRU list of them keyed by
// the cell, the sizes, the pass (inference, or training: forward and backward together) and the
// OpenMP thread count (oneDNN plans for it at creation). A training entry is made only if both
// of its primitives can be: the backward must not fail after the forward has committed to
// oneDNN. Weight buffers in oneDNN's layouts live in the entry, reused call after call.
//
// The backward accumulates into the weight gradients (2.6 has no flag to overwrite them), so
// they are zeroed first; and it overwrites the forward's workspace, so it runs on a copy: a
// recording swept twice (fx::ad::Recording::backward) must find the workspace intact.
#include "rnn_onednn.hpp"

#include <omp.h>

#include <cstring>
#include <dnnl.hpp>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::backend::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;
constexpr size_t kRnnCacheEntries = 16;  // a model's recurrent layers, one or two passes each

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// The user-side descriptors: how our tensors lie in memory.
struct Descs {
  memory::desc x, y, state, wx, wh, b, wx_any, wh_any;
  explicit Descs(const RnnLayer& r)
      : x({r.T, r.N, r.C}, kF32, tag::ntc),
        y({r.T, r.N, r.D * r.H}, kF32, tag::ntc),
        state({1, r.D, r.N, r.H}, kF32, tag::ldnc),
        wx({1, r.D, r.C, r.gates(), r.H}, kF32, tag::ldgoi),
        wh({1, r.D, r.H, r.gates(), r.H}, kF32, tag::ldgoi),
        b({1, r.D, r.bias_gates(), r.H}, kF32, tag::ldgo),
        wx_any({1, r.D, r.C, r.gates(), r.H}, kF32, tag::any),
        wh_any({1, r.D, r.H, r.gates(), r.H}, kF32, tag::any) {}
};

dnnl::rnn_direction direction(const RnnLayer& r) {
  return r.D == 2 ? dnnl::rnn_direction::bidirectional_concat
                  : dnnl::rnn_direction::unidirectional_left2right;
}

dnnl::algorithm activation(const RnnLayer& r) {
  return r.cell == RnnCell::rnn_relu ? dnnl::algorithm::eltwise_relu
                                     : dnnl::algorithm::eltwise_tanh;
}

// A weight in oneDNN's chosen layout: the buffer (kept in the cache entry) and the reorder
// from (forward, backward) or to (gradient) our ldgoi tensor; none when the layouts agree.
struct Weight {
  memory::desc user;
  std::optional<memory> inner;
  std::optional<dnnl::reorder> reorder;

  Weight() = default;
  Weight(const memory::desc& user_desc, const memory::desc& inner_desc, bool to_user)
      : user(user_desc) {
    if (inner_desc == user_desc) return;
    inner.emplace(inner_desc, engine());
    const memory u(user_desc, engine(), DNNL_MEMORY_NONE);
    reorder.emplace(to_user ? dnnl::reorder(*inner, u) : dnnl::reorder(u, *inner));
  }
};

struct Entry {
  std::vector<int64_t> key;
  bool ok = false;  // false: oneDNN declined; the composed path runs it
  dnnl::primitive fwd, bwd;
  Weight fwd_wx, fwd_wh, bwd_wx, bwd_wh, diff_wx, diff_wh;
  memory::desc workspace;
};

// Makes the forward primitive for `prop` and hands its typed primitive descriptor to `use`
// (the backward's needs it as a hint). Throws dnnl::error when oneDNN declines.
template <class Use>
void with_forward(const RnnLayer& r, const Descs& d, dnnl::prop_kind prop, Use&& use) {
  switch (r.cell) {
    case RnnCell::rnn_tanh:
    case RnnCell::rnn_relu: {
      using P = dnnl::vanilla_rnn_forward;
      const P::primitive_desc pd(P::desc(prop, activation(r), direction(r), d.x, d.state, d.wx_any,
                                         d.wh_any, d.b, d.y, d.state),
                                 engine());
      use(pd, P(pd));
      return;
    }
    case RnnCell::lstm: {
      using P = dnnl::lstm_forward;
      const P::primitive_desc pd(P::desc(prop, direction(r), d.x, d.state, d.state, d.wx_any,
                                         d.wh_any, d.b, d.y, d.state, d.state),
                                 engine());
      use(pd, P(pd));
      return;
    }
    case RnnCell::gru: {
      using P = dnnl::lbr_gru_forward;
      const P::primitive_desc pd(
          P::desc(prop, direction(r), d.x, d.state, d.wx_any, d.wh_any, d.b, d.y, d.state),
          engine());
      use(pd, P(pd));
      return;
    }
  }
}

// The backward primitive given the training forward's descriptor `hint`.
dnnl::primitive_desc backward_pd(const RnnLayer& r, const Descs& d,
                                 const dnnl::primitive_desc_base& hint) {
  const auto bwd = dnnl::prop_kind::backward;
  switch (r.cell) {
    case RnnCell::rnn_tanh:
    case RnnCell::rnn_relu: {
      using P = dnnl::vanilla_rnn_backward;
      return P::primitive_desc(
          P::desc(bwd, activation(r), direction(r), d.x, d.state, d.wx_any, d.wh_any, d.b, d.y,
                  d.state, d.x, d.state, d.wx_any, d.wh_any, d.b, d.y, d.state),
          engine(), static_cast<const dnnl::vanilla_rnn_forward::primitive_desc&>(hint));
    }
    case RnnCell::lstm: {
      using P = dnnl::lstm_backward;
      return P::primitive_desc(
          P::desc(bwd, direction(r), d.x, d.state, d.state, d.wx_any, d.wh_any, d.b, d.y, d.state,
                  d.state, d.x, d.state, d.state, d.wx_any, d.wh_any, d.b, d.y, d.state, d.state),
          engine(), static_cast<const dnnl::lstm_forward::primitive_desc&>(hint));
    }
    case RnnCell::gru: {
      using P = dnnl::lbr_gru_backward;
      return P::primitive_desc(
          P::desc(bwd, direction(r), d.x, d.state, d.wx_any, d.wh_any, d.b, d.y, d.state, d.x,
                  d.state, d.wx_any, d.wh_any, d.b, d.y, d.state),
          engine(), static_cast<const dnnl::lbr_gru_forward::primitive_desc&>(hint));
    }
  }
  return {};  // not reached: every cell is a case
}

memory::desc md(const dnnl::primitive_desc_base& pd, int arg) {
  return pd.query_md(dnnl::query::exec_arg_md, arg);
}

Entry make_entry(std::vector<int64_t> key, const RnnLayer& r, bool training) {
  Entry e;
  e.key = std::move(key);
  const Descs d(r);
  try {
    const auto prop =
        training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    with_forward(r, d, prop, [&](const auto& pd, dnnl::primitive prim) {
      e.fwd = std::move(prim);
      e.fwd_wx = Weight(d.wx, pd.weights_layer_desc(), false);
      e.fwd_wh = Weight(d.wh, pd.weights_iter_desc(), false);
      if (!training) return;
      e.workspace = pd.workspace_desc();
      // The backward's typed constructor wants the forward's typed descriptor.
      const dnnl::primitive_desc bpd = backward_pd(r, d, pd);
      e.bwd = dnnl::primitive(bpd);
      e.bwd_wx = Weight(d.wx, md(bpd, DNNL_ARG_WEIGHTS_LAYER), false);
      e.bwd_wh = Weight(d.wh, md(bpd, DNNL_ARG_WEIGHTS_ITER), false);
      e.diff_wx = Weight(d.wx, md(bpd, DNNL_ARG_DIFF_WEIGHTS_LAYER), true);
      e.diff_wh = Weight(d.wh, md(bpd, DNNL_ARG_DIFF_WEIGHTS_ITER), true);
    });
    e.ok = true;
  } catch (const dnnl::error&) {
    e = Entry{};
    e.key = std::move(key);
  }
  return e;
}

Entry& entry_for(const RnnLayer& r, bool training) {
  std::vector<int64_t> key{int64_t(r.cell),      r.N, r.T, r.C, r.H, r.D, training,
                           omp_get_max_threads()};
  thread_local std::list<Entry> cache;  // most recently used first
  for (auto it = cache.begin(); it != cache.end(); ++it)
    if (it->key == key) {
      cache.splice(cache.begin(), cache, it);
      return cache.front();
    }
  if (cache.size() == kRnnCacheEntries) cache.pop_back();
  cache.push_front(make_entry(std::move(key), r, training));
  return cache.front();
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

memory wrap(const memory::desc& d, const Tensor& t) { return memory(d, engine(), t.raw_data()); }

// The memory a primitive reads a weight from: our tensor, or its reordered copy.
memory weight_in(Weight& w, const Tensor& t) {
  memory u = wrap(w.user, t);
  if (!w.inner) return u;
  w.reorder->execute(stream(), u, *w.inner);
  return *w.inner;
}

// The memory a primitive accumulates a weight's gradient into, zeroed.
memory weight_grad(Weight& w, const Tensor& t) {
  memory m = w.inner ? *w.inner : wrap(w.user, t);
  std::memset(m.get_data_handle(), 0, m.get_desc().get_size());
  return m;
}

bool dense_f32(const Tensor& t) {
  return t.defined() && t.dtype() == f32 && t.device() == Device::cpu && t.is_contiguous();
}

}  // namespace

bool rnn_supported(const RnnLayer& r, bool training) {
  if (omp_in_parallel() || r.N <= 0 || r.T <= 0 || r.C <= 0 || r.H <= 0) return false;
  return entry_for(r, training).ok;
}

bool rnn_forward(const RnnLayer& r, const Tensor& x, const Tensor& h0, const Tensor& c0,
                 const Tensor& wx, const Tensor& wh, const Tensor& b, bool training,
                 RnnOutputs& out, Tensor& workspace) {
  if (!rnn_supported(r, training)) return false;
  for (const Tensor* t : {&x, &h0, &wx, &wh, &b})
    if (!dense_f32(*t)) return false;
  if (r.has_c() && !dense_f32(c0)) return false;
  Entry& e = entry_for(r, training);
  const Descs d(r);
  out.y = empty({r.N, r.T, r.D * r.H}, f32);
  out.h = empty({r.D, r.N, r.H}, f32);
  if (r.has_c()) out.c = empty({r.D, r.N, r.H}, f32);
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC_LAYER, wrap(d.x, x)},
      {DNNL_ARG_SRC_ITER, wrap(d.state, h0)},
      {DNNL_ARG_WEIGHTS_LAYER, weight_in(e.fwd_wx, wx)},
      {DNNL_ARG_WEIGHTS_ITER, weight_in(e.fwd_wh, wh)},
      {DNNL_ARG_BIAS, wrap(d.b, b)},
      {DNNL_ARG_DST_LAYER, wrap(d.y, out.y)},
      {DNNL_ARG_DST_ITER, wrap(d.state, out.h)},
  };
  if (r.has_c()) {
    args.emplace(DNNL_ARG_SRC_ITER_C, wrap(d.state, c0));
    args.emplace(DNNL_ARG_DST_ITER_C, wrap(d.state, out.c));
  }
  if (training) {
    // An i32 tensor big enough for the opaque bytes: a residual, and not floating, so never
    // tracked.
    const int64_t bytes = int64_t(e.workspace.get_size());
    workspace = empty({(bytes + 3) / 4}, i32);
    args.emplace(DNNL_ARG_WORKSPACE, memory(e.workspace, engine(), workspace.raw_data()));
  }
  e.fwd.execute(stream(), args);
  stream().wait();
  return true;
}

RnnGrads rnn_backward(const RnnLayer& r, const Tensor& x, const Tensor& h0, const Tensor& c0,
                      const Tensor& wx, const Tensor& wh, const Tensor& b, const RnnOutputs& out,
                      const Tensor& workspace, const RnnOutputs& dout) {
  // Dense f32 cotangents of the outputs' shapes; an undefined one is a zero.
  auto dense = [](const Tensor& d, const Tensor& like) {
    if (!d.defined()) return zeros(like.shape(), f32);
    FX_CHECK(d.shape() == like.shape() && d.dtype() == f32,
             "fx::nn recurrent layer (oneDNN): backward given cotangent ", d.shape(), " ",
             dtype_name(d.dtype()), " for output ", like.shape());
    return d.is_contiguous() ? d : contiguous(d);
  };
  const Tensor dy = dense(dout.y, out.y), dh = dense(dout.h, out.h);
  const Tensor dc = r.has_c() ? dense(dout.c, out.c) : Tensor();
  FX_CHECK(workspace.defined() && workspace.is_contiguous(),
           "fx::nn recurrent layer (oneDNN): backward without the training forward's workspace");
  Entry& e = entry_for(r, true);
  FX_CHECK(e.ok, "fx::nn recurrent layer (oneDNN): the backward primitive is missing");
  const Descs d(r);
  RnnGrads g;
  g.x = empty(x.shape(), f32);
  g.h0 = empty(h0.shape(), f32);
  g.wx = empty(wx.shape(), f32);
  g.wh = empty(wh.shape(), f32);
  g.b = zeros(b.shape(), f32);  // accumulated into
  Tensor ws = empty(workspace.shape(), i32);
  std::memcpy(ws.raw_data(), workspace.raw_data(), e.workspace.get_size());
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC_LAYER, wrap(d.x, x)},
      {DNNL_ARG_SRC_ITER, wrap(d.state, h0)},
      {DNNL_ARG_WEIGHTS_LAYER, weight_in(e.bwd_wx, wx)},
      {DNNL_ARG_WEIGHTS_ITER, weight_in(e.bwd_wh, wh)},
      {DNNL_ARG_BIAS, wrap(d.b, b)},
      {DNNL_ARG_DST_LAYER, wrap(d.y, out.y)},
      {DNNL_ARG_DST_ITER, wrap(d.state, out.h)},
      {DNNL_ARG_WORKSPACE, memory(e.workspace, engine(), ws.raw_data())},
      {DNNL_ARG_DIFF_SRC_LAYER, wrap(d.x, g.x)},
      {DNNL_ARG_DIFF_SRC_ITER, wrap(d.state, g.h0)},
      {DNNL_ARG_DIFF_WEIGHTS_LAYER, weight_grad(e.diff_wx, g.wx)},
      {DNNL_ARG_DIFF_WEIGHTS_ITER, weight_grad(e.diff_wh, g.wh)},
      {DNNL_ARG_DIFF_BIAS, wrap(d.b, g.b)},
      {DNNL_ARG_DIFF_DST_LAYER, wrap(d.y, dy)},
      {DNNL_ARG_DIFF_DST_ITER, wrap(d.state, dh)},
  };
  if (r.has_c()) {
    g.c0 = empty(c0.shape(), f32);
    args.emplace(DNNL_ARG_SRC_ITER_C, wrap(d.state, c0));
    args.emplace(DNNL_ARG_DST_ITER_C, wrap(d.state, out.c));
    args.emplace(DNNL_ARG_DIFF_SRC_ITER_C, wrap(d.state, g.c0));
    args.emplace(DNNL_ARG_DIFF_DST_ITER_C, wrap(d.state, dc));
  }
  e.bwd.execute(stream(), args);
  for (auto [w, t] : {std::pair{&e.diff_wx, &g.wx}, std::pair{&e.diff_wh, &g.wh}})
    if (w->inner) {
      memory u = wrap(w->user, *t);
      w->reorder->execute(stream(), *w->inner, u);
    }
  stream().wait();
  return g;
}

}  // namespace fx::backend::cpu
