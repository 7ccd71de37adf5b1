// fx::lower_triangular_product on fx::Real: y = L x recorded as one block of n statements
// (ScalarTape, kLowerTriangularBlock), and the block's reverse step.
//
// Row by row, a dot product each, x would be written to the tape once per row that reads it
// (n (n + 1) / 2 times) and the sweep would scatter into x's adjoints as often. The block holds
// n, then x's indices and values, then L's by rows, each element once; its reverse step sums x's
// adjoints in registers and adds each once. Up to n = 16 (Cholesky factors of small covariances;
// ADBench's GMM at d = 2 and 10) both run fully unrolled, with x and those sums in registers.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

#include "ad/range_ids.hpp"
#include "fluxion/ad/scalar_reduce.hpp"

namespace fx::ad {
namespace {

constexpr size_t kUnrolledMax = 16;

#define FX_INLINE __attribute__((always_inline))

// body(integral_constant<size_t, 0>), ..., body(integral_constant<size_t, N - 1>): unrolled in
// the source, so the compiler's unrolling heuristics cannot leave a loop behind.
template <size_t N, class Body>
FX_INLINE inline void unrolled(Body&& body) {
  [&]<size_t... I>(std::index_sequence<I...>) FX_INLINE {
    (body(std::integral_constant<size_t, I>{}), ...);
  }
  (std::make_index_sequence<N>());
}

// Row and column of element j of a lower-triangular matrix packed by rows.
constexpr size_t row_of(size_t j) {
  size_t b = 0;
  while ((b + 1) * (b + 2) / 2 <= j) ++b;
  return b;
}
constexpr size_t column_of(size_t j) { return j - row_of(j) * (row_of(j) + 1) / 2; }

// A block being recorded at the tape's end: its operands (the marker and n, then x, then L)
// and, past them, the row sums, kept there until the ids are checked (y is written only when
// the statements are committed). The n statements have 1 + n + n (n + 1) / 2 > n operands
// between them, so the statement room follows from the operand room (ScalarTape::reserve).
struct Block {
  size_t start, ops;
  uint32_t* ip;  // x's indices, then L's (past the marker)
  double* mp;    // x's values, then L's
  double* sums;
};

FX_INLINE inline Block begin_block(ScalarTape* tape, size_t n) {
  const size_t ops = 1 + n + n * (n + 1) / 2;
  tape->reserve(ops + n);
  const size_t start = tape->ops_n_;
  uint32_t* ip = tape->idx_ + start;
  double* mp = tape->mul_ + start;
  ip[0] = kLowerTriangularBlock;
  mp[0] = double(n);
  return {start, ops, ip + 1, mp + 1, mp + ops};
}

// Checks the ids of x and L, then commits the n statements and writes y.
FX_INLINE inline void end_block(ScalarTape* tape, const Block& blk, const Real* packed,
                                const Real* x, Real* y, size_t n, const RangeIds& x_ids,
                                const RangeIds& l_ids) {
  const unsigned long long ids = active_scalar_ids;
  check_range(x, n, x_ids, ids);
  check_range(packed, n * (n + 1) / 2, l_ids, ids);
  const size_t first = tape->n_ + 1, end = blk.start + blk.ops;
  for (size_t b = 0; b < n; ++b) {
    tape->end_[first + b] = uint32_t(end);  // the first owns the block, the others nothing
    y[b] = Real(blk.sums[b], uint32_t(first + b));
  }
  tape->n_ += n;
  tape->ops_n_ = end;
}

// Record a block: x's indices and values at ip[0, n), mp[0, n) past the marker, then L's by
// rows, and the row sums, folding the index words into the id checks. The fixed-size form keeps
// x and the running row sums in registers.
template <size_t N>
void record_fixed(ScalarTape* tape, const Real* packed, const Real* x, Real* y, size_t) {
  constexpr size_t tri = N * (N + 1) / 2;
  const Block blk = begin_block(tape, N);
  uint32_t* ip = blk.ip;
  double* mp = blk.mp;
  double* sums = blk.sums;
  RangeIds x_ids;
  double xv[N];  // a local copy: stores to the tape cannot alias it
  unrolled<N>([&](auto a) FX_INLINE {
    const uint64_t m = x[a].index_and_tape();
    x_ids.add(m);
    ip[a] = uint32_t(m);
    xv[a] = x[a].value();
    mp[a] = xv[a];
  });
  // L two Reals at a time, as record_dot does (one 32-byte load; values and indices stored in
  // two stores), each value into its row's sum: rows and columns are known at compile time. A
  // finished row's sum is stored at once, so only x and one or two sums stay in registers.
  double s[N] = {};
  auto add = [&](auto j, double value) FX_INLINE {  // j: element j, as an integral_constant
    constexpr size_t row = row_of(decltype(j)::value), column = column_of(decltype(j)::value);
    s[row] += value * xv[column];
    if constexpr (column == row) sums[row] = s[row];  // the row's last
  };
  U64x2 any = {0, 0}, all = ~any;
  unrolled<tri / 2>([&](auto p) FX_INLINE {
    constexpr size_t j = 2 * decltype(p)::value;
    const auto [values, words] = load_pair(packed + j);
    any |= words;
    all &= words;
    store_operands(ip + N + j, mp + N + j, words, values);
    add(std::integral_constant<size_t, j>{}, values[0]);
    add(std::integral_constant<size_t, j + 1>{}, values[1]);
  });
  RangeIds l_ids{any[0] | any[1], all[0] & all[1]};
  if constexpr (tri % 2 != 0) {
    constexpr size_t j = tri - 1;
    l_ids.add(packed[j].index_and_tape());
    ip[N + j] = packed[j].index();
    mp[N + j] = packed[j].value();
    add(std::integral_constant<size_t, j>{}, packed[j].value());
  }
  end_block(tape, blk, packed, x, y, N, x_ids, l_ids);
}

void record_any(ScalarTape* tape, const Real* packed, const Real* x, Real* y, size_t n) {
  const Block blk = begin_block(tape, n);
  uint32_t* ip = blk.ip;
  double* mp = blk.mp;
  RangeIds x_ids, l_ids;
  for (size_t a = 0; a < n; ++a) {
    x_ids.add(x[a].index_and_tape());
    ip[a] = x[a].index();
    mp[a] = x[a].value();
  }
  for (size_t b = 0, j = 0; b < n; ++b) {
    double s = 0;
    for (size_t a = 0; a <= b; ++a, ++j) {
      l_ids.add(packed[j].index_and_tape());
      ip[n + j] = packed[j].index();
      mp[n + j] = packed[j].value();
      s += packed[j].value() * x[a].value();
    }
    blk.sums[b] = s;
  }
  end_block(tape, blk, packed, x, y, n, x_ids, l_ids);
}

// The block's reverse step (ip, mp past the marker): row b's adjoint g_b goes to L(b, a) as
// g_b x_a and, summed over the rows, to x_a as Σ_b g_b L(b, a); the fixed-size form keeps x
// and those sums in registers.
template <size_t N>
FX_INLINE inline void sweep_fixed(double* w, uint32_t first, const uint32_t* ip, const double* mp,
                                  double g0) {
  double xv[N], acc[N];
  unrolled<N>([&](auto a) FX_INLINE {
    xv[a] = mp[a];
    acc[a] = 0;
  });
  unrolled<N>([&](auto b) FX_INLINE {
    constexpr size_t row = decltype(b)::value * (decltype(b)::value + 1) / 2;
    // The first statement's adjoint was taken by the sweep; the others are taken here.
    double g = g0;
    if constexpr (decltype(b)::value != 0) {
      g = w[first + b];
      w[first + b] = 0;
    }
    unrolled<decltype(b)::value + 1>([&](auto a) FX_INLINE {
      w[ip[N + row + a]] += g * xv[a];
      acc[a] += g * mp[N + row + a];
    });
  });
  unrolled<N>([&](auto a) FX_INLINE { w[ip[a]] += acc[a]; });
}

void sweep_any(size_t n, double* w, uint32_t first, const uint32_t* ip, const double* mp,
               double g0) {
  double small[64];
  std::unique_ptr<double[]> big(n > 64 ? new double[n] : nullptr);
  double* acc = n > 64 ? big.get() : small;
  std::fill(acc, acc + n, 0.0);
  for (size_t b = 0, j = 0; b < n; ++b) {
    double g = g0;
    if (b != 0) {
      g = w[first + b];
      w[first + b] = 0;
    }
    for (size_t a = 0; a <= b; ++a, ++j) {
      w[ip[n + j]] += g * mp[a];
      acc[a] += g * mp[n + j];
    }
  }
  for (size_t a = 0; a < n; ++a) w[ip[a]] += acc[a];
}

// record_fixed<n> and sweep_fixed<n> by n - 1: one indirect call instead of a chain of compares.
template <size_t... N>
constexpr auto fixed_records(std::index_sequence<N...>) {
  return std::array{&record_fixed<N + 1>...};
}
template <size_t... N>
constexpr auto fixed_sweeps(std::index_sequence<N...>) {
  return std::array{&sweep_fixed<N + 1>...};
}
constexpr auto kFixedRecords = fixed_records(std::make_index_sequence<kUnrolledMax>());
constexpr auto kFixedSweeps = fixed_sweeps(std::make_index_sequence<kUnrolledMax>());

}  // namespace

void record_lower_triangular_product(const Real* packed, const Real* x, Real* y, size_t n) {
  ScalarTape* tape = active_scalar_tape;
  // Every row holds x[0], so when x[0] is recorded every row is a statement. Otherwise (no
  // recording, or a constant x[0]) some rows may be constants: a dot product per row.
  if (!tape || n == 0 || x[0].index() == 0) [[unlikely]] {
    check_reals(packed, n * (n + 1) / 2);  // first, so that y is untouched when one throws
    check_reals(x, n);
    for (size_t b = 0; b < n; ++b) y[b] = record_dot(packed + b * (b + 1) / 2, x, b + 1);
    return;
  }
  if (n <= kUnrolledMax) kFixedRecords[n - 1](tape, packed, x, y, n);
  else record_any(tape, packed, x, y, n);
}

void sweep_lower_triangular_block(double* w, uint32_t first, const uint32_t* ip, const double* mp,
                                  double g0) {
  const size_t n = size_t(mp[0]);
  if (n <= kUnrolledMax) kFixedSweeps[n - 1](w, first, ip + 1, mp + 1, g0);
  else sweep_any(n, w, first, ip + 1, mp + 1, g0);
}

}  // namespace fx::ad
