// Reference matmul and linear: the textbook triple loops over strided operands, accumulated in
// double.
#include <algorithm>
#include <memory>
#include <vector>

#include "backend/backends.hpp"
#include "backend/math.hpp"
#include "fluxion/ops/linalg.hpp"
#include "ops/fused.hpp"

namespace fx::backend {
namespace {

bool matmul(const KernelCall& c) {
  const Tensor &a = c.in[0], &b = c.in[1];
  const Tensor& out = c.out;
  int nd = a.ndim();
  int64_t m = a.shape()[nd - 2], k = a.shape()[nd - 1], n = b.shape()[nd - 1];
  Shape batch;
  for (int d = 0; d < nd - 2; ++d) batch.push_back(a.shape()[d]);
  visit_dtype_all(a.dtype(), [&]<class T>() {
    // Accumulate in double precision: double, or std::complex<double>.
    using Acc = std::conditional_t<is_complex_v<T>, std::complex<double>, double>;
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    T* op = out.data<T>();
    for (int64_t bi = 0, nb = batch.numel(); bi < nb; ++bi) {
      int64_t ao = 0, bo = 0, rem = bi;
      for (int d = batch.size() - 1; d >= 0; --d) {
        ao += (rem % batch[d]) * a.stride(d);
        bo += (rem % batch[d]) * b.stride(d);
        rem /= batch[d];
      }
      T* o = op + bi * m * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          Acc acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += Acc(ap[ao + i * a.stride(nd - 2) + p * a.stride(nd - 1)]) *
                   Acc(bp[bo + p * b.stride(nd - 2) + j * b.stride(nd - 1)]);
          o[i * n + j] = static_cast<T>(acc);
        }
    }
  });
  return true;
}

// (dy, a, b) -> [dA | dB], dA = dy b^T, dB = a^T dy (ops/fused.hpp), by the same triple loops.
// With params.i[0] set, dA goes into dy's own buffer (contiguous, dA's shape) and out is dB.
bool matmul_backward(const KernelCall& c) {
  const Tensor &dy = c.in[0], &a = c.in[1], &b = c.in[2];
  const int nd = a.ndim();
  const int64_t m = a.shape()[nd - 2], k = a.shape()[nd - 1], n = b.shape()[nd - 1];
  Shape batch;
  for (int d = 0; d < nd - 2; ++d) batch.push_back(a.shape()[d]);
  const int64_t nb = batch.numel();
  visit_dtype_all(a.dtype(), [&]<class T>() {
    using Acc = std::conditional_t<is_complex_v<T>, std::complex<double>, double>;
    const T *gp = dy.data<T>(), *ap = a.data<T>(), *bp = b.data<T>();
    const bool in_place = c.attrs.get<MatmulBackwardAttrs>().dA_in_dy;
    // One batch of dA, copied into dy once dB has read it (a plain array: T may be bool).
    std::unique_ptr<T[]> scratch(in_place ? new T[size_t(m * k)] : nullptr);
    T* da = c.out.data<T>();
    T* db = in_place ? da : da + nb * m * k;
    const int64_t gr = dy.stride(nd - 2), gc = dy.stride(nd - 1), ar = a.stride(nd - 2),
                  ac = a.stride(nd - 1), br = b.stride(nd - 2), bc = b.stride(nd - 1);
    for (int64_t bi = 0; bi < nb; ++bi) {
      int64_t go = 0, ao = 0, bo = 0, rem = bi;
      for (int d = batch.size() - 1; d >= 0; --d) {
        const int64_t i = rem % batch[d];
        go += i * dy.stride(d);
        ao += i * a.stride(d);
        bo += i * b.stride(d);
        rem /= batch[d];
      }
      for (int64_t i = 0; i < m; ++i)  // dA(i, p) = sum_j dy(i, j) b(p, j)
        for (int64_t p = 0; p < k; ++p) {
          Acc acc = 0;
          for (int64_t j = 0; j < n; ++j)
            acc += Acc(gp[go + i * gr + j * gc]) * Acc(bp[bo + p * br + j * bc]);
          (in_place ? scratch.get() : da + bi * m * k)[i * k + p] = static_cast<T>(acc);
        }
      for (int64_t p = 0; p < k; ++p)  // dB(p, j) = sum_i a(i, p) dy(i, j)
        for (int64_t j = 0; j < n; ++j) {
          Acc acc = 0;
          for (int64_t i = 0; i < m; ++i)
            acc += Acc(ap[ao + i * ar + p * ac]) * Acc(gp[go + i * gr + j * gc]);
          db[(bi * k + p) * n + j] = static_cast<T>(acc);
        }
      if (in_place) std::copy_n(scratch.get(), m * k, const_cast<T*>(gp) + go);
    }
  });
  return true;
}

template <class T>
T activate(Epilogue act, T z) {
  switch (act) {
    case Epilogue::identity: return z;
    case Epilogue::relu: return math::Relu{}(z);
    case Epilogue::tanh: return math::Tanh{}(z);
    case Epilogue::sigmoid: return math::Sigmoid{}(z);
  }
  return z;
}

// dy act'(z) from the output y = act(z), as the activations' fused pullbacks compute it.
template <class T>
T times_derivative(Epilogue act, T dy, T y) {
  switch (act) {
    case Epilogue::identity: return dy;
    case Epilogue::relu: return math::ReluBackward{}(dy, y);
    case Epilogue::tanh: return math::TanhBackward{}(dy, y);
    case Epilogue::sigmoid: return math::SigmoidBackward{}(dy, y);
  }
  return dy;
}

// (x (m, k), w (n, k)[, b (n,)]) -> act(x w^T + b): the product rounded to T, then the bias and
// the activation in T, as the composed ops compute them.
bool linear(const KernelCall& c) {
  const Tensor &x = c.in[0], &w = c.in[1];
  const bool bias = c.in.size() > 2;
  const auto act = c.attrs.get<LinearAttrs>().epilogue;
  const int64_t m = x.shape()[0], k = x.shape()[1], n = w.shape()[0];
  auto run = [&]<class T>() {
    const T *xp = x.data<T>(), *wp = w.data<T>();
    T* op = c.out.data<T>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += double(xp[i * x.stride(0) + p * x.stride(1)]) *
                 double(wp[j * w.stride(0) + p * w.stride(1)]);
        T z = static_cast<T>(acc);
        if (bias) z = T(z + c.in[2].data<T>()[j * c.in[2].stride(0)]);
        op[i * n + j] = activate(act, z);
      }
  };
  if (x.dtype() == f32) run.template operator()<float>();
  else if (x.dtype() == f64) run.template operator()<double>();
  else return false;
  return true;
}

// (dy, x, w, y) -> [dx | dW | db] (ops/fused.hpp) by the same loops over dz = dy act'(y).
bool linear_backward(const KernelCall& c) {
  const Tensor &dy = c.in[0], &x = c.in[1], &w = c.in[2], &y = c.in[3];
  const LinearBackwardAttrs& la = c.attrs.get<LinearBackwardAttrs>();
  const auto act = la.epilogue;
  const int64_t wants = la.wants;
  const int64_t m = x.shape()[0], k = x.shape()[1], n = w.shape()[0];
  auto run = [&]<class T>() {
    std::vector<T> dz(size_t(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        dz[i * n + j] = times_derivative(act, dy.data<T>()[i * dy.stride(0) + j * dy.stride(1)],
                                         y.data<T>()[i * y.stride(0) + j * y.stride(1)]);
    const T *xp = x.data<T>(), *wp = w.data<T>();
    T* o = c.out.data<T>();
    // out(r, p) = sum_q a(r, q) b(q, p), written on at o.
    auto product = [&](int64_t rows, int64_t cols, int64_t inner, auto a, auto b) {
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t p = 0; p < cols; ++p) {
          double acc = 0;
          for (int64_t q = 0; q < inner; ++q) acc += double(a(r, q)) * double(b(q, p));
          *o++ = static_cast<T>(acc);
        }
    };
    auto w_at = [&](int64_t j, int64_t p) { return wp[j * w.stride(0) + p * w.stride(1)]; };
    auto x_at = [&](int64_t i, int64_t p) { return xp[i * x.stride(0) + p * x.stride(1)]; };
    if (wants & 1)  // dx = dz w
      product(
          m, k, n, [&](int64_t i, int64_t j) { return dz[i * n + j]; }, w_at);
    if (wants & 2)  // dW = dz^T x
      product(
          n, k, m, [&](int64_t j, int64_t i) { return dz[i * n + j]; }, x_at);
    if (wants & 4) {  // db(j) = sum_i dz(i, j)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t i = 0; i < m; ++i) acc += double(dz[i * n + j]);
        *o++ = static_cast<T>(acc);
      }
    }
  };
  if (x.dtype() == f32) run.template operator()<float>();
  else if (x.dtype() == f64) run.template operator()<double>();
  else return false;
  return true;
}

}  // namespace

void register_reference_linalg() {
  register_kernel(linear_p, Device::cpu, kReferenceRank, linear);
  register_kernel(linear_backward_p, Device::cpu, kReferenceRank, linear_backward);
  register_kernel(matmul_p, Device::cpu, kReferenceRank, matmul);
  register_kernel(matmul_backward_p, Device::cpu, kReferenceRank, matmul_backward);
}

}  // namespace fx::backend
