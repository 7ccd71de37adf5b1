// Shared pieces of fx::linalg (src/ops/linalg_*.cpp): argument checks, the shape rules' common
// tail, and the masks and transposes the derivative rules are written with.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <span>

#include "fluxion/core/tensor.hpp"
#include "fluxion/ops/primitive.hpp"

namespace fx::linalg::detail {

// Throws unless a is an f32/f64/c64/c128 tensor with at least two axes (square ones if
// `square`).
void check_matrix(const Tensor& a, const char* op, bool square);

// Broadcasts the batch axes of a (..., r, c) and b (..., p, q) against each other; b may be a
// batch of vectors (one axis fewer than a). Returns b as matrices; `vector` says it was one.
void broadcast_batch(Tensor& a, Tensor& b, const char* op, bool& vector);

// The abstract evaluation every linalg primitive's forward ends with: its output, of the shape
// and dtype its rule gives, on output_device(in), filled by the kernel of that device (the
// LAPACK kernels of src/backend/cpu/linalg_*.cpp; none on the meta device, where this is the
// whole forward).
Tensor allocate_and_dispatch(const Primitive& p, std::span<const Tensor> in, Attrs attrs,
                             const Shape& shape, DType dtype);
// The same for a primitive with several outputs: out[k] gets shape and dtype specs[k].
struct OutputSpec {
  Shape shape;
  DType dtype;
};
void allocate_and_dispatch_n(const Primitive& p, std::span<const Tensor> in, Attrs attrs,
                             std::initializer_list<OutputSpec> specs, Tensor* out);
// Whether a is an f32/f64/c64/c128 tensor of (square, if `square`) matrices: check_matrix
// without the message, for the shape rules.
bool is_matrix(const Tensor& a, bool square);
// The shape rules' check that a primitive bound directly (not through its public function)
// still gets operands it can factor: throws unless `ok`, naming the function and the shapes.
void check_operands(bool ok, const char* op, std::span<const Tensor> in, const char* what);

// The axes of x before its last `drop` ones.
Shape leading(const Shape& s, int drop);
// The shape of x with its last two axes replaced by (r, c).
Shape with_matrix(const Shape& s, int64_t r, int64_t c);

Tensor mT(const Tensor& x);  // transpose of the last two axes
// The conjugate transpose x^H: the adjoint, which the real rules' transposes become on complex
// matrices (x^T for real x).
Tensor mH(const Tensor& x);
Tensor sym(const Tensor& x);  // (x + x^H) / 2: the symmetric (Hermitian) part
// The diagonal of x with its imaginary part dropped, as a matrix of x's dtype.
Tensor real_diag(const Tensor& x);
// The real part of x in x's own dtype (x itself when real): for the real results (eigenvalues,
// singular values) that complex primitives carry in their complex outputs.
Tensor real_part(const Tensor& x);
Tensor tril(const Tensor& x, int64_t k = 0);  // zero above diagonal k
Tensor triu(const Tensor& x, int64_t k = 0);  // zero below diagonal k
// 1 / x, and 0 where x == 0.
Tensor safe_reciprocal(const Tensor& x);
// F_ij = 1 / (w_j - w_i) for w (..., n) -> (..., n, n); 0 where w_i == w_j (and on the diagonal).
Tensor inverse_gaps(const Tensor& w);
// u + v where either may be undefined (a zero tangent).
Tensor add_defined(const Tensor& u, const Tensor& v);
// dy, or a zero shaped like `like` when undefined (an unused output's cotangent).
Tensor or_zeros(const Tensor& dy, const Tensor& like);

}  // namespace fx::linalg::detail
