// Reference matmul: the textbook triple loop over strided operands, accumulated in double.
#include "backend/backends.hpp"

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

}  // namespace

void register_reference_linalg() { register_kernel(matmul_p, Device::cpu, kReferenceRank, matmul); }

}  // namespace fx::backend
