// The rows of the table-driven primitive suite (tests/ops/primitives_test.cpp runs them).
//
// A row is one public op (or composite) applied to a list of inputs, with the cases (input
// shapes) to run it on. For every row and case the harness checks
//   (a) the default dispatch (tuned CPU kernels first) against the reference backend alone, on
//       contiguous, transposed, sliced (step 2, inside a larger buffer) and expanded inputs, in
//       each of the row's dtypes, and that the op leaves its inputs' storage untouched (rows
//       whose primitives have no reference kernel say why in Opts::no_reference);
//   (b) fx::testing::gradcheck in f64 up to the row's order (0: not differentiable).
// Binary rows list broadcasting cases beside the equal-shape ones. A row named exactly like a
// built-in primitive is that primitive's row: the coverage test checks that every entry of
// fx::builtin_primitives() has one, that it really applies the primitive, and that it is
// gradient-checked when the primitive has a pullback.
#pragma once
#include <cmath>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <fluxion/ops.hpp>
#include <fluxion/ops/primitives.hpp>
#include <fluxion/testing.hpp>

namespace fx::rows {

using Args = std::vector<Tensor>;
using OpFn = std::function<Tensor(const Args&)>;

enum class Kind {
  real,          // uniform in the row's range (per-input range if given)
  index,         // integers in [0, bound), i64 unless dtype says i32
  signed_index,  // integers in [-bound, bound): negative ones count from the end
  mask,          // random bools
};

struct In {
  Shape shape;
  Kind kind = Kind::real;
  int64_t bound = 0;
  DType dtype = i64;  // for index inputs
};
using Case = std::vector<In>;

struct Range {
  double lo, hi;
};

struct Opts {
  std::vector<Case> cases;
  Range range = {-2, 2};                   // real inputs
  std::vector<Range> ranges = {};          // per-input override of `range`
  int order = 2;                           // gradcheck order; 0 = forward only
  std::string why = "";                    // why order < 2 (shown on failure)
  std::vector<DType> dtypes = {f32, f64};  // forward comparison dtypes of real inputs
  bool complex = false;  // real inputs are complex numbers instead: c64/c128 forward, c128 gradient
  double grid = 0;       // > 0: round real inputs to this step (forces ties)
  testing::GradcheckOptions grad = {};
  // Non-empty: the row's primitives have no reference-backend kernel, and this says why (LAPACK
  // is the only implementation: a textbook LU, QR, eigensolver and SVD would be a second
  // library). The forward check then compares the default dispatch on each layout with the
  // default dispatch on dense copies of the same values: it checks that the kernels read every
  // layout and leave their inputs alone, and it cannot check the kernels' values (the gradient,
  // oracle and equation tests of tests/ops/linalg_*_test.cpp do).
  std::string no_reference = "";
};

// A row named exactly like a built-in primitive is that primitive's row.
struct Row {
  std::string name;  // a gtest-friendly name: letters, digits, '_'
  OpFn f;
  Opts o;
};

inline void PrintTo(const Row& r, std::ostream* os) { *os << r.name; }

// Adapters from public functions to OpFn. The function-pointer overloads pick the Tensor
// overload out of an overload set (fx::exp also has a scalar-AD overload).
template <class F>
OpFn un(F f) {
  return [f](const Args& a) { return f(a[0]); };
}
inline OpFn un(Tensor (*f)(const Tensor&)) { return un<decltype(f)>(f); }
template <class F>
OpFn bin(F f) {
  return [f](const Args& a) { return f(a[0], a[1]); };
}
inline OpFn bin(Tensor (*f)(const Tensor&, const Tensor&)) { return bin<decltype(f)>(f); }

// Cases of one real input each.
inline std::vector<Case> shapes(std::initializer_list<Shape> ss) {
  std::vector<Case> cs;
  for (const Shape& s : ss) cs.push_back({In{s}});
  return cs;
}
// Cases of two real inputs each.
inline std::vector<Case> pairs(std::initializer_list<std::pair<Shape, Shape>> ss) {
  std::vector<Case> cs;
  for (const auto& [a, b] : ss) cs.push_back({In{a}, In{b}});
  return cs;
}

// The odd shapes every unary row runs on: a non-power-of-two matrix, 0-d, 3-d, size-1 dims,
// a zero-size tensor.
inline std::vector<Case> unary_shapes() {
  return shapes({{45, 65}, {}, {5, 7, 11}, {1, 3, 1}, {0, 4}});
}
// Equal shapes, then broadcasting: trailing 1s, missing leading dims, 0-d with n-d.
inline std::vector<Case> binary_shapes() {
  return pairs({{{45, 65}, {45, 65}},
                {{}, {}},
                {{5, 7, 11}, {5, 7, 11}},
                {{4, 1}, {3}},
                {{5, 1, 7}, {1, 6, 1}},
                {{}, {3, 4}},
                {{2, 3}, {}},
                {{1}, {2, 1, 3}},
                {{3, 1, 1}, {3, 4, 1}},
                {{0, 3}, {1, 3}}});
}

// Values for input `position` (spec `in`) of shape s, contiguous; real inputs in `real_dtype`.
inline Tensor make_values(const Opts& o, const In& in, size_t position, const Shape& s,
                          DType real_dtype, Generator& gen) {
  std::vector<double> v(static_cast<size_t>(s.numel()));
  switch (in.kind) {
    case Kind::index:
      for (auto& x : v) x = double(gen.below(uint64_t(in.bound)));
      return astype(from_vector(v, s), in.dtype);
    case Kind::signed_index:
      for (auto& x : v) x = double(gen.below(uint64_t(2 * in.bound))) - double(in.bound);
      return astype(from_vector(v, s), in.dtype);
    case Kind::mask:
      for (auto& x : v) x = double(gen.below(2));
      return astype(from_vector(v, s), boolean);
    case Kind::real: break;
  }
  Range r = position < o.ranges.size() ? o.ranges[position] : o.range;
  if (is_complex(real_dtype)) {  // real and imaginary parts both drawn from the range
    std::vector<double> w(v.size());
    for (size_t k = 0; k < v.size(); ++k) {
      v[k] = r.lo + (r.hi - r.lo) * gen.uniform();
      w[k] = r.lo + (r.hi - r.lo) * gen.uniform();
    }
    return astype(complex(from_vector(v, s), from_vector(w, s)), real_dtype);
  }
  const bool integer = !is_floating(real_dtype);
  for (auto& x : v) {
    x = r.lo + (r.hi - r.lo) * gen.uniform();
    if (o.grid > 0) x = std::round(x / o.grid) * o.grid;
    if (integer) x = std::round(x * 4);  // small integers: ties and zeros happen
  }
  return astype(from_vector(v, s), real_dtype);
}

// x with NaN where x > 1.2, +Inf in (0.9, 1.2], -Inf below -1.5 (floating x; complex x in
// either part), and x elsewhere: inputs for the finiteness rows from the default range [-2, 2].
// Integer and bool tensors come back as they are.
inline Tensor with_nonfinite(const Tensor& x) {
  if (is_complex(x.dtype())) return complex(with_nonfinite(real(x)), with_nonfinite(imag(x)));
  if (!is_floating(x.dtype())) return x;
  const Tensor inf = scalar(INFINITY, x.dtype());
  return where(x > 1.2, scalar(NAN, x.dtype()), where(x > 0.9, inf, where(x < -1.5, -inf, x)));
}

std::vector<Row> elementwise_rows();
std::vector<Row> reduce_rows();
std::vector<Row> view_rows();
std::vector<Row> linalg_rows();
std::vector<Row> index_rows();
std::vector<Row> complex_rows();
std::vector<Row> conv_rows();

inline std::vector<Row> all_rows() {
  std::vector<Row> all;
  for (auto family :
       {elementwise_rows, reduce_rows, view_rows, linalg_rows, index_rows, complex_rows, conv_rows})
    for (Row& r : family()) all.push_back(std::move(r));
  return all;
}

}  // namespace fx::rows
