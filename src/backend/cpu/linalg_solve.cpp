// CPU kernels of the fx::linalg primitives on LU (getrf/gesv) and triangular solves (trtrs):
// linalg_solve, linalg_triangular_solve, and the determinant family linalg_logabsdet,
// linalg_det_sign and linalg_complex_logdet. The shape rules (src/ops/linalg_solve.cpp) have
// allocated dense outputs; matrices are solved one after another (LAPACK threads inside a call
// where it pays). A singular matrix is an fx::Error naming the public function, as before the
// kernels were split from the rules.
#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "backend/backends.hpp"
#include "backend/cpu/lapack.hpp"
#include "backend/cpu/linalg_dense.hpp"
#include "backend/cpu/loops.hpp"
#include "ops/linalg_attrs.hpp"

namespace fx::backend::cpu {
namespace {

// (a (..., n, n), b (..., n, k)) -> x (..., n, k) with a x = b, by gesv: b is gathered into the
// output, which gesv overwrites with x.
bool solve(const KernelCall& c) {
  const Tensor &a = c.in[0], &b = c.in[1];
  const char* op = linalg::detail::solve_name(c.attrs);
  auto run = [&]<class T>() {
    const int64_t n = a.shape()[a.ndim() - 1], k = b.shape()[b.ndim() - 1];
    if (n == 0 || k == 0) return;
    std::vector<T> lu(static_cast<size_t>(n * n));
    std::vector<lapack::I> piv(static_cast<size_t>(n));
    T* x = c.out.data<T>();
    for (int64_t m = 0, count = matrix_count(a); m < count; ++m) {
      gather_matrix(a, m, lu.data());
      gather_matrix(b, m, x + m * n * k);
      const lapack::I info = lapack::gesv(n, k, lu.data(), piv.data(), x + m * n * k);
      FX_CHECK(info <= 0, "fx::linalg::", op, ": ", a.shape(), ": matrix ", m,
               " is singular (pivot ", info - 1, " of its LU factors is exactly zero)");
      FX_CHECK(info == 0, "fx::linalg::", op, ": LAPACK gesv rejected argument ", -info);
    }
  };
  return floating_or_complex(c.out.dtype(), run);
}

// The same with a triangular a (TriangleAttrs: which triangle is read), by trtrs.
bool triangular_solve(const KernelCall& c) {
  const Tensor &a = c.in[0], &b = c.in[1];
  const bool upper = c.attrs.get<linalg::detail::TriangleAttrs>().upper;
  auto run = [&]<class T>() {
    const int64_t n = a.shape()[a.ndim() - 1], k = b.shape()[b.ndim() - 1];
    if (n == 0 || k == 0) return;
    std::vector<T> t(static_cast<size_t>(n * n));
    T* x = c.out.data<T>();
    for (int64_t m = 0, count = matrix_count(a); m < count; ++m) {
      gather_matrix(a, m, t.data());
      gather_matrix(b, m, x + m * n * k);
      const lapack::I info = lapack::trtrs(upper ? 'U' : 'L', n, k, t.data(), x + m * n * k);
      FX_CHECK(info <= 0, "fx::linalg::triangular_solve: ", a.shape(), ": matrix ", m,
               " is singular (diagonal entry ", info - 1, " is zero)");
      FX_CHECK(info == 0, "fx::linalg::triangular_solve: LAPACK trtrs rejected argument ", -info);
    }
  };
  return floating_or_complex(c.out.dtype(), run);
}

// sign(det) and log|det| of each of the `count` matrices of a (..., n, n) from its LU factors,
// passed to emit(m, sign, logabs): sign is -1, 0 or 1 for real matrices and det / |det| (0 where
// singular) for complex ones; logabs is -inf where the matrix is singular.
template <class T, class Emit>
void lu_slogdet(const Tensor& a, int64_t count, Emit&& emit) {
  using R = lapack::Real<T>;
  const int64_t n = a.shape()[a.ndim() - 1];
  std::vector<T> lu(static_cast<size_t>(n * n));
  std::vector<lapack::I> piv(static_cast<size_t>(n));
  for (int64_t m = 0; m < count; ++m) {
    gather_matrix(a, m, lu.data());
    const lapack::I info = n ? lapack::getrf(n, lu.data(), piv.data()) : 0;
    FX_CHECK(info >= 0, "fx::linalg::slogdet: LAPACK getrf rejected argument ", -info);
    T s(1);
    double l = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T u = lu[size_t(i * n + i)];
      const double mod = double(std::abs(u));
      if (piv[size_t(i)] != i + 1) s = -s;  // a row interchange
      if (mod > 0) s *= u / T(R(mod));      // the sign (phase) of the pivot
      l += std::log(mod);
    }
    if (info > 0) emit(m, T(0), -std::numeric_limits<double>::infinity());
    else emit(m, s / T(std::abs(s)), l);  // renormalised: |s| drifts by rounding
  }
}

// The three outputs of the family, one scalar per matrix (the output's numel counts them: a
// batch of 0 x 0 matrices has determinant 1). The output's dtype picks the element type: real
// for logabsdet of complex input, so the input's dtype is visited instead.
bool logabsdet(const KernelCall& c) {
  auto run = [&]<class T>() {
    using R = lapack::Real<T>;
    R* out = c.out.data<R>();
    lu_slogdet<T>(c.in[0], c.out.numel(), [&](int64_t m, T, double l) { out[m] = R(l); });
  };
  return floating_or_complex(c.in[0].dtype(), run);
}

bool det_sign(const KernelCall& c) {
  auto run = [&]<class T>() {
    T* out = c.out.data<T>();
    lu_slogdet<T>(c.in[0], c.out.numel(), [&](int64_t m, T s, double) { out[m] = s; });
  };
  return floating_or_complex(c.out.dtype(), run);
}

// log det = log|det| + i arg(det), arg in (-pi, pi]; -inf + 0i where singular. Complex only.
bool complex_logdet(const KernelCall& c) {
  if (!is_complex(c.out.dtype())) return false;
  auto run = [&]<class T>() {
    if constexpr (!std::is_same_v<T, lapack::Real<T>>) {
      using R = lapack::Real<T>;
      T* out = c.out.data<T>();
      lu_slogdet<T>(c.in[0], c.out.numel(), [&](int64_t m, T s, double l) {
        const double phase = s == T(0) ? 0.0 : std::arg(std::complex<double>(s));
        out[m] = T(R(l), R(phase));
      });
    }
  };
  return floating_or_complex(c.out.dtype(), run);
}

}  // namespace

void register_linalg_solve() {
  register_kernel(linalg_solve_p, Device::cpu, kCpuRank, solve);
  register_kernel(linalg_triangular_solve_p, Device::cpu, kCpuRank, triangular_solve);
  register_kernel(linalg_logabsdet_p, Device::cpu, kCpuRank, logabsdet);
  register_kernel(linalg_det_sign_p, Device::cpu, kCpuRank, det_sign);
  register_kernel(linalg_complex_logdet_p, Device::cpu, kCpuRank, complex_logdet);
}

}  // namespace fx::backend::cpu
