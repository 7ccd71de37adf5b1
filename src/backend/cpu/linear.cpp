// Tuned CPU linear (ops/linalg.hpp) and its fused pullback (ops/fused.hpp).
//
// Forward: the matmul kernel computes x @ w^T and each thread adds the bias and applies the
// activation to the block of the product it has just written (a GEMM epilogue), while the block
// is in its core's cache. The f32 layers that oneDNN's matmul primitive takes (onednn_matmul.cpp)
// get the same from its post-ops, through the epilogue's description. Composed, the bias and the
// activation were two more parallel regions, each reading the product that the other core had
// half written.
//
// Backward: one parallel region. Each thread first computes its rows of dz = dy act'(y), their
// column sums (in double) and its rows of dx = dz w: the rows of dy it wrote itself as the next
// layer's dx, and of y that its share of the forward wrote, so they come from its own core's
// cache. After one barrier it takes a block of columns: db there (the threads' partial sums,
// added in thread order) and its rows of dW = dz^T x, the rows of W that its share of the
// optimiser touches. With dz split by columns instead, half of each thread's dy
// and y came from the other core, and writing dz over dy pulled lines the other core held: on
// two threads the MLP's first layer spent 16-19 us per thread on act' and db, against 13 us for
// all of it on one thread. Composed, the backward was four or five regions (act', the bias sum,
// dW, dx) with a fresh tensor between each.
#include <omp.h>

#include <algorithm>

#include "backend/backends.hpp"
#include "backend/cpu/gemm.hpp"
#include "backend/cpu/thresholds.hpp"
#include "backend/cpu/vector_math.hpp"
#include "backend/math.hpp"
#include "fluxion/ops/linalg.hpp"
#include "ops/fused.hpp"

namespace fx::backend::cpu {
namespace {

template <class T>
struct EpilogueArgs {
  Epilogue act;
  const T* bias;  // null without one
  int64_t bias_stride;
  T* out;  // dense (m, n)
  int64_t n;
};

// Bias and activation on rows [r0, r1) and columns [c0, c1) of the product: the same operations
// in the same order as `z + b` and the activation's own kernel. Identity and relu match the
// composed ops bit for bit; tanh and sigmoid agree to the few ULP by which vector_map's
// polynomial and <cmath> differ (rows here split its vectors and tails differently).
template <class T>
void bias_and_activation(const void* ctx, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const auto& e = *static_cast<const EpilogueArgs<T>*>(ctx);
  const int64_t len = c1 - c0;
  for (int64_t r = r0; r < r1; ++r) {
    T* row = e.out + r * e.n + c0;
    if (e.bias) {
      const T* b = e.bias + c0 * e.bias_stride;
      for (int64_t j = 0; j < len; ++j) row[j] = T(row[j] + b[j * e.bias_stride]);
    }
    switch (e.act) {
      case Epilogue::identity: break;
      case Epilogue::relu:
        for (int64_t j = 0; j < len; ++j) row[j] = math::Relu{}(row[j]);
        break;
      case Epilogue::tanh: vector_map(VecFn::tanh, row, row, len); break;
      case Epilogue::sigmoid: vector_map(VecFn::sigmoid, row, row, len); break;
    }
  }
}

bool linear(const KernelCall& c) {
  const Tensor &x = c.in[0], &w = c.in[1];
  if (x.dtype() != f32 && x.dtype() != f64) return false;
  const int64_t n = w.shape()[0], k = w.shape()[1];
  const int64_t wt_strides[2] = {w.stride(1), w.stride(0)};
  const Tensor wt = make_view(w, Shape{k, n}, wt_strides, w.offset());  // w^T, no copy
  const auto act = c.attrs.get<LinearAttrs>().epilogue;
  const bool bias = c.in.size() > 2;
  auto run = [&]<class T>() {
    const EpilogueArgs<T> args{act, bias ? c.in[2].data<T>() : nullptr,
                               bias ? c.in[2].stride(0) : 0, c.out.data<T>(), n};
    GemmEpilogue epi;
    if (bias || act != Epilogue::identity)
      epi = {&bias_and_activation<T>, &args, true, bias ? &c.in[2] : nullptr, act};
    return matmul_into(x, wt, c.out, epi);
  };
  return x.dtype() == f32 ? run.template operator()<float>() : run.template operator()<double>();
}

struct Cotangent {  // identity's derivative: dz = dy (a strided dy copied dense)
  template <class T>
  T operator()(T dy, T) const {
    return dy;
  }
};

// Rows [i0, i1) of dz = dy act'(y) (dz dense with leading dimension n), with the functor of the
// activation's own fused pullback, each row added into sums (n doubles) when given: db's terms
// while they are in registers. Rows whose elements are adjacent vectorise.
template <class Derivative, class T>
void derivative_rows(const Tensor& dy, const Tensor& y, T* dz, int64_t n, int64_t i0, int64_t i1,
                     double* sums) {
  const Derivative d;
  const T *dp = dy.data<T>(), *yp = y.data<T>();
  const int64_t ds0 = dy.stride(0), ds1 = dy.stride(1), ys0 = y.stride(0), ys1 = y.stride(1);
  for (int64_t i = i0; i < i1; ++i) {
    const T *dr = dp + i * ds0, *yr = yp + i * ys0;
    T* zr = dz + i * n;
    if (ds1 == 1 && ys1 == 1) {
      if (sums)
        for (int64_t j = 0; j < n; ++j) sums[j] += double(zr[j] = d(dr[j], yr[j]));
      else
        for (int64_t j = 0; j < n; ++j) zr[j] = d(dr[j], yr[j]);
    } else {
      for (int64_t j = 0; j < n; ++j) zr[j] = d(dr[j * ds1], yr[j * ys1]);
      if (sums)
        for (int64_t j = 0; j < n; ++j) sums[j] += double(zr[j]);
    }
  }
}

template <class T>
void derivative_rows(Epilogue act, const Tensor& dy, const Tensor& y, T* dz, int64_t n, int64_t i0,
                     int64_t i1, double* sums) {
  switch (act) {
    case Epilogue::identity: return derivative_rows<Cotangent, T>(dy, y, dz, n, i0, i1, sums);
    case Epilogue::relu: return derivative_rows<math::ReluBackward, T>(dy, y, dz, n, i0, i1, sums);
    case Epilogue::tanh: return derivative_rows<math::TanhBackward, T>(dy, y, dz, n, i0, i1, sums);
    case Epilogue::sigmoid:
      return derivative_rows<math::SigmoidBackward, T>(dy, y, dz, n, i0, i1, sums);
  }
}

// Adds rows [i0, i1) of dz (n columns, leading dimension ldz) into sums, for a dz that is dy
// itself (no derivative pass to fold the sums into).
template <class T>
void add_rows(const T* dz, int64_t ldz, int64_t n, int64_t i0, int64_t i1, double* sums) {
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = 0; j < n; ++j) sums[j] += double(dz[i * ldz + j]);
}

bool linear_backward(const KernelCall& c) {
  const Tensor &dy = c.in[0], &x = c.in[1], &w = c.in[2], &y = c.in[3];
  if (x.dtype() != f32 && x.dtype() != f64) return false;
  const int64_t m = x.shape()[0], k = x.shape()[1], n = w.shape()[0];
  BlasMatrix mx, mw;
  if (m == 0 || n == 0 || k == 0 || !as_blas(m, k, x.stride(0), x.stride(1), mx) ||
      !as_blas(n, k, w.stride(0), w.stride(1), mw))
    return false;  // the reference handles empty products and exotic strides
  const LinearBackwardAttrs& la = c.attrs.get<LinearBackwardAttrs>();
  const auto act = la.epilogue;
  const int64_t wants = la.wants;
  // dz is dy itself when there is no activation and dy's rows are dense, or written over dy when
  // the caller hands dy over (params.i[2]); a scratch otherwise.
  const bool dz_is_dy = act == Epilogue::identity && dy.stride(1) == 1 && dy.stride(0) >= n;
  const bool over_dy = !dz_is_dy && la.dz_over_dy && dy.is_contiguous();
  const Tensor scratch =
      dz_is_dy || over_dy ? Tensor() : Tensor::empty({m, n}, x.dtype(), Device::cpu);
  auto run = [&]<class T>() {
    T* dz = dz_is_dy || over_dy ? const_cast<T*>(dy.data<T>()) : scratch.data<T>();
    const int64_t ldz = dz_is_dy ? dy.stride(0) : n;
    T* o = c.out.data<T>();
    T* dx = wants & 1 ? o : nullptr;
    T* dw = wants & 2 ? o + (dx ? m * k : 0) : nullptr;
    T* db = wants & 4 ? o + (dx ? m * k : 0) + (dw ? n * k : 0) : nullptr;
    // Each thread takes at least kLinearSplitMin columns of dz and rows of dx: with fewer, its BLAS
    // calls cost more than they save. The MLP's last layer (n = 10) took 12.9 us per pullback on
    // two threads against 11.3 us on one, whose products take the matmul kernel's small paths.
    const int threads =
        int(std::min<int64_t>(gemm_threads(std::min(m, n), (dx && dw ? 2 : 1) * m * n * k),
                              std::max<int64_t>(1, std::min(m, n) / kLinearSplitMin)));
    // db's partial sums, one row of n per thread.
    const Tensor partial = db ? Tensor::empty({threads, n}, f64, Device::cpu) : Tensor();
    if (threads <= 1) {
      // No split: the products go through the matmul kernel, whose tiny and narrow paths beat
      // a BLAS call on small layers. When each product is worth a thread (a classifier's last
      // layer: 128 x 128 -> 10), dW and dx run side by side, one per thread: on two threads
      // the MLP's took 6.2 us (dW, serial) plus 5.3 us (dx, split by rows) that way in turn.
      double* sums = db ? partial.data<double>() : nullptr;
      if (sums) std::fill_n(sums, n, 0.0);
      if (!dz_is_dy) derivative_rows<T>(act, dy, y, dz, n, 0, m, sums);
      else if (sums) add_rows(dz, ldz, n, 0, m, sums);
      for (int64_t j = 0; sums && j < n; ++j) db[j] = static_cast<T>(sums[j]);
      const Tensor& base = dz_is_dy || over_dy ? dy : scratch;
      const int64_t zs[2] = {ldz, 1}, zts[2] = {1, ldz}, ws[2] = {k, 1};
      const Tensor z = make_view(base, Shape{m, n}, zs, base.offset());
      auto weight_side = [&] {
        matmul_into(make_view(base, Shape{n, m}, zts, base.offset()), x,
                    make_view(c.out, Shape{n, k}, ws, c.out.offset() + (dw - o)), {});
      };
      auto input_side = [&] {
        matmul_into(z, w, make_view(c.out, Shape{m, k}, ws, c.out.offset()), {});
      };
      if (dw && dx && gemm_threads(std::max(m, k), m * n * k) >= 2) {
#pragma omp parallel num_threads(2)
        {
          if (omp_get_thread_num() == 0) weight_side();
          else input_side();
        }
        return;
      }
      if (dw) weight_side();
      if (dx) input_side();
      return;
    }
#pragma omp parallel num_threads(threads)
    {
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t i0 = m * t / nt, i1 = m * (t + 1) / nt;  // rows of dz and dx
      const int64_t j0 = n * t / nt, j1 = n * (t + 1) / nt;  // columns of dz: rows of dW
      double* sums = db ? partial.data<double>() + t * n : nullptr;
      if (sums) std::fill_n(sums, n, 0.0);
      if (!dz_is_dy) derivative_rows<T>(act, dy, y, dz, n, i0, i1, sums);
      else if (sums) add_rows(dz, ldz, n, i0, i1, sums);
      if (dx && i1 > i0)  // rows i0..i1 of dz w: this thread's own rows of dz
        gemm<T>(false, mw.trans, i1 - i0, k, n, dz + i0 * ldz, ldz, w.data<T>(), mw.ld, dx + i0 * k,
                k);
      if (db || dw) {
        if (db || !dz_is_dy) {
#pragma omp barrier
        }
        for (int64_t j = j0; db && j < j1; ++j) {  // the threads' partial sums, in thread order
          double s = 0;
          for (int64_t u = 0; u < nt; ++u) s += partial.data<double>()[u * n + j];
          db[j] = static_cast<T>(s);
        }
        if (dw && j1 > j0)  // rows j0..j1 of dz^T x: columns j0.. of dz as a transposed operand
          gemm<T>(true, mx.trans, j1 - j0, k, m, dz + j0, ldz, x.data<T>(), mx.ld, dw + j0 * k, k);
      }
    }
  };
  if (x.dtype() == f32) run.template operator()<float>();
  else run.template operator()<double>();
  return true;
}

}  // namespace

void register_linear() {
  register_kernel(linear_p, Device::cpu, kCpuRank, linear);
  register_kernel(linear_backward_p, Device::cpu, kCpuRank, linear_backward);
}

}  // namespace fx::backend::cpu
