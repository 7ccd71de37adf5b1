// The fx::linalg primitives' attributes: what the shape rules (src/ops/linalg_*.cpp) and the
// LAPACK kernels (src/backend/cpu/linalg_*.cpp) share.
//
//   const fx::linalg::detail::SvdShape svd{4, 3};  // a (..., 4, 3) input
//   int64_t k = svd.k();                           // 3
//
// The factorisations are primitives with several outputs, k = min(m, n):
//   qr    (..., m, n) -> Q (..., m, k), R (..., k, n)
//   eigh  (..., n, n) -> w (..., n) real, V (..., n, n) (eigenvectors by column)
//   svd   (..., m, n) -> U (..., m, k), s (..., k) real, V (..., n, k) (not V^H)
#pragma once
#include <algorithm>
#include <cstdint>

#include "fluxion/ops/attrs.hpp"

namespace fx::linalg::detail {

// solve_p: which public function is asking (inv binds solve_p against the identity), for the
// messages.
struct SolveAttrs {
  bool inv = false;
  FX_ATTRS(SolveAttrs, inv)
};
inline const char* solve_name(Attrs p) {
  return !p.empty() && p.get<SolveAttrs>().inv ? "inv" : "solve";
}

// triangular_solve_p: which triangle of a is read.
struct TriangleAttrs {
  bool upper = false;
  FX_ATTRS(TriangleAttrs, upper)
};

// qr_p's attributes: the input's matrix shape (m, n).
struct QrShape {
  int64_t m = 0, n = 0;
  FX_ATTRS(QrShape, m, n)
  int64_t k() const { return std::min(m, n); }
};

// eigh_p's attributes: the matrix size n.
struct EighShape {
  int64_t n = 0;
  FX_ATTRS(EighShape, n)
};

// svd_p's attributes: the input's matrix shape (m, n).
struct SvdShape {
  int64_t m = 0, n = 0;
  FX_ATTRS(SvdShape, m, n)
  int64_t k() const { return std::min(m, n); }
};

}  // namespace fx::linalg::detail
