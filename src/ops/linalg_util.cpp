#include "ops/linalg_util.hpp"

#include <array>
#include <span>
#include <string>

#include "fluxion/ops/complex.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/linalg_lapack.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::linalg::detail {

void check_matrix(const Tensor& a, const char* op, bool square) {
  FX_CHECK(a.defined(), "fx::linalg::", op, ": undefined tensor");
  FX_CHECK(a.ndim() >= 2, "fx::linalg::", op, ": needs a matrix (..., m, n), got ", a.shape());
  FX_CHECK(is_inexact(a.dtype()), "fx::linalg::", op, ": needs f32, f64, c64 or c128, got ",
           dtype_name(a.dtype()), " ", a.shape());
  FX_CHECK(!square || a.shape()[a.ndim() - 1] == a.shape()[a.ndim() - 2], "fx::linalg::", op,
           ": needs square matrices, got ", a.shape());
}

bool is_matrix(const Tensor& a, bool square) {
  return a.defined() && a.ndim() >= 2 && is_inexact(a.dtype()) &&
         (!square || a.shape()[a.ndim() - 1] == a.shape()[a.ndim() - 2]);
}

void broadcast_batch(Tensor& a, Tensor& b, const char* op, bool& vector) {
  FX_CHECK(b.defined() && b.ndim() >= 1, "fx::linalg::", op, ": right-hand side must have at ",
           "least one axis, got ", b.defined() ? b.shape().to_string() : std::string("undefined"));
  FX_CHECK(b.dtype() == a.dtype(), "fx::linalg::", op, ": dtypes differ: ", dtype_name(a.dtype()),
           " ", a.shape(), " and ", dtype_name(b.dtype()), " ", b.shape());
  const Shape a0 = a.shape(), b0 = b.shape();
  // torch's rule: b is a (batch of) vector(s) when it has one axis, or the shape of a less
  // its last axis.
  vector = b.ndim() == 1 || (b.ndim() == a.ndim() - 1 && b.shape() == leading(a.shape(), 1));
  if (vector) b = unsqueeze(b, -1);
  const int64_t n = a.shape()[a.ndim() - 2];
  FX_CHECK(b.ndim() >= 2 && b.shape()[b.ndim() - 2] == n, "fx::linalg::", op, ": ", a0, " and ", b0,
           ": right-hand side needs ", n, " rows");
  Shape ba(std::span<const int64_t>(a.shape().data(), a.ndim() - 2));
  Shape bb(std::span<const int64_t>(b.shape().data(), b.ndim() - 2));
  if (ba == bb) return;
  Shape batch;
  try {
    batch = broadcast_shapes(ba, bb, op);
  } catch (const Error&) {
    fx::detail::fail("fx::linalg::", op, ": ", a0, " and ", b0, ": batch axes ", ba, " and ", bb,
                     " do not broadcast");
  }
  Shape sa = batch, sb = batch;
  sa.push_back(n);
  sa.push_back(a.shape()[a.ndim() - 1]);
  sb.push_back(n);
  sb.push_back(b.shape()[b.ndim() - 1]);
  a = expand(a, sa);
  b = expand(b, sb);
}

Tensor allocate_and_dispatch(const Primitive& p, std::span<const Tensor> in, Attrs attrs,
                             const Shape& shape, DType dtype) {
  Tensor out = Tensor::empty(shape, dtype, output_device(in));
  dispatch({p, in, out, attrs});
  return out;
}

void allocate_and_dispatch_n(const Primitive& p, std::span<const Tensor> in, Attrs attrs,
                             std::initializer_list<OutputSpec> specs, Tensor* out) {
  const Device device = output_device(in);
  size_t k = 0;
  for (const OutputSpec& s : specs) out[k++] = Tensor::empty(s.shape, s.dtype, device);
  dispatch({p, in, out[0], attrs, std::span<const Tensor>(out, k)});
}

void check_operands(bool ok, const char* op, std::span<const Tensor> in, const char* what) {
  if (ok) return;
  std::string shapes;
  for (const Tensor& x : in)
    shapes += (shapes.empty() ? "" : " and ") + std::string(dtype_name(x.dtype())) + " " +
              x.shape().to_string();
  fx::detail::fail("fx::linalg::", op, ": ", shapes, ": ", what);
}

Shape leading(const Shape& s, int drop) {
  return Shape(std::span<const int64_t>(s.data(), s.size() - drop));
}

Shape with_matrix(const Shape& s, int64_t r, int64_t c) {
  Shape out = s;
  out[out.size() - 2] = r;
  out[out.size() - 1] = c;
  return out;
}

Tensor mT(const Tensor& x) { return transpose(x, -2, -1); }
Tensor mH(const Tensor& x) { return conj(mT(x)); }
Tensor sym(const Tensor& x) { return 0.5 * (x + mH(x)); }

Tensor real_part(const Tensor& x) { return is_complex(x.dtype()) ? astype(real(x), x.dtype()) : x; }

Tensor real_diag(const Tensor& x) {
  return real_part(x) * eye(x.shape()[x.ndim() - 1], x.dtype(), x.device());
}

namespace {
// 1 where (lower ? j - i <= k : j - i >= k), for the last two axes of x.
Tensor band_mask(const Tensor& x, int64_t k, bool lower) {
  const int64_t r = x.shape()[x.ndim() - 2], c = x.shape()[x.ndim() - 1];
  std::vector<double> m(size_t(r * c));
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) m[size_t(i * c + j)] = (lower ? j - i <= k : j - i >= k);
  return astype(from_vector(m, Shape{r, c}), x.dtype());
}
}  // namespace

Tensor tril(const Tensor& x, int64_t k) { return x * band_mask(x, k, true); }
Tensor triu(const Tensor& x, int64_t k) { return x * band_mask(x, k, false); }

Tensor safe_reciprocal(const Tensor& x) {
  Tensor zero = x == 0.0;
  // The reciprocal of a safe denominator: 1/0's infinite derivative would turn the zero
  // cotangent of the masked entries into NaN in second-order passes.
  return where(zero, 0.0, reciprocal(where(zero, 1.0, x)));
}

Tensor inverse_gaps(const Tensor& w) {
  return safe_reciprocal(unsqueeze(w, -2) - unsqueeze(w, -1));  // 1 / (w_j - w_i)
}

Tensor or_zeros(const Tensor& dy, const Tensor& like) {
  return dy.defined() ? dy : zeros_like(like);
}

Tensor add_defined(const Tensor& u, const Tensor& v) {
  if (!u.defined()) return v;
  return v.defined() ? u + v : u;
}

}  // namespace fx::linalg::detail
