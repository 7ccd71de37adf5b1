// Reverse-mode AD for scalar C++ code: fx::Real is a double that records the operations it takes
// part in on a per-thread tape, Adept's design: an expression such as `s += a * b` or
// `exp(x - m)` is ONE statement on the tape, with one (operand index, partial) pair per operand.
//
//   auto f = [](auto x) { decltype(x) s = 0; for (int i = 0; i < 10; ++i) s += sin(x * i); return s; };
//   double df = fx::gradient(f, 1.0);                           // generic code instantiated with Real
//   std::vector<double> g = fx::gradient(norm2, std::vector<double>{1, 2, 3});
//
//   fx::ad::ScalarRecording rec;                                // or by hand
//   fx::Real x = rec.variable(2.0), y = rec.variable(3.0);
//   fx::Real z = x * y + sin(x);                                // one statement, three operands
//   double dzdx = rec.adjoints(z)[x.index()];                   // y + cos(x)
//
// Generic functions (templates or `auto` lambdas) written for double work unchanged: arithmetic,
// comparisons, and the <cmath> functions below are found by argument-dependent lookup. Values
// that never touch the argument are constants and record nothing.
//
// Arithmetic on Reals returns small expression objects (fx::ad::Expr<N>, N operands) that are
// recorded when they become a Real (assignment, `T x = ...`, a return typed T). They hold their
// operands by value, so `auto t = a * b;` is safe: t keeps a's and b's values and indices at the
// time it was made, whatever happens to a and b afterwards, and every use of t is correct. The
// one thing they cannot do is stand in for the number type itself: a function template that
// deduces T from an expression argument (`template <class T> T sq(T v)` called as `sq(a - b)`)
// gets the expression type; pass `fx::Real(a - b)` or spell T there.
#pragma once
#include <cmath>
#include <concepts>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <type_traits>
#include <vector>

#include "fluxion/core/error.hpp"


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
    if (ops_n_ + ops > ops_cap_) [[unlikely]] grow(ops);
  }
  uint32_t variable() {  // a statement without operands: the one that can use up statement room
    if (stmt_cap_ - n_ <= ops_cap_ - ops_n_ + 1) [[unlikely]] grow(0);
    end_[++n_] = uint32_t(ops_n_);
    if (!vars_.empty() && vars_.back().end == n_) ++vars_.back().end;  // right after the last
    else vars_.push_back({uint32_t(n_), uint32_t(n_ + 1)});
    return uint32_t(n_);
  }
  uint32_t variables(size_t count);  // `count` variables at once; returns the first index
  size_t size() const { return n_; }                // statements (the largest index)
  size_t operations() const { return ops_n_; }      // (index, partial) pairs
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
    if (stmt_cap_ - n_ <= ops_cap_ - ops_n_) [[unlikely]] grow(0);
  }

  // Room for `ops` more operands and `statements` more statements than reserve() keeps.
  [[gnu::noinline]] void grow(size_t ops, size_t statements = 0);  // off the hot path
  void zero_variable_adjoints();

  uint32_t* idx_ = nullptr;   // operation stack: operand index
  double* mul_ = nullptr;     // operation stack: partial
  uint32_t* end_ = nullptr;   // statement stack: end of each statement's operands
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
  bool swept_ = false;          // adj_ holds variable adjoints of a sweep
  bool summing_ = false;        // a preaccumulated sum is running (preaccumulate.hpp)
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

// An unrecorded expression of N operands (see Expr below). The defaulted type parameter puts
// namespace fx among its associated namespaces, so argument-dependent lookup finds fx's
// operators and math functions for it.
template <int N, class = Real>
struct Expr;

class ScalarRecording;

template <class T>
inline constexpr bool is_expr_node_v = false;
template <int N>
inline constexpr bool is_expr_node_v<Expr<N>> = true;

// fx::Real or an unrecorded expression of Reals.
template <class T>
concept RealExpr = std::same_as<std::remove_cvref_t<T>, Real> || is_expr_node_v<std::remove_cvref_t<T>>;
// What Real arithmetic accepts: Real expressions and plain numbers.
template <class T>
concept RealOperand = RealExpr<T> || std::is_arithmetic_v<std::remove_cvref_t<T>>;
template <class A, class B>
concept RealPair = RealOperand<A> && RealOperand<B> && (RealExpr<A> || RealExpr<B>);

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
  Real(double v, uint32_t index) : v_(v), i_(index), tape_(index ? ad::active_scalar_tape_id() : 0) {}
  // Records the expression as one statement (a constant when no operand is recorded).
  template <class E>
    requires ad::is_expr_node_v<E>
  Real(const E& e);  // NOLINT: expressions become Reals implicitly, as in double code

  double value() const { return v_; }
  uint32_t index() const { return i_; }
  uint32_t tape_id() const { return tape_; }  // the recording index() belongs to (0: constant)
  // Both in one 64-bit word (tape id in the high half): one load in loops over many Reals.
  uint64_t index_and_tape() const { return uint64_t(tape_) << 32 | i_; }
  explicit operator double() const { return v_; }

  template <class E>
    requires ad::RealOperand<E>
  Real& operator+=(const E& o);
  template <class E>
    requires ad::RealOperand<E>
  Real& operator-=(const E& o);
  template <class E>
    requires ad::RealOperand<E>
  Real& operator*=(const E& o);
  template <class E>
    requires ad::RealOperand<E>
  Real& operator/=(const E& o);

  void check_same_tape() const {
    if (tape_ != ad::active_scalar_tape_id() && tape_ != ad::active_scalar_base_id()) [[unlikely]]
      ad::scalar_tape_mismatch();
  }

 private:
  friend class ad::ScalarRecording;  // makes variables in bulk
  Real(double v, uint32_t index, uint32_t tape) : v_(v), i_(index), tape_(tape) {}

  double v_ = 0;
  uint32_t i_ = 0;     // 0: a constant
  uint32_t tape_ = 0;  // id of the recording that owns index i_ (fills the padding)
};

namespace ad {

// An expression of Reals, not yet recorded: its value and, per operand, the index and partial
// derivative. The type depends only on the operand count N (not on the expression's shape), and
// a shorter expression or a number converts to a longer one (padding with constant slots), so
// `c ? x * y : exp(x)` and `c ? x * y : 0.0` have a type, as in double code. Operands are copied
// in, never referenced: `auto t = a * b;` stays valid and keeps a's and b's values at the time it
// was made.
//
// Each Real operand is checked against the recording when it joins (`bad`), and the expression
// remembers the recording's ids at the time (`ids`, as in active_scalar_ids): recording it, or
// joining it to another expression, under other ids is an error. One flag and the ids instead of
// an id per operand keep the check off the copies every node makes.
template <int N, class>
struct Expr {
  double v;
  uint32_t idx[N];
  double mul[N];
  unsigned long long ids;
  uint32_t bad;

  struct Uninit {};
  explicit Expr(Uninit) : ids(active_scalar_ids), bad(0) {}
  template <class S>
    requires std::is_arithmetic_v<S>
  Expr(S s) : v(double(s)), idx{}, mul{}, ids(active_scalar_ids), bad(0) {}  // NOLINT: a constant
  template <int M>
    requires(M < N)
  Expr(const Expr<M>& o) : v(o.v), idx{}, mul{}, ids(o.ids), bad(o.bad) {  // NOLINT: padded
    for (int k = 0; k < M; ++k) idx[k] = o.idx[k], mul[k] = o.mul[k];
  }

  double value() const { return v; }
  explicit operator double() const { return v; }
};

template <class A>
constexpr int operands_v = 1;
template <int N>
constexpr int operands_v<Expr<N>> = N;

// 1 when a value made under recording id `t` may not join an expression made under `ids` (as in
// active_scalar_ids): only the same recording, or (inside a term of a preaccumulated sum) the
// recording the sum runs on, may.
inline uint32_t foreign_id(uint32_t t, unsigned long long ids) {
  return uint32_t(t != uint32_t(ids)) & uint32_t(t != uint32_t(ids >> 32));
}
// The same for a Real operand; constants (id 0) join anything.
inline uint32_t foreign(const Real& x, unsigned long long ids) {
  return foreign_id(x.tape_id(), ids) & uint32_t(x.tape_id() != 0);
}

// One operand slot from a Real (partial m) or the slots of an expression (scaled by m).
template <int K, int N>
void put(Expr<N>& out, const Real& x, double m) {
  out.idx[K] = x.index();
  out.mul[K] = m;
  out.bad |= foreign(x, out.ids);
}
template <int K, int N, int M>
void put(Expr<N>& out, const Expr<M>& x, double m) {
  for (int k = 0; k < M; ++k) {
    out.idx[K + k] = x.idx[k];
    out.mul[K + k] = m * x.mul[k];
  }
  out.bad |= x.bad | foreign_id(uint32_t(x.ids), out.ids);
}

template <class E>
using node_t = std::remove_cvref_t<E>;

// y = f(a) with dy/da = d.
template <class A>
Expr<operands_v<node_t<A>>> unary(const A& a, double v, double d) {
  Expr<operands_v<node_t<A>>> r{typename Expr<operands_v<node_t<A>>>::Uninit{}};
  r.v = v;
  put<0>(r, a, d);
  return r;
}
// y = f(a, b) with partials da, db.
template <class A, class B>
Expr<operands_v<node_t<A>> + operands_v<node_t<B>>> binary(const A& a, const B& b, double v,
                                                           double da, double db) {
  constexpr int na = operands_v<node_t<A>>, nb = operands_v<node_t<B>>;
  Expr<na + nb> r{typename Expr<na + nb>::Uninit{}};
  r.v = v;
  put<0>(r, a, da);
  put<na>(r, b, db);
  return r;
}

}  // namespace ad

template <class E>
  requires ad::is_expr_node_v<E>
inline Real::Real(const E& e) : v_(e.v) {
  constexpr int n = ad::operands_v<E>;
  // Operands of another recording were flagged as they joined; an expression made under another
  // recording is caught here. A constant operand (index 0) writes the sink.
  const unsigned long long ids = ad::active_scalar_ids;
  uint32_t any = 0;
  for (int k = 0; k < n; ++k) any |= e.idx[k];
  if (e.bad | ad::foreign_id(uint32_t(e.ids), ids)) [[unlikely]] ad::scalar_tape_mismatch();
  if (!any) return;  // every operand a constant (or no recording): so is the result
  ad::ScalarTape* tape = ad::active_scalar_tape;
  tape->reserve(n);
  uint32_t* ip = tape->idx_ + tape->ops_n_;
  double* mp = tape->mul_ + tape->ops_n_;
  // Plain stores: non-temporal ones (tried for tapes past the cache) are opaque to the compiler,
  // which then reloads the tape's fields and the caller's vectors after every statement.
  for (int k = 0; k < n; ++k) {
    ip[k] = e.idx[k];
    mp[k] = e.mul[k];
  }
  const size_t ops = tape->ops_n_ + n, k = tape->n_ + 1;
  tape->ops_n_ = ops;
  tape->n_ = k;
  tape->end_[k] = uint32_t(ops);
  i_ = uint32_t(k);
  tape_ = uint32_t(ids);
}

// ---- arithmetic: Real or expression with Real or expression or number.

template <class A, class B>
  requires ad::RealPair<A, B>
inline auto operator+(const A& a, const B& b) {
  if constexpr (!ad::RealExpr<B>) return ad::unary(a, a.value() + double(b), 1);
  else if constexpr (!ad::RealExpr<A>) return ad::unary(b, double(a) + b.value(), 1);
  else return ad::binary(a, b, a.value() + b.value(), 1, 1);
}
template <class A, class B>
  requires ad::RealPair<A, B>
inline auto operator-(const A& a, const B& b) {
  if constexpr (!ad::RealExpr<B>) return ad::unary(a, a.value() - double(b), 1);
  else if constexpr (!ad::RealExpr<A>) return ad::unary(b, double(a) - b.value(), -1);
  else return ad::binary(a, b, a.value() - b.value(), 1, -1);
}
template <class A, class B>
  requires ad::RealPair<A, B>
inline auto operator*(const A& a, const B& b) {
  if constexpr (!ad::RealExpr<B>) return ad::unary(a, a.value() * double(b), double(b));
  else if constexpr (!ad::RealExpr<A>) return ad::unary(b, double(a) * b.value(), double(a));
  else return ad::binary(a, b, a.value() * b.value(), b.value(), a.value());
}
template <class A, class B>
  requires ad::RealPair<A, B>
inline auto operator/(const A& a, const B& b) {
  if constexpr (!ad::RealExpr<B>) {
    return ad::unary(a, a.value() / double(b), 1 / double(b));
  } else if constexpr (!ad::RealExpr<A>) {
    double y = double(a) / b.value();
    return ad::unary(b, y, -y / b.value());
  } else {
    double y = a.value() / b.value();
    return ad::binary(a, b, y, 1 / b.value(), -y / b.value());
  }
}
template <ad::RealExpr A>
inline auto operator-(const A& a) {
  return ad::unary(a, -a.value(), -1);
}
template <ad::RealExpr A>
inline auto operator+(const A& a) {
  return ad::unary(a, a.value(), 1);
}

template <class E>
  requires ad::RealOperand<E>
inline Real& Real::operator+=(const E& o) {
  return *this = *this + o;
}
template <class E>
  requires ad::RealOperand<E>
inline Real& Real::operator-=(const E& o) {
  return *this = *this - o;
}
template <class E>
  requires ad::RealOperand<E>
inline Real& Real::operator*=(const E& o) {
  return *this = *this * o;
}
template <class E>
  requires ad::RealOperand<E>
inline Real& Real::operator/=(const E& o) {
  return *this = *this / o;
}

// Comparisons look at values only, as branches in double code do.
template <class A, class B>
  requires ad::RealPair<A, B>
inline bool operator==(const A& a, const B& b) {
  return ad::value_of(a) == ad::value_of(b);
}
template <class A, class B>
  requires ad::RealPair<A, B>
inline auto operator<=>(const A& a, const B& b) {
  return ad::value_of(a) <=> ad::value_of(b);
}

template <ad::RealExpr E>
inline double value(const E& x) {
  return x.value();
}
inline double value(double x) { return x; }

// ---- <cmath> for Real expressions: each is the value and the derivative, folded into the
// statement of the expression it is part of.
template <ad::RealExpr E>
inline auto sin(const E& x) {
  double v = x.value();
  return ad::unary(x, std::sin(v), std::cos(v));
}
template <ad::RealExpr E>
inline auto cos(const E& x) {
  double v = x.value();
  return ad::unary(x, std::cos(v), -std::sin(v));
}
template <ad::RealExpr E>
inline auto tan(const E& x) {
  double t = std::tan(x.value());
  return ad::unary(x, t, 1 + t * t);
}
template <ad::RealExpr E>
inline auto exp(const E& x) {
  double e = std::exp(x.value());
  return ad::unary(x, e, e);
}
template <ad::RealExpr E>
inline auto expm1(const E& x) {
  double v = x.value();
  return ad::unary(x, std::expm1(v), std::exp(v));
}
template <ad::RealExpr E>
inline auto log(const E& x) {
  double v = x.value();
  return ad::unary(x, std::log(v), 1 / v);
}
template <ad::RealExpr E>
inline auto log1p(const E& x) {
  double v = x.value();
  return ad::unary(x, std::log1p(v), 1 / (1 + v));
}
template <ad::RealExpr E>
inline auto sqrt(const E& x) {
  double s = std::sqrt(x.value());
  return ad::unary(x, s, 0.5 / s);
}
template <ad::RealExpr E>
inline auto cbrt(const E& x) {
  double c = std::cbrt(x.value());
  return ad::unary(x, c, 1 / (3 * c * c));
}
template <ad::RealExpr E>
inline auto tanh(const E& x) {
  double t = std::tanh(x.value());
  return ad::unary(x, t, 1 - t * t);
}
template <ad::RealExpr E>
inline auto sinh(const E& x) {
  double v = x.value();
  return ad::unary(x, std::sinh(v), std::cosh(v));
}
template <ad::RealExpr E>
inline auto cosh(const E& x) {
  double v = x.value();
  return ad::unary(x, std::cosh(v), std::sinh(v));
}
template <ad::RealExpr E>
inline auto atan(const E& x) {
  double v = x.value();
  return ad::unary(x, std::atan(v), 1 / (1 + v * v));
}
template <ad::RealExpr E>
inline auto asin(const E& x) {
  double v = x.value();
  return ad::unary(x, std::asin(v), 1 / std::sqrt(1 - v * v));
}
template <ad::RealExpr E>
inline auto acos(const E& x) {
  double v = x.value();
  return ad::unary(x, std::acos(v), -1 / std::sqrt(1 - v * v));
}
template <ad::RealExpr E>
inline auto erf(const E& x) {
  double v = x.value();
  return ad::unary(x, std::erf(v), 1.1283791670955126 * std::exp(-v * v));  // 2/√π e^-x²
}
// |x| has derivative sign(x), taken as 0 at 0.
template <ad::RealExpr E>
inline auto abs(const E& x) {
  double v = x.value();
  return ad::unary(x, std::abs(v), v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0);
}
template <ad::RealExpr E>
inline auto fabs(const E& x) {
  return abs(x);
}
// pow: the power term is 0 when the exponent is 0, the exponential term 0 when the base <= 0.
template <class A, class B>
  requires ad::RealPair<A, B>
inline auto pow(const A& a, const B& b) {
  double av = ad::value_of(a), bv = ad::value_of(b), y = std::pow(av, bv);
  double da = bv == 0 ? 0 : bv * std::pow(av, bv - 1);
  double db = av > 0 ? y * std::log(av) : 0;
  if constexpr (!ad::RealExpr<B>) return ad::unary(a, y, da);
  else if constexpr (!ad::RealExpr<A>) return ad::unary(b, y, db);
  else return ad::binary(a, b, y, da, db);
}
template <class A, class B>
  requires ad::RealPair<A, B>
inline auto atan2(const A& y, const B& x) {
  double yv = ad::value_of(y), xv = ad::value_of(x), r2 = xv * xv + yv * yv;
  double v = std::atan2(yv, xv), dy = xv / r2, dx = -yv / r2;
  if constexpr (!ad::RealExpr<B>) return ad::unary(y, v, dy);
  else if constexpr (!ad::RealExpr<A>) return ad::unary(x, v, dx);
  else return ad::binary(y, x, v, dy, dx);
}
template <class A, class B>
  requires ad::RealPair<A, B>
inline auto hypot(const A& a, const B& b) {
  double av = ad::value_of(a), bv = ad::value_of(b), h = std::hypot(av, bv);
  double da = h == 0 ? 0 : av / h, db = h == 0 ? 0 : bv / h;
  if constexpr (!ad::RealExpr<B>) return ad::unary(a, h, da);
  else if constexpr (!ad::RealExpr<A>) return ad::unary(b, h, db);
  else return ad::binary(a, b, h, da, db);
}
// max/min choose by value (a on ties). The Real-Real overloads are not templates, so
// `using std::max; max(a, b)` picks them over std::max.
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
inline Real fmax(const A& a, const B& b) {
  return max(a, b);
}
template <class A, class B>
  requires ad::RealPair<A, B>
inline Real fmin(const A& a, const B& b) {
  return min(a, b);
}
template <ad::RealExpr E>
inline bool isfinite(const E& x) {
  return std::isfinite(x.value());
}
template <ad::RealExpr E>
inline bool isnan(const E& x) {
  return std::isnan(x.value());
}
template <ad::RealExpr E>
inline bool isinf(const E& x) {
  return std::isinf(x.value());
}

std::ostream& operator<<(std::ostream& os, const Real& x);
template <int N>
std::ostream& operator<<(std::ostream& os, const ad::Expr<N>& x) {
  return os << Real(x.value());
}

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
