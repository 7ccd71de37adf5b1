// fx::linalg functions composed of differentiable ops and the LAPACK primitives: no rules of their
// own, AD differentiates the composition.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fluxion/ops/create.hpp"
#include "fluxion/ops/device.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg.hpp"
#include "fluxion/ops/linalg_lapack.hpp"
#include "fluxion/ops/reduce.hpp"
#include "fluxion/ops/view.hpp"
#include "ops/linalg_util.hpp"

namespace fx::linalg {

using detail::mH;

Tensor eye(int64_t n, DType dtype, Device device) {
  FX_CHECK(n >= 0, "fx::linalg::eye: negative size ", n);
  // Abstract evaluation touches no data; a traced function needs the values, as a constant.
  if (!device.has_data() && fx::detail::tracing_depth == 0)
    return Tensor::empty(Shape{n, n}, dtype, device);
  std::vector<double> v(size_t(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) v[size_t(i * n + i)] = 1;
  Tensor id = astype(from_vector(v, Shape{n, n}), dtype);
  return device.has_data() ? to(id, device) : id;
}

Tensor diagonal(const Tensor& a) {
  detail::check_matrix(a, "diagonal", true);
  return sum(a * eye(a.shape()[a.ndim() - 1], a.dtype(), a.device()), {-1});
}

Tensor trace(const Tensor& a) {
  detail::check_matrix(a, "trace", true);
  return sum(diagonal(a), {-1});
}

Tensor diag_embed(const Tensor& v) {
  FX_CHECK(v.defined() && v.ndim() >= 1, "fx::linalg::diag_embed: needs at least one axis, got ",
           v.defined() ? v.shape().to_string() : std::string("undefined"));
  return unsqueeze(v, -1) * eye(v.shape()[v.ndim() - 1], v.dtype(), v.device());
}

Tensor lstsq(const Tensor& a0, const Tensor& b0) {
  detail::check_matrix(a0, "lstsq", false);
  Tensor a = a0, b = b0;
  bool vector = false;
  detail::broadcast_batch(a, b, "lstsq", vector);
  const int64_t m = a.shape()[a.ndim() - 2], n = a.shape()[a.ndim() - 1];
  Tensor x;
  if (m >= n) {  // a = q r: x = r^-1 q^H b
    auto [q, r] = qr(a);
    x = triangular_solve(r, matmul(mH(q), b), true);
  } else {  // a^H = q r, a = r^H q^H: the minimum-norm solution is q r^-H b
    auto [q, r] = qr(mH(a));
    x = matmul(q, triangular_solve(mH(r), b, false));
  }
  return vector ? squeeze(x, -1) : x;
}

Tensor pinv(const Tensor& a, double rtol) {
  detail::check_matrix(a, "pinv", false);
  const int64_t m = a.shape()[a.ndim() - 2], n = a.shape()[a.ndim() - 1];
  if (rtol < 0) {
    const double eps = real_dtype(a.dtype()) == f64 ? std::numeric_limits<double>::epsilon()
                                                    : double(std::numeric_limits<float>::epsilon());
    rtol = double(std::max(m, n)) * eps;
  }
  auto [u, s, vh] = svd(a);
  if (s.shape()[s.ndim() - 1] == 0)
    return zeros(detail::with_matrix(a.shape(), n, m), a.dtype(), a.device());
  Tensor kept = s > max(s, {-1}, true) * rtol;
  Tensor sinv = where(kept, reciprocal(where(kept, s, 1.0)), 0.0);
  return matmul(mH(vh) * unsqueeze(sinv, -2), mH(u));
}

Tensor matrix_exp(const Tensor& a) {
  detail::check_matrix(a, "matrix_exp", true);
  const int64_t n = a.shape()[a.ndim() - 1];
  if (a.numel() == 0) return zeros_like(a);
  // Scale so that the largest 1-norm (column sum) is at most 1/2: the Taylor remainder of
  // degree 18 is then below 0.5^19 / 19! ~ 1e-23, relative to a norm-1 result.
  const double norm = max(sum(abs(stop_gradient(a)), {-2})).item();
  const int squarings = norm > 0.5 ? int(std::ceil(std::log2(norm / 0.5))) : 0;
  Tensor x = a * std::ldexp(1.0, -squarings);
  Tensor id = eye(n, a.dtype(), a.device());
  // Horner: I + x (I + x/2 (I + x/3 (... (I + x/18)))).
  Tensor p = id + x * (1.0 / 18);
  for (int k = 17; k >= 1; --k) p = id + matmul(x, p) * (1.0 / k);
  for (int i = 0; i < squarings; ++i) p = matmul(p, p);
  return p;
}

}  // namespace fx::linalg
