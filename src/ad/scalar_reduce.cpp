// Range reductions of fx::Real recorded as one statement each (scalar_reduce.hpp).
#include "fluxion/ad/scalar_reduce.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ad/range_ids.hpp"

namespace fx::ad {
namespace {

// Commits a statement of the operands written at the tape's end, up to `end`.
Real commit(ScalarTape* tape, size_t end, double value) {
  const size_t k = tape->n_ + 1;
  tape->ops_n_ = end;
  tape->n_ = k;
  tape->end_[k] = uint32_t(end);
  return Real(value, uint32_t(k));
}

// Records a statement of `ops` operands. `fill(write, ip, mp)` computes the value and, with
// `write` (std::true_type), stores the operand indices and partials at ip, mp (the tape's
// end); `check()` then validates the operands and returns whether any is recorded. Nothing is
// kept when every operand is a constant (what was written past the tape's end is ignored).
//
// The reductions are short (FX_SHORT_LOOPS on the callers); record_dot below vectorises by
// hand, two elements per step with no remainder loop.
template <class Fill, class Check>
Real record(size_t ops, Fill fill, Check check) {
  ScalarTape* tape = active_scalar_tape;
  if (!tape) [[unlikely]] {  // no recording: every operand must be a constant
    const double v = fill(std::false_type{}, nullptr, nullptr);
    check();
    return Real(v);
  }
  tape->reserve(ops);
  const double v = fill(std::true_type{}, tape->idx_ + tape->ops_n_, tape->mul_ + tape->ops_n_);
  if (!check()) return Real(v);
  return commit(tape, tape->ops_n_ + ops, v);
}

// Σ_i term(i, v_i) over one range of Reals, recorded with the partial dterm(i, v_i) per element.
template <class Term, class Partial>
FX_SHORT_LOOPS Real record_range(const Real* v, size_t n, Term term, Partial dterm) {
  RangeIds r;
  auto fill = [&](auto write, uint32_t* ip, double* mp) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) {
      const double x = v[i].value();
      const uint64_t m = v[i].index_and_tape();
      s += term(i, x);
      r.add(m);
      if constexpr (write) ip[i] = uint32_t(m), mp[i] = dterm(i, x);
    }
    return s;
  };
  return record(n, fill, [&] {
    check_range(v, n, r, active_scalar_ids);
    return uint32_t(r.any) != 0;
  });
}

}  // namespace

Real record_sum(const Real* v, size_t n) {
  return record_range(
      v, n, [](size_t, double x) { return x; }, [](size_t, double) { return 1.0; });
}

Real record_dot(const double* a, const Real* b, size_t n) {
  return record_range(
      b, n, [a](size_t i, double x) { return a[i] * x; }, [a](size_t i, double) { return a[i]; });
}

namespace {

// A dot of two Real ranges takes them two at a time as vectors (range_ids.hpp): one shuffle
// makes the four partials (b0, a0, b1, a1 for operands a0, b0, a1, b1), another the four index
// words, whose low halves are the operand indices and which feed the id check whole (AVX2: two
// unpacks and a permute). Per element that is half the instructions of the scalar loop; on
// ADBench's GMM (bench/scalar_ad), then written with a dot product per row of a Real matrix,
// the gradient fell from 115.5M to 108.9M instructions.

void check_dot(const Real* a, const Real* b, size_t n) {
  check_reals(a, n);
  check_reals(b, n);
}

// Two Reals from 16-byte halves (the last, odd element of a range pairs with itself).
inline F64x4 pair_of(const Real* lo, const Real* hi) {
  const F64x2 l = load_raw2(lo), h = load_raw2(hi);
  return __builtin_shufflevector(l, h, 0, 1, 2, 3);
}

// The OR and the AND of a dot's index words, by lane (0 and 2: a's, 1 and 3: b's).
struct DotIds {
  U64x4 any = {0, 0, 0, 0}, all = ~U64x4{0, 0, 0, 0};
};

// Σ a_i b_i, writing the statement's operands at ip, mp (a, b interleaved; an odd range's last
// element twice, the copy past the statement's end) and folding the index words into `ids`.
[[gnu::always_inline]] inline double write_dot(const Real* a, const Real* b, size_t n, uint32_t* ip,
                                               double* mp, DotIds& ids) {
  double s = 0;
  auto put = [&](size_t i, F64x4 va, F64x4 vb) {
    const F64x4 partials = __builtin_shufflevector(vb, va, 0, 4, 2, 6);
    const U64x4 words = __builtin_shufflevector(U64x4(va), U64x4(vb), 1, 5, 3, 7);
    ids.any |= words;
    ids.all &= words;
    const U32x4 index = __builtin_shufflevector(U32x8(words), U32x8(words), 0, 2, 4, 6);
    std::memcpy(mp + 2 * i, &partials, sizeof partials);
    std::memcpy(ip + 2 * i, &index, sizeof index);
  };
  size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const F64x4 va = load_raw4(a + i), vb = load_raw4(b + i);
    s += a[i].value() * b[i].value();
    s += a[i + 1].value() * b[i + 1].value();
    put(i, va, vb);
  }
  if (i < n) {
    s += a[i].value() * b[i].value();
    put(i, pair_of(a + i, a + i), pair_of(b + i, b + i));
  }
  return s;
}

// Whether each range has one tape id (the OR and the AND of its words agree in the high
// halves) and that id may join (valid_id); when not, the exact check decides (and throws).
bool dot_ids_valid(const DotIds& d) {
  const U64x4 any = d.any | __builtin_shufflevector(d.any, d.any, 2, 3, 0, 1);
  const U64x4 all = d.all & __builtin_shufflevector(d.all, d.all, 2, 3, 0, 1);
  const unsigned long long ids = active_scalar_ids;
  return (((any[0] ^ all[0]) >> 32 | (any[1] ^ all[1]) >> 32) & kTapeIdMask) == 0 &&
         valid_id(uint32_t(any[0] >> 32) & kTapeIdMask, ids) &&
         valid_id(uint32_t(any[1] >> 32) & kTapeIdMask, ids);
}

// Whether some operand written into `d` is recorded (a nonzero index in a low half).
bool any_recorded(const DotIds& d) {
  const U64x4 any = d.any | __builtin_shufflevector(d.any, d.any, 2, 3, 0, 1);
  return uint32_t(any[0] | any[1]) != 0;
}

}  // namespace

void check_reals(const Real* v, size_t n) {
  const unsigned long long ids = active_scalar_ids;
  for (size_t i = 0; i < n; ++i)
    if (!valid_id(v[i].tape_id(), ids)) [[unlikely]]
      scalar_tape_mismatch();
}

FX_SHORT_LOOPS Real record_dot(const Real* a, const Real* b, size_t n) {
  ScalarTape* tape = active_scalar_tape;
  if (!tape) [[unlikely]] {  // no recording: every element must be a constant
    check_dot(a, b, n);
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += a[i].value() * b[i].value();
    return Real(s);
  }
  // Room for one pair more than the statement: an odd range's last element is written twice.
  tape->reserve(2 * n + 2);
  DotIds ids;
  const double s = write_dot(a, b, n, tape->idx_ + tape->ops_n_, tape->mul_ + tape->ops_n_, ids);
  if (!dot_ids_valid(ids)) [[unlikely]]
    check_dot(a, b, n);
  if (!any_recorded(ids)) return Real(s);  // every element a constant
  return commit(tape, tape->ops_n_ + 2 * n, s);
}

// Two elements at a time, as record_dot: one 32-byte load, the partials (2 v) and the indices
// in one store each.
FX_SHORT_LOOPS Real record_squared_norm(const Real* v, size_t n) {
  ScalarTape* tape = active_scalar_tape;
  if (!tape) [[unlikely]] {
    return record_range(
        v, n, [](size_t, double x) { return x * x; }, [](size_t, double x) { return 2 * x; });
  }
  tape->reserve(n + 1);
  uint32_t* ip = tape->idx_ + tape->ops_n_;
  double* mp = tape->mul_ + tape->ops_n_;
  // Even and odd elements summed apart (two independent chains of multiply-adds), then added.
  F64x2 sums = {0, 0};
  U64x2 any = {0, 0}, all = ~any;
  size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const auto [values, words] = load_pair(v + i);
    any |= words;
    all &= words;
    sums += values * values;
    store_operands(ip + i, mp + i, words, values + values);
  }
  RangeIds r{any[0] | any[1], all[0] & all[1]};
  double s = sums[0] + sums[1];
  if (i < n) {
    const double x = v[i].value();
    r.add(v[i].index_and_tape());
    s += x * x;
    mp[i] = 2 * x;
    ip[i] = v[i].index();
  }
  check_range(v, n, r, active_scalar_ids);
  if (uint32_t(r.any) == 0) return Real(s);  // every element a constant
  return commit(tape, tape->ops_n_ + n, s);
}

}  // namespace fx::ad
