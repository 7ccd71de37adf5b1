// What the range recordings of fx::Real share (scalar_reduce.cpp, scalar_triangular.cpp): the
// tape-id check of a whole range, two Reals at a time as vectors, and FX_SHORT_LOOPS.
//
// Every Real operand is checked against the recording, as in Real expressions (scalar.hpp's
// foreign()): its tape id must be 0 (a constant), the recording's id, or the base id of a
// preaccumulated sum. Per element that is three compares; a range instead ORs and ANDs its
// elements' index_and_tape() words as it goes (one instruction each), and when the tape ids'
// OR equals their AND every element has that one id, checked once. Only a range mixing ids
// (say constants and variables) takes the exact pass over its elements.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "fluxion/ad/scalar.hpp"

namespace fx::ad {

struct RangeIds {
  uint64_t any = 0;             // OR: the low half is nonzero when some element is recorded
  uint64_t all = ~uint64_t(0);  // AND
  void add(uint64_t index_and_tape) {
    any |= index_and_tape;
    all &= index_and_tape;
  }
};

inline bool valid_id(uint32_t t, unsigned long long ids) {
  return t == 0 || t == uint32_t(ids) || t == uint32_t(ids >> 32);
}

// The exact check of a range under the active ids, off the fast path (scalar_reduce.cpp).
[[gnu::noinline, gnu::cold]] void check_reals(const Real* v, size_t n);

// Throws unless every Real of v[0, n) may join an expression under `ids` (the active ones).
inline void check_range(const Real* v, size_t n, const RangeIds& r, unsigned long long ids) {
  // Masked: elements that differ only in kFresh have one id.
  const uint32_t t_any = uint32_t(r.any >> 32) & kTapeIdMask;
  const uint32_t t_all = uint32_t(r.all >> 32) & kTapeIdMask;
  if (t_any == t_all) {
    if (!valid_id(t_any, ids)) [[unlikely]]
      scalar_tape_mismatch();
    return;
  }
  check_reals(v, n);
}

// Two Reals side by side are four 64-bit lanes: value, index | tape << 32, value, index | tape
// << 32 (Real's layout). Loops over ranges take them two at a time as GCC/Clang vectors, not
// intrinsics: any target compiles them.
using F64x4 = double __attribute__((vector_size(32)));
using U64x4 = uint64_t __attribute__((vector_size(32)));
using U32x8 = uint32_t __attribute__((vector_size(32)));
using U32x4 = uint32_t __attribute__((vector_size(16)));
using F64x2 = double __attribute__((vector_size(16)));
using U64x2 = uint64_t __attribute__((vector_size(16)));
using U32x2 = uint32_t __attribute__((vector_size(8)));
// Read as raw words (never written so: Real's copy clears kFresh).
static_assert(sizeof(Real) == 16 && alignof(Real) == 8 && std::is_standard_layout_v<Real>);

// Two Reals at p: their values and their index | tape << 32 words, from one 32-byte load.
struct TwoReals {
  F64x2 values;
  U64x2 words;
};
// Reals read as raw vectors: one unaligned load each (memcpy from a Real*, a class that is not
// trivially copyable, was compiled as two 16-byte copies through the stack and a 32-byte reload
// that stalled on store forwarding).
typedef double RawF64x4 __attribute__((vector_size(32), aligned(8), may_alias));
typedef double RawF64x2 __attribute__((vector_size(16), aligned(8), may_alias));
inline F64x4 load_raw4(const Real* p) { return *reinterpret_cast<const RawF64x4*>(p); }
inline F64x2 load_raw2(const Real* p) { return *reinterpret_cast<const RawF64x2*>(p); }

inline TwoReals load_pair(const Real* p) {
  F64x4 v = load_raw4(p);
  return {__builtin_shufflevector(v, v, 0, 2), __builtin_shufflevector(U64x4(v), U64x4(v), 1, 3)};
}
// Two operands at the tape's ip, mp: the indices (low halves of `words`) and the partials.
inline void store_operands(uint32_t* ip, double* mp, U64x2 words, F64x2 partials) {
  const U32x2 index = __builtin_shufflevector(U32x4(words), U32x4(words), 0, 2);
  std::memcpy(ip, &index, sizeof index);
  std::memcpy(mp, &partials, sizeof partials);
}

// Short reductions (a row of a small matrix): one scalar pass with everything fused costs fewer
// instructions than the compiler's vectorised passes, whose set-up and remainder loops dominate
// at these lengths.
#define FX_SHORT_LOOPS __attribute__((optimize("no-tree-loop-vectorize")))

}  // namespace fx::ad
