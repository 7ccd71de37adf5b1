// Linear algebra with gradients on LAPACK (OpenBLAS's, through LAPACKE): solves, factorisations,
// spectra and the functions built from them. Every function takes f32, f64, c64 or c128 matrices
// in the last two axes (LAPACK's s, d, c and z routines) and is batched over any leading axes
// (batch axes of two operands broadcast).
//
//   #include <fluxion/linalg.hpp>
//   fx::Generator gen(0);
//   fx::Tensor a = fx::randn({4, 3, 3}, gen, fx::f64) + 3 * fx::linalg::eye(3, fx::f64);
//   fx::Tensor b = fx::randn({4, 3, 2}, gen, fx::f64);
//   fx::Tensor x = fx::linalg::solve(a, b);                  // a x = b, four systems: (4, 3, 2)
//   fx::Tensor spd = fx::matmul(a, a.t());                   // symmetric positive definite
//   fx::Tensor l = fx::linalg::cholesky(spd);                // lower, l l^T = a a^T
//   auto [w, v] = fx::linalg::eigh(spd);                     // ascending eigenvalues, columns of v
//   auto [u, sv, vh] = fx::linalg::svd(a);                   // reduced: a = u diag(sv) vh
//   auto logdets = [](const fx::Tensor& a) { return fx::sum(fx::linalg::logdet(a)); };
//   fx::Tensor g = fx::gradient(logdets, spd);               // spd^-T, (4, 3, 3)
//   fx::Tensor z = fx::complex(a, fx::randn({4, 3, 3}, gen, fx::f64));
//   auto [sign, logabs] = fx::linalg::slogdet(z);   // z c128: sign c128 with |sign| = 1, f64
//
// Derivatives, both modes, are the published rules that JAX and PyTorch use, written in fluxion
// ops so that they differentiate again (Hessians through a solve or an eigh are fine):
//   solve / inv        dB = A^-T dX, dA = -dB X^T; forward dX = A^-1 (dB - dA X)
//   slogdet            d logabsdet = A^-T (the sign is piecewise constant: no derivative)
//   cholesky, eigh     read A as its symmetric part (A + A^T) / 2, the function they compute,
//                      so their gradients are symmetric (Murray 2016 for cholesky)
//   qr                 Walter & Lehmann's rule for the reduced QR, defined for m >= n
//   eigh               dA = V (diag(dw) + F o (V^T dV)) V^T with F_ij = 1 / (w_j - w_i)
//   svd                Townsend's rule, with F_ij = 1 / (s_j^2 - s_i^2) and S^-1 for the parts
//                      of U, V outside the other's span
// Degenerate spectra: where two eigenvalues (singular values) are exactly equal, F_ij is taken
// as 0. That is exact for losses that depend only on the eigenvalues or that are invariant to
// the choice of basis inside the repeated eigenspace (projectors, a f(A) V^T); for a loss that
// depends on the basis itself the derivative does not exist, and near-equal values give large
// (correct) derivatives. svd's derivative also needs non-zero singular values when U or V has
// a cotangent (the S^-1 term, and JAX's and PyTorch's rules), and U and V are only defined up
// to signs of their columns (pairs), so only losses invariant to those signs have gradients
// that mean anything. det's derivative is det * A^-T through inv: at an exactly singular A it
// throws fx::Error (torch returns the adjugate there).
//
// Complex matrices: every rule above holds with conjugate transposes (A^-H, V^H, ...), the
// symmetric part is the Hermitian part (A + A^H) / 2 (cholesky, eigh), and gradients follow
// fluxion's convention (fluxion/ops/complex.hpp: the cotangent of z = x + iy is dL/dx + i dL/dy),
// which for a real loss is what torch.autograd computes. eigh's eigenvalues and svd's singular
// values are real (f32/f64), det and logdet are complex (logdet the principal log), slogdet gives
// a complex sign of modulus 1 (0 for a singular matrix) and a real log|det|, and here the sign
// has a derivative (d sign = i sign Im tr(A^-1 dA)). qr's R has a real diagonal, as geqrf leaves
// it. Gauge: an eigenvector, or a pair (u_i, v_i) of singular vectors, is defined only up to a
// phase e^{i theta}, so only losses that do not depend on those phases (|v_ij|, projectors
// v v^H, phases fixed by a rule such as "first entry real and positive", functions of the values)
// have a derivative; for them the pullbacks are exact. eigh's pullback drops the phase part of a
// cotangent (the imaginary diagonal of V^H dV); svd's reads the imaginary diagonal of U^H dU
// alone, which such a loss makes equal to minus that of V^H dV (torch checks this and raises
// where it fails; fluxion does not). Pushforwards leave the phases unchanged (eigh) or change
// those of U alone (svd).
//
// Bad input throws fx::Error naming the function and the shapes: a non-square matrix, batch
// axes that do not broadcast, operands of different dtypes, an exactly singular matrix (solve,
// inv, triangular_solve), one that is not positive definite (cholesky), integer or bool dtypes.
#pragma once
#include <cstdint>
#include <tuple>

#include "fluxion/core/tensor.hpp"

namespace fx::linalg {

// The n x n identity on `device` (a meta identity holds no data, except inside fx::trace).
Tensor eye(int64_t n, DType dtype = f32, Device device = Device::cpu);
Tensor trace(const Tensor& a);       // (..., n, n) -> (...): sum of the diagonal
Tensor diagonal(const Tensor& a);    // (..., n, n) -> (..., n)
Tensor diag_embed(const Tensor& v);  // (..., n) -> (..., n, n), v on the diagonal

// x with a x = b for a (..., n, n) and b (..., n, k), or b (..., n) for vectors (torch's rule:
// b is a batch of vectors when it has one axis fewer than a).
Tensor solve(const Tensor& a, const Tensor& b);
// x with a x = b where a is triangular: only its lower (upper) triangle is read.
Tensor triangular_solve(const Tensor& a, const Tensor& b, bool upper = false);
Tensor inv(const Tensor& a);
Tensor det(const Tensor& a);
// (sign, log|det a|): sign is -1, 0 or 1 and carries no derivative for real a; for complex a it
// is det / |det| (0 where singular), complex and differentiable, and log|det a| is real.
std::tuple<Tensor, Tensor> slogdet(const Tensor& a);
// log det a: NaN where det a < 0, -inf where it is 0; complex a: log|det a| + i arg(det a).
Tensor logdet(const Tensor& a);

// Lower-triangular l with l l^H = (a + a^H) / 2 (l l^T = (a + a^T) / 2 for real a); real,
// positive diagonal.
Tensor cholesky(const Tensor& a);
// Reduced QR of a (..., m, n): q (..., m, k) with orthonormal columns and upper-triangular
// r (..., k, n), k = min(m, n). Derivatives need m >= n (fx::Error otherwise).
std::tuple<Tensor, Tensor> qr(const Tensor& a);
// Eigen-decomposition of the symmetric (Hermitian) (a + a^H) / 2: ascending real eigenvalues
// w (..., n) and orthonormal (unitary) eigenvectors, the columns of v (..., n, n).
std::tuple<Tensor, Tensor> eigh(const Tensor& a);
Tensor eigvalsh(const Tensor& a);
// Reduced SVD of a (..., m, n): u (..., m, k), descending real s (..., k), vh (..., k, n) (v^H).
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a);
Tensor svdvals(const Tensor& a);

// The least-squares solution of a x = b for a (..., m, n) of full rank: argmin |a x - b| when
// m >= n (through qr), the minimum-norm solution when m < n. b as for solve.
Tensor lstsq(const Tensor& a, const Tensor& b);
// Moore-Penrose pseudo-inverse through the SVD: singular values at or below
// rtol * largest are treated as zero (rtol < 0: max(m, n) * machine epsilon, as NumPy and torch).
Tensor pinv(const Tensor& a, double rtol = -1);
// exp(a) = sum a^k / k!: scaling and squaring around a degree-18 Taylor polynomial (error below
// double rounding for the scaled matrix), differentiated as the composition it is.
Tensor matrix_exp(const Tensor& a);

}  // namespace fx::linalg
