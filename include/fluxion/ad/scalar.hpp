// Reverse-mode AD for scalar C++ code: fx::Real is a double that records the operations it takes
// part in on a per-thread tape, Adept's design: an expression such as `s += a * b` or
// `exp(x - m)` is ONE statement on the tape, with one (operand index, partial) pair per operand.
//
//   auto f = [](auto x) { decltype(x) s = 0; for (int i = 0; i < 10; ++i) s += sin(x * i); return s; };
//   double df = fx::gradient(f, 1.0);                           // generic code instantiated with Real
//   auto norm2 = [](const auto& v) { return v[0] * v[0] + v[1] * v[1] + v[2] * v[2]; };
//   std::vector<double> g = fx::gradient(norm2, std::vector<double>{1, 2, 3});   // (2, 4, 6)
//
//   fx::ad::ScalarRecording rec;                                // or by hand
//   fx::Real x = rec.variable(2.0), y = rec.variable(3.0);
//   fx::Real z = x * y + sin(x);                                // one statement, three operands
//   double dzdx = rec.adjoints(z)[x.index()];                   // y + cos(x)
//
// Generic functions (templates or `auto` lambdas) written for double work unchanged: every
// operation on Reals returns a Real (so `auto`, templates deducing T from an argument,
// std::max(a, b * c) and std::complex<Real> behave as with double), comparisons look at values,
// and the <cmath> functions below are found by argument-dependent lookup (floor, ceil, round,
// trunc and fmod with their derivative 0 or 1 between the jumps). Values that never touch the
// argument are constants and record nothing. An operation on a temporary extends the
// temporary's statement instead of adding one (ad::Record), so `s += a * b` is one statement.
// Real copies like double, but is not trivially copyable: a copy drops the mark that lets an
// operation take over its statement.
#pragma once
#include <cmath>
#include <concepts>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/core/error.hpp"
#include "fluxion/core/leaves.hpp"
#include "fluxion/ops/elementwise_defs.hpp"

namespace fx {

class Real;

namespace ad {

// The tape of one recording. Statement k (k >= 1 is also the index of the value it made) owns
// operands [end[k-1], end[k]) of the operation stack: operand indices and partials in separate
// arrays (12 bytes an operand, 4 a statement). An independent variable is a statement without
// operands. Index 0 is the sink: a constant Real operand of an expression writes there, so the
// number of operands of an expression is known at compile time and recording has no branches.
// Members are public because fx::Real's inline recording writes them directly.
//
// A statement whose first operand index is kLowerTriangularBlock is a block: the first of n
// consecutive statements (y = L x, fx::lower_triangular_product) whose other n - 1 have no
// operands of their own. Its operands hold n, then x's indices and values, then L's by rows,
// each element once; the sweep runs the block's reverse step (sweep_lower_triangular_block) on
// reaching its first statement, when every row's adjoint is complete.
inline constexpr uint32_t kLowerTriangularBlock = 0xFFFFFFFEu;  // above every tape index

struct ScalarTape {
  ScalarTape();
  void clear();
  // Room for one more statement with `ops` >= 1 operands. One test: the tape keeps more room
  // for statements than for operands (stmt_cap_ - n_ > ops_cap_ - ops_n_), so a statement whose
  // operands fit fits too, and recording one (1 statement, >= 1 operand) keeps that so.
  void reserve(size_t ops) {
    if (ops_n_ + ops > ops_cap_) [[unlikely]]
      grow(ops);
  }
  uint32_t variable() {  // a statement without operands: the one that can use up statement room
    if (stmt_cap_ - n_ <= ops_cap_ - ops_n_ + 1) [[unlikely]]
      grow(0);
    end_[++n_] = uint32_t(ops_n_);
    if (!vars_.empty() && vars_.back().end == n_) ++vars_.back().end;  // right after the last
    else vars_.push_back({uint32_t(n_), uint32_t(n_ + 1)});
    return uint32_t(n_);
  }
  uint32_t variables(size_t count);   // `count` variables at once; returns the first index
  size_t size() const { return n_; }  // statements (the largest index)
  size_t operations() const { return ops_n_; }  // (index, partial) pairs
  // Adjoints of every variable (and of `out`) given the seed adjoint of `out`; the vector is
  // indexed by tape index. Adjoints of intermediate statements are not kept: the sweep zeroes
  // them as it goes, which leaves the buffer clean for the next sweep without a memset over it.
  // The buffer belongs to the tape (reused, so large tapes do not page-fault anew).
  const std::vector<double>& adjoints(uint32_t out, double seed = 1.0);

  // Pieces of a sweep, for preaccumulation (preaccumulate.hpp). clean_adjoints() sizes adj_ to
  // the tape with every entry zero; sweep() then adds statement `out`'s contribution (seed) to
  // everything statements (stop, out] depend on, leaving those statements' own adjoints zero and
  // the sums in entries <= stop; truncate() drops every statement after `statements`.
  void clean_adjoints();
  void sweep(uint32_t out, uint32_t stop, double seed);
  void truncate(size_t statements, size_t operands) {
    n_ = statements;
    ops_n_ = operands;
    if (stmt_cap_ - n_ <= ops_cap_ - ops_n_) [[unlikely]]
      grow(0);
  }

  // Room for `ops` more operands and `statements` more statements than reserve() keeps.
  [[gnu::noinline]] void grow(size_t ops, size_t statements = 0);  // off the hot path
  void zero_variable_adjoints();

  uint32_t* idx_ = nullptr;  // operation stack: operand index
  double* mul_ = nullptr;    // operation stack: partial
  uint32_t* end_ = nullptr;  // statement stack: end of each statement's operands
  // size_t, not uint32_t: the operand-index stores (uint32_t) then cannot alias the counters, so
  // the compiler keeps them in registers across a statement instead of reloading them.
  size_t n_ = 0, ops_n_ = 0, stmt_cap_ = 0, ops_cap_ = 0;
  std::unique_ptr<uint32_t[]> idx_store_, end_store_;
  std::unique_ptr<double[]> mul_store_;
  // Variables, as runs of consecutive indices [first, end): the only adjoints a sweep leaves
  // behind. A vector argument's variables are one run.
  struct VariableRun {
    uint32_t first, end;
  };
  std::vector<VariableRun> vars_;
  std::vector<double> adj_;
  bool swept_ = false;    // adj_ holds variable adjoints of a sweep
  bool summing_ = false;  // a preaccumulated sum is running (preaccumulate.hpp)
};

// The reverse step of a block (scalar_triangular.cpp): g0 is the adjoint of its first statement
// `first` (already taken out of w), ip and mp its operands.
void sweep_lower_triangular_block(double* w, uint32_t first, const uint32_t* ip, const double* mp,
                                  double g0);

// The tape of the innermost scalar gradient running on this thread (null when none), and its id.
// constinit: no thread-local initialisation check on every operation.
extern thread_local constinit ScalarTape* active_scalar_tape;
// The ids of the active recording, packed: the low half names the recording whose Reals are being
// made (0: none); the high half is the same id, except inside a term of fx::preaccumulated_sum
// (preaccumulate.hpp): there the term's Reals get an id of their own (its statements are dropped
// when the term ends, so a Real that escapes a term must not be used), and the high half keeps
// the id of the recording's Reals made before the sum, which the term may use. One 64-bit
// variable of a type no tape field has (unsigned long long, not size_t): one load per
// expression, as no store of the tape can alias it.
extern thread_local constinit unsigned long long active_scalar_ids;
inline uint32_t active_scalar_tape_id() { return uint32_t(active_scalar_ids); }
inline uint32_t active_scalar_base_id() { return uint32_t(active_scalar_ids >> 32); }
inline void set_active_scalar_ids(uint32_t id, uint32_t base) {
  active_scalar_ids = (unsigned long long)id | (unsigned long long)base << 32;
}
// Out of line and cold, so the message-building code does not keep Real's operators from
// inlining.
[[noreturn, gnu::cold, gnu::noinline]] void scalar_tape_mismatch();

class ScalarRecording;
struct Record;

// fx::Real, or a number: what Real arithmetic accepts.
template <class T>
concept RealLike = std::same_as<std::remove_cvref_t<T>, Real>;
template <class T>
concept RealOperand = RealLike<T> || std::is_arithmetic_v<std::remove_cvref_t<T>>;
template <class A, class B>
concept RealPair = RealOperand<A> && RealOperand<B> &&(RealLike<A> || RealLike<B>);

// A Real's tape word: the recording's id (31 bits) and, in the top bit, kFresh: the Real was made
// by an operation and has not been copied since (see Record).
inline constexpr uint32_t kFresh = 0x80000000u, kTapeIdMask = 0x7FFFFFFFu;
// The tape id a Real gets when its statement was taken over by a later operation (see Record):
// no recording has it, so any further use of that Real is caught as a foreign one.
inline constexpr uint32_t kConsumedTapeId = 0x7FFFFFFFu;

template <class X>
constexpr double value_of(const X& x) {
  if constexpr (std::is_arithmetic_v<X>) return double(x);
  else return x.value();
}

}  // namespace ad

class Real {
 public:
  Real() = default;
  Real(double v) : v_(v) {}  // NOLINT: constants convert implicitly, as doubles do
  // The value of tape statement `index` of the active recording, just made (fresh: see
  // ad::Record); what range recordings such as fx::squared_norm return.
  Real(double v, uint32_t index)
      : v_(v),
        word_(index ? uint64_t(ad::active_scalar_tape_id() | ad::kFresh) << 32 | index : 0) {}
  // A copy is never fresh: its statement may be shared with the original (see ad::Record).
  Real(const Real& o) { copy_from(o); }
  Real& operator=(const Real& o) {
    copy_from(o);
    return *this;
  }

  double value() const { return v_; }
  uint32_t index() const { return uint32_t(word_); }
  // The recording index() belongs to (0: constant).
  uint32_t tape_id() const { return tape_word() & ad::kTapeIdMask; }
  // Both in one 64-bit word (the tape word in the high half, its top bit kFresh): one load in
  // loops over many Reals.
  uint64_t index_and_tape() const { return word_; }
  explicit operator double() const { return v_; }

  template <class E>
  requires ad::RealOperand<E> Real& operator+=(E&& o);
  template <class E>
  requires ad::RealOperand<E> Real& operator-=(E&& o);
  template <class E>
  requires ad::RealOperand<E> Real& operator*=(E&& o);
  template <class E>
  requires ad::RealOperand<E> Real& operator/=(E&& o);

  void check_same_tape() const {
    if (tape_id() != ad::active_scalar_tape_id() && tape_id() != ad::active_scalar_base_id())
        [[unlikely]]
      ad::scalar_tape_mismatch();
  }

 private:
  friend class ad::ScalarRecording;  // makes variables in bulk
  friend struct ad::Record;          // records operations
  Real(double v, uint32_t index, uint32_t tape) : v_(v), word_(uint64_t(tape) << 32 | index) {}
  uint32_t tape_word() const { return uint32_t(word_ >> 32); }  // tape id | kFresh
  void set_tape_word(uint32_t tape) { word_ = uint32_t(word_) | uint64_t(tape) << 32; }
  // Two 8-byte stores, as a trivial copy makes: written as three fields (8 + 4 + 4 bytes), or
  // as one 16-byte vector through the stack, a copied Real read soon after by the range
  // recordings' 32-byte loads stalled on store forwarding (GMM's gradient ran 2-3x slower).
  void copy_from(const Real& o) {
    v_ = o.v_;
    word_ = o.word_ & ~(uint64_t(ad::kFresh) << 32);
  }

  double v_ = 0;
  // The tape index (low half; 0: a constant) and the tape word (high half: the id of the
  // recording that owns the index, and kFresh), one 64-bit word.
  uint64_t word_ = 0;
};

namespace ad {

// 1 when a value made under recording id `t` may not take part in an operation under `ids` (as
// in active_scalar_ids): only the same recording, or (inside a term of a preaccumulated sum) the
// recording the sum runs on, may.
inline uint32_t foreign_id(uint32_t t, unsigned long long ids) {
  return uint32_t(t != uint32_t(ids)) & uint32_t(t != uint32_t(ids >> 32));
}
// The same for a Real operand; constants (id 0) join anything.
inline uint32_t foreign(const Real& x, unsigned long long ids) {
  return foreign_id(x.tape_id(), ids) & uint32_t(x.tape_id() != 0);
}

// Every operation on Reals returns a Real, recorded at once as one statement with an
// (operand index, partial) pair per recorded operand, so Real is a number type like double:
// `auto`, templates deducing T, std::max(a, b * c) and std::complex<Real> all see one type.
//
// Statement folding. When an operand is the fresh result of an operation (an rvalue Real whose
// tape word has kFresh: made by an operation and never copied, as in `s += a * b` or
// `exp(x - m)`) and its statement is still the tape's last, the operation extends that
// statement instead of adding one: the temporary's partials are scaled by its own partial and
// the other operand is appended (two such temporaries, the last two statements, become one).
// `exp(x - m)` is one statement with operands x and m, `s + a * b` one with s, a, b: the tape
// Adept's expression templates would make, with no expression types. A copy is never fresh
// (getters returning by value, as std::complex<Real>::real() does, hand out copies of stored
// Reals whose statements must stay as they are), nor is a Real named by the program unless it
// was initialised directly by an operation and is then passed with std::move: that one is
// marked consumed (tape id kConsumedTapeId) once folded, so reading it again throws instead of
// using a statement that now means something else.
#define FX_ALWAYS_INLINE [[gnu::always_inline]] inline
struct Record {
  // y = f(a), a new statement.
  FX_ALWAYS_INLINE static Real one(const Real& a, double v, double d) {
    const unsigned long long ids = active_scalar_ids;
    if (foreign(a, ids)) [[unlikely]]
      scalar_tape_mismatch();
    if (!a.index()) return Real(v);
    ScalarTape* t = active_scalar_tape;
    t->reserve(1);
    const size_t o = t->ops_n_, k = t->n_ + 1;
    t->idx_[o] = a.index();
    t->mul_[o] = d;
    t->ops_n_ = o + 1;
    t->n_ = k;
    t->end_[k] = uint32_t(o + 1);
    return Real(v, uint32_t(k), uint32_t(ids) | kFresh);
  }
  FX_ALWAYS_INLINE static Real one(Real&& a, double v, double d) {
    const unsigned long long ids = active_scalar_ids;
    if (!extendable(a, ids)) return one(static_cast<const Real&>(a), v, d);
    scale(a.index(), d);
    return take_over(a, v);
  }
  // y = f(a, b), a new statement (a constant operand's slot writes the sink, index 0).
  FX_ALWAYS_INLINE static Real two(const Real& a, const Real& b, double v, double da, double db) {
    const unsigned long long ids = active_scalar_ids;
    if (foreign(a, ids) | foreign(b, ids)) [[unlikely]]
      scalar_tape_mismatch();
    if (!(a.index() | b.index())) return Real(v);
    ScalarTape* t = active_scalar_tape;
    t->reserve(2);
    const size_t o = t->ops_n_, k = t->n_ + 1;
    t->idx_[o] = a.index();
    t->mul_[o] = da;
    t->idx_[o + 1] = b.index();
    t->mul_[o + 1] = db;
    t->ops_n_ = o + 2;
    t->n_ = k;
    t->end_[k] = uint32_t(o + 2);
    return Real(v, uint32_t(k), uint32_t(ids) | kFresh);
  }
  template <class A, class B>
  FX_ALWAYS_INLINE static Real two(A&& a, B&& b, double v, double da, double db) {
    const unsigned long long ids = active_scalar_ids;
    // Only a non-const rvalue (a temporary) may be taken over.
    constexpr bool temp_a =
        !std::is_lvalue_reference_v<A> && !std::is_const_v<std::remove_reference_t<A>>;
    constexpr bool temp_b =
        !std::is_lvalue_reference_v<B> && !std::is_const_v<std::remove_reference_t<B>>;
    if constexpr (temp_a && temp_b) {
      // Two temporaries that are the tape's last two statements (`x * y + sin(x)`): their
      // operands are adjacent, so they become one statement.
      if (a.index() + 1 == b.index() && merge(a, b, da, db, ids)) return take_over(a, v, b);
      if (b.index() + 1 == a.index() && merge(b, a, db, da, ids)) return take_over(b, v, a);
    }
    if constexpr (temp_a) {
      if (extendable(a, ids) && b.index() != a.index()) {
        scale(a.index(), da);
        append(b, db, ids);
        return take_over(a, v);
      }
    }
    if constexpr (temp_b) {
      if (extendable(b, ids) && a.index() != b.index()) {
        scale(b.index(), db);
        append(a, da, ids);
        return take_over(b, v);
      }
    }
    return two(static_cast<const Real&>(a), static_cast<const Real&>(b), v, da, db);
  }

 private:
  // Whether a's statement may be extended: a's recording is the active one, and a's statement is
  // the tape's last, made by an operation (not a variable, not a block of
  // lower_triangular_product's rows) with at most kMaxFoldedOperands operands: scaling a long
  // statement (a squared_norm's) costs more than the statement it saves.
  static constexpr uint32_t kMaxFoldedOperands = 4;
  FX_ALWAYS_INLINE static bool extendable(const Real& a, unsigned long long ids) {
    if (a.index() == 0 || a.tape_word() != (uint32_t(ids) | kFresh)) return false;
    const ScalarTape* t = active_scalar_tape;
    if (a.index() != t->n_) return false;
    const uint32_t lo = t->end_[a.index() - 1], n = t->end_[a.index()] - lo;
    return n - 1 < kMaxFoldedOperands && t->idx_[lo] != kLowerTriangularBlock;
  }
  // Temporaries a and b (b made right after a, the tape's last), both extendable, b's
  // statement not reading a's: a's statement takes b's operands, each statement's partials
  // scaled by its partial (da, db).
  static bool merge(const Real& a, const Real& b, double da, double db, unsigned long long ids) {
    if (!extendable(b, ids) || a.index() + 1 != b.index() || a.tape_word() != b.tape_word())
      return false;
    ScalarTape* t = active_scalar_tape;
    const uint32_t k = a.index(), lo = t->end_[k - 1], mid = t->end_[k], hi = t->end_[k + 1];
    if (mid - lo - 1 >= kMaxFoldedOperands || t->idx_[lo] == kLowerTriangularBlock) return false;
    for (uint32_t j = mid; j < hi; ++j)
      if (t->idx_[j] == k) return false;
    if (da != 1)
      for (uint32_t j = lo; j < mid; ++j) t->mul_[j] *= da;
    if (db != 1)
      for (uint32_t j = mid; j < hi; ++j) t->mul_[j] *= db;
    t->end_[k] = hi;
    t->n_ = k;
    return true;
  }
  FX_ALWAYS_INLINE static void scale(uint32_t k, double d) {
    if (d == 1) return;
    ScalarTape* t = active_scalar_tape;
    for (uint32_t j = t->end_[k - 1], e = t->end_[k]; j < e; ++j) t->mul_[j] *= d;
  }
  // Adds operand b (partial d) to the last statement.
  FX_ALWAYS_INLINE static void append(const Real& b, double d, unsigned long long ids) {
    if (foreign(b, ids)) [[unlikely]]
      scalar_tape_mismatch();
    if (!b.index()) return;
    ScalarTape* t = active_scalar_tape;
    t->reserve(1);  // keeps reserve()'s invariant: one more operand and no more statements
    const size_t o = t->ops_n_;
    t->idx_[o] = b.index();
    t->mul_[o] = d;
    t->ops_n_ = o + 1;
    t->end_[t->n_] = uint32_t(o + 1);
  }
  FX_ALWAYS_INLINE static Real take_over(Real& a, double v) {
    Real y(v, a.index(), a.tape_word());  // fresh, as a is
    a.set_tape_word(kConsumedTapeId);
    return y;
  }
  static Real take_over(Real& a, double v, Real& b) {
    b.set_tape_word(kConsumedTapeId);
    return take_over(a, v);
  }
};

}  // namespace ad

#undef FX_ALWAYS_INLINE

// ---- arithmetic: Real with Real or number. A number operand is a constant: it adds no slot.

template <class A, class B>
  requires ad::RealPair<A, B>
inline Real operator+(A&& a, B&& b) {
  if constexpr (!ad::RealLike<B>)
    return ad::Record::one(std::forward<A>(a), a.value() + double(b), 1);
  else if constexpr (!ad::RealLike<A>)
    return ad::Record::one(std::forward<B>(b), double(a) + b.value(), 1);
  else return ad::Record::two(std::forward<A>(a), std::forward<B>(b), a.value() + b.value(), 1, 1);
}
template <class A, class B>
  requires ad::RealPair<A, B>
inline Real operator-(A&& a, B&& b) {
  if constexpr (!ad::RealLike<B>)
    return ad::Record::one(std::forward<A>(a), a.value() - double(b), 1);
  else if constexpr (!ad::RealLike<A>)
    return ad::Record::one(std::forward<B>(b), double(a) - b.value(), -1);
  else return ad::Record::two(std::forward<A>(a), std::forward<B>(b), a.value() - b.value(), 1, -1);
}
template <class A, class B>
  requires ad::RealPair<A, B>
inline Real operator*(A&& a, B&& b) {
  if constexpr (!ad::RealLike<B>) {
    return ad::Record::one(std::forward<A>(a), a.value() * double(b), double(b));
  } else if constexpr (!ad::RealLike<A>) {
    return ad::Record::one(std::forward<B>(b), double(a) * b.value(), double(a));
  } else {
    const double av = a.value(), bv = b.value();
    return ad::Record::two(std::forward<A>(a), std::forward<B>(b), av * bv, bv, av);
  }
}
template <class A, class B>
  requires ad::RealPair<A, B>
inline Real operator/(A&& a, B&& b) {
  if constexpr (!ad::RealLike<B>) {
    return ad::Record::one(std::forward<A>(a), a.value() / double(b), 1 / double(b));
  } else if constexpr (!ad::RealLike<A>) {
    const double bv = b.value(), y = double(a) / bv;
    return ad::Record::one(std::forward<B>(b), y, -y / bv);
  } else {
    const double bv = b.value(), y = a.value() / bv;
    return ad::Record::two(std::forward<A>(a), std::forward<B>(b), y, 1 / bv, -y / bv);
  }
}
template <ad::RealLike A>
inline Real operator-(A&& a) {
  return ad::Record::one(std::forward<A>(a), -a.value(), -1);
}
template <ad::RealLike A>
inline Real operator+(A&& a) {
  return a;
}

template <class E>
  requires ad::RealOperand<E>
inline Real& Real::operator+=(E&& o) { return *this = *this + std::forward<E>(o); }
template <class E>
  requires ad::RealOperand<E>
inline Real& Real::operator-=(E&& o) { return *this = *this - std::forward<E>(o); }
template <class E>
  requires ad::RealOperand<E>
inline Real& Real::operator*=(E&& o) { return *this = *this * std::forward<E>(o); }
template <class E>
  requires ad::RealOperand<E>
inline Real& Real::operator/=(E&& o) { return *this = *this / std::forward<E>(o); }

// Comparisons look at values only, as branches in double code do.
template <class A, class B>
  requires ad::RealPair<A, B>
inline bool operator==(const A& a, const B& b) { return ad::value_of(a) == ad::value_of(b); }
template <class A, class B>
  requires ad::RealPair<A, B>
inline auto operator<=>(const A& a, const B& b) { return ad::value_of(a) <=> ad::value_of(b); }

inline double value(const Real& x) { return x.value(); }
inline double value(double x) { return x; }

// ---- <cmath> for Real: each is the value and the derivative, folded into the statement of a
// temporary argument. FX_REAL_UNARY(name, body) defines name(x) from v = x's value; the body
// returns {f(v), f'(v)}.
#define FX_REAL_UNARY(NAME, ...)                                          \
  template <ad::RealLike X>                                               \
  inline Real NAME(X&& x) {                                               \
    const double v = x.value();                                           \
    const auto [y, d] = [v]() -> std::pair<double, double> __VA_ARGS__(); \
    return ad::Record::one(std::forward<X>(x), y, d);                     \
  }
FX_REAL_UNARY(cbrt, {
  const double c = std::cbrt(v);
  return {c, 1 / (3 * c * c)};
})
// |x| has derivative sign(x), taken as 0 at 0.
FX_REAL_UNARY(abs, { return {std::abs(v), v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0}; })
FX_REAL_UNARY(fabs, { return {std::abs(v), v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0}; })
// Piecewise constant: derivative 0 where it is defined (everywhere but the jumps).
FX_REAL_UNARY(floor, { return {std::floor(v), 0.0}; })
FX_REAL_UNARY(ceil, { return {std::ceil(v), 0.0}; })
FX_REAL_UNARY(round, { return {std::round(v), 0.0}; })
FX_REAL_UNARY(trunc, { return {std::trunc(v), 0.0}; })
FX_REAL_UNARY(nearbyint, { return {std::nearbyint(v), 0.0}; })
#undef FX_REAL_UNARY

// The math functions of fluxion/ops/elementwise_defs.hpp: value and derivative from the table,
// computed in double.
#define FX_REAL_TABLE_UNARY(NAME)                                                     \
  template <ad::RealLike X>                                                           \
  inline Real NAME(X&& x) {                                                           \
    const double v = x.value(), y = elem::NAME##_op::value(v);                        \
    return ad::Record::one(std::forward<X>(x), y, elem::NAME##_op::derivative(v, y)); \
  }
FX_ELEMENTWISE_UNARY(FX_REAL_TABLE_UNARY)
#undef FX_REAL_TABLE_UNARY

// A function of two arguments from its value and partials, for Real-Real, Real-number and
// number-Real calls.
template <class A, class B>
inline Real binary_function(A&& a, B&& b, double y, double da, double db) {
  if constexpr (!ad::RealLike<B>) return ad::Record::one(std::forward<A>(a), y, da);
  else if constexpr (!ad::RealLike<A>) return ad::Record::one(std::forward<B>(b), y, db);
  else return ad::Record::two(std::forward<A>(a), std::forward<B>(b), y, da, db);
}
// pow: the power term is 0 when the exponent is 0, the exponential term 0 when the base <= 0.
template <class A, class B>
  requires ad::RealPair<A, B>
inline Real pow(A&& a, B&& b) {
  const double av = ad::value_of(a), bv = ad::value_of(b), y = std::pow(av, bv);
  const double da = bv == 0 ? 0 : bv * std::pow(av, bv - 1);
  const double db = av > 0 ? y * std::log(av) : 0;
  return binary_function(std::forward<A>(a), std::forward<B>(b), y, da, db);
}
// fmod(a, b) = a - trunc(a / b) b: partials 1 and -trunc(a / b) between the jumps.
template <class A, class B>
  requires ad::RealPair<A, B>
inline Real fmod(A&& a, B&& b) {
  const double av = ad::value_of(a), bv = ad::value_of(b);
  return binary_function(std::forward<A>(a), std::forward<B>(b), std::fmod(av, bv), 1.0,
                         -std::trunc(av / bv));
}
// atan2, hypot, copysign from the table (fluxion/ops/elementwise_defs.hpp).
#define FX_REAL_TABLE_BINARY(NAME)                                                       \
  template <class A, class B>                                                            \
    requires ad::RealPair<A, B>                                                          \
  inline Real NAME(A&& a, B&& b) {                                                       \
    using Op = elem::NAME##_op;                                                          \
    const double av = ad::value_of(a), bv = ad::value_of(b), y = Op::value(av, bv);      \
    return binary_function(std::forward<A>(a), std::forward<B>(b), y, Op::da(av, bv, y), \
                           elem::partial_b<Op>(av, bv, y));                              \
  }
FX_ELEMENTWISE_BINARY(FX_REAL_TABLE_BINARY)
#undef FX_REAL_TABLE_BINARY
// max/min choose by value (a on ties), as std::max/std::min do. The Real-Real overloads are
// not templates, so `using std::max; max(a, b)` picks them.
inline Real max(const Real& a, const Real& b) { return a.value() >= b.value() ? a : b; }
inline Real min(const Real& a, const Real& b) { return a.value() <= b.value() ? a : b; }
template <class A, class B>
  requires ad::RealPair<A, B>
inline Real max(const A& a, const B& b) {
  return ad::value_of(a) >= ad::value_of(b) ? Real(a) : Real(b);
}
template <class A, class B>
  requires ad::RealPair<A, B>
inline Real min(const A& a, const B& b) {
  return ad::value_of(a) <= ad::value_of(b) ? Real(a) : Real(b);
}
template <class A, class B>
  requires ad::RealPair<A, B>
inline Real fmax(const A& a, const B& b) { return max(a, b); }
template <class A, class B>
  requires ad::RealPair<A, B>
inline Real fmin(const A& a, const B& b) { return min(a, b); }
inline bool isfinite(const Real& x) { return std::isfinite(x.value()); }
inline bool isnan(const Real& x) { return std::isnan(x.value()); }
inline bool isinf(const Real& x) { return std::isinf(x.value()); }
inline bool signbit(const Real& x) { return std::signbit(x.value()); }

std::ostream& operator<<(std::ostream& os, const Real& x);

// A leaf of FX_FIELDS structures (fluxion/core/leaves.hpp), as double is.
template <>
struct is_number_type<Real> : std::true_type {};

namespace ad {

// Buffers for the Reals of vector arguments (fx::gradient, reverse.hpp), kept per thread across
// gradient calls as the tapes are: a loop of gradients over a large vector reuses the same pages
// instead of faulting fresh ones in (a 10^6-element vector of Reals is 16 MB). take_ returns a
// buffer given back earlier (any size and contents: resize and overwrite it), or an empty one.
std::vector<Real> take_real_buffer();
void give_real_buffer(std::vector<Real>&& buffer);

// Starts a scalar recording on this thread and ends it on destruction (nesting restores the outer).
class ScalarRecording {
 public:
  ScalarRecording();
  ~ScalarRecording();
  ScalarRecording(const ScalarRecording&) = delete;
  ScalarRecording& operator=(const ScalarRecording&) = delete;
  Real variable(double v) { return Real(v, tape_->variable()); }
  // n variables at once, out[i] with the value x[i]: what fx::gradient does for a vector
  // argument, without the per-variable checks of variable().
  void variables(const double* x, size_t n, Real* out);
  // Adjoints (indexed by Real::index()) of this recording's variables for the seed 1 at y. Each
  // call is a fresh sweep; the reference stays valid until the next call or recording.
  const std::vector<double>& adjoints(const Real& y, double seed = 1.0) const {
    if (y.index()) y.check_same_tape();
    return tape_->adjoints(y.index(), seed);
  }
  const ScalarTape& tape() const { return *tape_; }

 private:
  ScalarTape* tape_;
  ScalarTape* outer_;
  uint32_t outer_id_, outer_base_id_;
};

}  // namespace ad
}  // namespace fx
