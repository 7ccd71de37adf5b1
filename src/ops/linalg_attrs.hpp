// The fx::linalg primitives' attributes and the layout of their packed outputs: what the shape
// rules (src/ops/linalg_*.cpp) and the LAPACK kernels (src/backend/cpu/linalg_*.cpp) share.
//
//   const fx::linalg::detail::SvdLayout svd{4, 3};         // a (..., 4, 3) input
//   int64_t k = svd.k(), size = svd.size();                 // 3, and 4*3 + 3 + 3*3 = 24
//   int64_t where_s = svd.s_at();                           // s starts after U: 12
//
// Packed outputs. svd_p, eigh_p and qr_p have several results; until primitives have several
// outputs they return them one after another on one last axis, each matrix row-major:
//   qr    (..., m, n) -> (..., m k + k n):      Q (m, k), then R (k, n)             k = min(m, n)
//   eigh  (..., n, n) -> (..., n + n n):        w (n), then V (n, n) (eigenvectors by column)
//   svd   (..., m, n) -> (..., m k + k + n k):  U (m, k), then s (k), then V (n, k) (not V^H)
// The real results (w, s) are stored in the output's dtype, with zero imaginary parts on complex
// matrices. The layouts below are the only place that knows these offsets: the shape rules size
// the output with size(), the kernels write at the offsets, the rules read views at them.
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

// qr_p's attributes: the input's matrix shape (m, n), and the packed output's layout.
struct QrLayout {
  int64_t m = 0, n = 0;
  FX_ATTRS(QrLayout, m, n)
  int64_t k() const { return std::min(m, n); }
  int64_t q_at() const { return 0; }
  int64_t r_at() const { return m * k(); }
  int64_t size() const { return m * k() + k() * n; }
};

// eigh_p's attributes: the matrix size n, and the packed output's layout.
struct EighLayout {
  int64_t n = 0;
  FX_ATTRS(EighLayout, n)
  int64_t w_at() const { return 0; }
  int64_t v_at() const { return n; }
  int64_t size() const { return n + n * n; }
};

// svd_p's attributes: the input's matrix shape (m, n), and the packed output's layout.
struct SvdLayout {
  int64_t m = 0, n = 0;
  FX_ATTRS(SvdLayout, m, n)
  int64_t k() const { return std::min(m, n); }
  int64_t u_at() const { return 0; }
  int64_t s_at() const { return m * k(); }
  int64_t v_at() const { return m * k() + k(); }
  int64_t size() const { return m * k() + k() + n * k(); }
};

}  // namespace fx::linalg::detail
