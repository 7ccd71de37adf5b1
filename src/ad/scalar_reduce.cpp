// Range reductions of fx::Real recorded as one statement each (scalar_reduce.hpp).
#include "fluxion/ad/scalar_reduce.hpp"

#include <cstdint>
#include <type_traits>

namespace fx::ad {
namespace {

// Every Real operand is checked against the recording, as in Real expressions (scalar.hpp's
// foreign()): its tape id must be 0 (a constant), the recording's id, or the base id of a
// preaccumulated sum. Per element that is three compares; a range instead ORs and ANDs its
// elements' index_and_tape() words as it goes (one instruction each), and when the tape ids'
// OR equals their AND every element has that one id, checked once. Only a range mixing ids
// (say constants and variables) takes the exact pass over its elements.
struct RangeIds {
  uint64_t any = 0;          // OR: the low half is nonzero when some element is recorded
  uint64_t all = ~uint64_t(0);  // AND
  void add(uint64_t index_and_tape) {
    any |= index_and_tape;
    all &= index_and_tape;
  }
};

bool valid_id(uint32_t t, unsigned long long ids) {
  return t == 0 || t == uint32_t(ids) || t == uint32_t(ids >> 32);
}

// Throws unless every Real of v[0, n) may join an expression under `ids`.
void check_range(const Real* v, size_t n, const RangeIds& r, unsigned long long ids) {
  const uint32_t t_any = uint32_t(r.any >> 32), t_all = uint32_t(r.all >> 32);
  if (t_any == t_all) {
    if (!valid_id(t_any, ids)) [[unlikely]] scalar_tape_mismatch();
    return;
  }
  for (size_t i = 0; i < n; ++i)
    if (!valid_id(v[i].tape_id(), ids)) [[unlikely]] scalar_tape_mismatch();
}

// Records a statement of `ops` operands. `fill(write, ip, mp)` computes the value and, with
// `write` (std::true_type), stores the operand indices and partials at ip, mp (the tape's
// end); `check()` then validates the operands and returns whether any is recorded. Nothing is
// kept when every operand is a constant (what was written past the tape's end is ignored).
//
// The reductions are short (a row of a small matrix, tens of elements): one scalar pass with
// everything fused costs fewer instructions than vectorised passes, whose set-up and remainder
// loops dominate at these lengths (hence no-tree-loop-vectorize on the callers).
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
  const size_t end = tape->ops_n_ + ops, k = tape->n_ + 1;
  tape->ops_n_ = end;
  tape->n_ = k;
  tape->end_[k] = uint32_t(end);
  return Real(v, uint32_t(k));
}

#define FX_SHORT_LOOPS __attribute__((optimize("no-tree-loop-vectorize")))

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

Real record_squared_norm(const Real* v, size_t n) {
  return record_range(
      v, n, [](size_t, double x) { return x * x; }, [](size_t, double x) { return 2 * x; });
}

Real record_dot(const double* a, const Real* b, size_t n) {
  return record_range(
      b, n, [a](size_t i, double x) { return a[i] * x; }, [a](size_t i, double) { return a[i]; });
}

FX_SHORT_LOOPS Real record_dot(const Real* a, const Real* b, size_t n) {
  RangeIds ra, rb;
  auto fill = [&](auto write, uint32_t* ip, double* mp) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) {
      const double x = a[i].value(), y = b[i].value();
      const uint64_t ma = a[i].index_and_tape(), mb = b[i].index_and_tape();
      s += x * y;
      ra.add(ma);
      rb.add(mb);
      if constexpr (write) {
        ip[2 * i] = uint32_t(ma);
        ip[2 * i + 1] = uint32_t(mb);
        mp[2 * i] = y;
        mp[2 * i + 1] = x;
      }
    }
    return s;
  };
  return record(2 * n, fill, [&] {
    const unsigned long long ids = active_scalar_ids;
    check_range(a, n, ra, ids);
    check_range(b, n, rb, ids);
    return uint32_t(ra.any | rb.any) != 0;
  });
}

}  // namespace fx::ad
