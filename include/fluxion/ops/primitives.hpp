// The table itself: every built-in primitive, by name. Public functions (elementwise.hpp,
// reduce.hpp, ...) are what users call; this list is for backends registering kernels, for the
// test suite's coverage check, and for anyone writing a transformation.
//
//   for (const fx::Primitive* p : fx::builtin_primitives()) std::cout << p->name << "\n";
#pragma once
#include <span>

#include "fluxion/ops/elementwise_defs.hpp"
#include "fluxion/ops/primitive.hpp"

namespace fx {

#define FX_BUILTIN_PRIMITIVES(X)                                                                   \
  /* unary */ X(neg) X(relu) X(abs) X(sign)                                                        \
      X(square) /* math functions (ops/elementwise_defs.hpp) */                                    \
      FX_ELEMENTWISE_UNARY(X) FX_ELEMENTWISE_BINARY(X) /* with a number */ X(add_scalar) X(        \
          mul_scalar) X(pow_scalar) /* binary */ X(add) X(sub) X(mul) X(div) X(pow) X(maximum)     \
          X(minimum) /* comparisons */ X(eq) X(ne) X(lt) X(le) X(gt) X(ge) /* finiteness */ X(     \
              isnan) X(isinf) X(isfinite) /* selection and conversion */ X(where) X(astype)        \
              X(copy) /* reductions */ X(sum) X(max) X(min) X(argmax) X(argmin) X(logsumexp)       \
                  X(sum_squares) X(logitcrossentropy) X(any) X(                                    \
                      all) /* views and their adjoints */ X(reshape) X(permute) X(slice)           \
                      X(pad_slice) X(slice_set) X(expand) X(concat) /* linear algebra */ X(matmul) \
                          X(linear) /* convolution */ X(conv) X(conv_backward_data)                \
                              X(conv_backward_weights) /* pooling */ X(max_pool)                   \
                                  X(max_pool_backward) X(avg_pool)                                 \
                                      X(avg_pool_backward) /* indexing */ X(index_select)          \
                                          X(index_add) X(gather)                                   \
                                              X(scatter_add) /* complex numbers */ X(complex)      \
                                                  X(real) X(imag) X(conj) X(angle)                 \
                                                      X(complex_abs) /* spectral */ X(             \
                                                          fft) /* fx::linalg (LAPACK) */           \
      X(linalg_solve) X(linalg_triangular_solve) X(linalg_logabsdet) X(linalg_det_sign)            \
          X(linalg_complex_logdet) X(linalg_cholesky) X(linalg_qr) X(linalg_eigh) X(linalg_svd)

#define FX_DECLARE_PRIMITIVE(name) extern Primitive name##_p;
FX_BUILTIN_PRIMITIVES(FX_DECLARE_PRIMITIVE)
#undef FX_DECLARE_PRIMITIVE

std::span<Primitive* const> builtin_primitives();

}  // namespace fx
