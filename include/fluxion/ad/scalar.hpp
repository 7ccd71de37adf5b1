// Reverse-mode AD for scalar C++ code: fx::Real is a double that records the operations it takes
// part in on a per-thread tape (an "operation stack", as in Adept), a few nanoseconds each.
//
//   auto f = [](auto x) { decltype(x) s = 0; for (int i = 0; i < 10; ++i) s += sin(x * i); return s; };
//   double df = fx::gradient(f, 1.0);                           // generic code instantiated with Real
//   std::vector<double> g = fx::gradient(norm2, std::vector<double>{1, 2, 3});
//
// Generic functions (templates or `auto` lambdas) written for double work unchanged: arithmetic,
// comparisons, and the <cmath> functions below are found by argument-dependent lookup. Values
// that never touch the argument are constants and record nothing.
#pragma once
#include <cmath>
#include <cstdint>
#include <iosfwd>
#include <vector>

#include "fluxion/core/error.hpp"

namespace fx {

namespace ad {

// One recorded operation per result: two (operand index, partial) slots. A unary operation or a
// constant operand uses the sink (index 0, partial 0), so there is no per-statement count and the
// reverse sweep is branch-free. Indices and partials live in separate arrays (12 + 16 bytes).
struct ScalarTape {
  struct Slots {
    uint32_t a, b;
  };
  struct Partials {
    double da, db;
  };
  ScalarTape() { grow(1 << 16); }
  void clear() { n_ = 0; }
  uint32_t push2(uint32_t a, double da, uint32_t b, double db) {
    if (n_ == cap_) [[unlikely]] grow(2 * size_t(cap_));
    slots_[n_] = {a, b};
    partials_[n_] = {da, db};
    return ++n_;
  }
  uint32_t push1(uint32_t a, double da) { return push2(a, da, 0, 0.0); }
  uint32_t variable() { return push2(0, 0.0, 0, 0.0); }  // an independent input
  size_t size() const { return n_; }
  // Adjoints of every index given the seed adjoint of `out`; index 0 (constants) is a sink.
  // The buffer belongs to the tape (reused across calls, so large tapes do not page-fault anew).
  const std::vector<double>& adjoints(uint32_t out, double seed = 1.0);

 private:
  [[gnu::noinline]] void grow(size_t statements);  // off the hot path
  std::vector<Slots> slot_store_;
  std::vector<Partials> partial_store_;
  Slots* slots_ = nullptr;
  Partials* partials_ = nullptr;
  uint32_t n_ = 0, cap_ = 0;
  std::vector<double> adj_;
};

// The tape of the innermost scalar gradient running on this thread (null when none), and its id.
// constinit: no thread-local initialisation check on every operation.
extern thread_local constinit ScalarTape* active_scalar_tape;
extern thread_local constinit uint32_t active_scalar_tape_id;
// Out of line and cold, so the message-building code does not keep Real's operators from
// inlining.
[[noreturn, gnu::cold, gnu::noinline]] void scalar_tape_mismatch();

}  // namespace ad

class Real {
 public:
  Real() = default;
  Real(double v) : v_(v) {}  // NOLINT: constants convert implicitly, as doubles do
  Real(double v, uint32_t index) : v_(v), i_(index), tape_(ad::active_scalar_tape_id) {}

  double value() const { return v_; }
  uint32_t index() const { return i_; }
  explicit operator double() const { return v_; }

  Real& operator+=(const Real& o) { return *this = *this + o; }
  Real& operator-=(const Real& o) { return *this = *this - o; }
  Real& operator*=(const Real& o) { return *this = *this * o; }
  Real& operator/=(const Real& o) { return *this = *this / o; }

  // Records y = f(x) with dy/dx = d (constants record nothing).
  static Real unary(const Real& x, double y, double d) {
    if (!x.i_) return Real(y);
    x.check_tape();
    return Real(y, ad::active_scalar_tape->push1(x.i_, d));
  }
  static Real binary(const Real& a, const Real& b, double y, double da, double db) {
    if (!(a.i_ | b.i_)) return Real(y);
    if (a.i_) a.check_tape();
    if (b.i_) b.check_tape();
    // A constant operand has index 0: its slot feeds the sink.
    return Real(y, ad::active_scalar_tape->push2(a.i_, a.i_ ? da : 0.0, b.i_, b.i_ ? db : 0.0));
  }

  friend Real operator+(const Real& a, const Real& b) { return binary(a, b, a.v_ + b.v_, 1, 1); }
  friend Real operator-(const Real& a, const Real& b) { return binary(a, b, a.v_ - b.v_, 1, -1); }
  friend Real operator*(const Real& a, const Real& b) {
    return binary(a, b, a.v_ * b.v_, b.v_, a.v_);
  }
  friend Real operator/(const Real& a, const Real& b) {
    double y = a.v_ / b.v_;
    return binary(a, b, y, 1 / b.v_, -y / b.v_);
  }
  friend Real operator-(const Real& a) { return unary(a, -a.v_, -1); }
  friend Real operator+(const Real& a) { return a; }
  friend bool operator==(const Real& a, const Real& b) { return a.v_ == b.v_; }
  friend auto operator<=>(const Real& a, const Real& b) { return a.v_ <=> b.v_; }

  void check_same_tape() const { check_tape(); }

 private:
  // A variable of another (outer or finished) recording would corrupt this tape's indices.
  void check_tape() const {
    if (tape_ != ad::active_scalar_tape_id) [[unlikely]] ad::scalar_tape_mismatch();
  }
  double v_ = 0;
  uint32_t i_ = 0;      // 0: a constant
  uint32_t tape_ = 0;   // id of the recording that owns index i_ (fills the padding)
};

inline double value(const Real& x) { return x.value(); }
inline double value(double x) { return x; }

// <cmath> for Real: each is the value and the derivative, recorded as one operation.
inline Real sin(const Real& x) { return Real::unary(x, std::sin(x.value()), std::cos(x.value())); }
inline Real cos(const Real& x) { return Real::unary(x, std::cos(x.value()), -std::sin(x.value())); }
inline Real tan(const Real& x) {
  double t = std::tan(x.value());
  return Real::unary(x, t, 1 + t * t);
}
inline Real exp(const Real& x) {
  double e = std::exp(x.value());
  return Real::unary(x, e, e);
}
inline Real expm1(const Real& x) {
  return Real::unary(x, std::expm1(x.value()), std::exp(x.value()));
}
inline Real log(const Real& x) { return Real::unary(x, std::log(x.value()), 1 / x.value()); }
inline Real log1p(const Real& x) {
  return Real::unary(x, std::log1p(x.value()), 1 / (1 + x.value()));
}
inline Real sqrt(const Real& x) {
  double s = std::sqrt(x.value());
  return Real::unary(x, s, 0.5 / s);
}
inline Real tanh(const Real& x) {
  double t = std::tanh(x.value());
  return Real::unary(x, t, 1 - t * t);
}
inline Real sinh(const Real& x) { return Real::unary(x, std::sinh(x.value()), std::cosh(x.value())); }
inline Real cosh(const Real& x) { return Real::unary(x, std::cosh(x.value()), std::sinh(x.value())); }
inline Real atan(const Real& x) {
  return Real::unary(x, std::atan(x.value()), 1 / (1 + x.value() * x.value()));
}
inline Real asin(const Real& x) {
  return Real::unary(x, std::asin(x.value()), 1 / std::sqrt(1 - x.value() * x.value()));
}
inline Real acos(const Real& x) {
  return Real::unary(x, std::acos(x.value()), -1 / std::sqrt(1 - x.value() * x.value()));
}
inline Real erf(const Real& x) {
  double v = x.value();
  return Real::unary(x, std::erf(v), 1.1283791670955126 * std::exp(-v * v));
}
inline Real abs(const Real& x) {
  return Real::unary(x, std::abs(x.value()), x.value() > 0 ? 1.0 : x.value() < 0 ? -1.0 : 0.0);
}
inline Real fabs(const Real& x) { return abs(x); }
inline Real pow(const Real& a, const Real& b) {
  double y = std::pow(a.value(), b.value());
  double da = b.value() == 0 ? 0 : b.value() * std::pow(a.value(), b.value() - 1);
  double db = a.value() > 0 ? y * std::log(a.value()) : 0;
  return Real::binary(a, b, y, da, db);
}
inline Real pow(const Real& a, double b) {
  return Real::unary(a, std::pow(a.value(), b), b == 0 ? 0 : b * std::pow(a.value(), b - 1));
}
inline Real atan2(const Real& y, const Real& x) {
  double r2 = x.value() * x.value() + y.value() * y.value();
  return Real::binary(y, x, std::atan2(y.value(), x.value()), x.value() / r2, -y.value() / r2);
}
inline Real hypot(const Real& a, const Real& b) {
  double h = std::hypot(a.value(), b.value());
  return Real::binary(a, b, h, a.value() / h, b.value() / h);
}
inline Real max(const Real& a, const Real& b) { return a.value() >= b.value() ? a : b; }
inline Real min(const Real& a, const Real& b) { return a.value() <= b.value() ? a : b; }
inline Real fmax(const Real& a, const Real& b) { return max(a, b); }
inline Real fmin(const Real& a, const Real& b) { return min(a, b); }
inline bool isfinite(const Real& x) { return std::isfinite(x.value()); }
inline bool isnan(const Real& x) { return std::isnan(x.value()); }

std::ostream& operator<<(std::ostream& os, const Real& x);

namespace ad {

// Starts a scalar recording on this thread and ends it on destruction (nesting restores the outer).
class ScalarRecording {
 public:
  ScalarRecording();
  ~ScalarRecording();
  ScalarRecording(const ScalarRecording&) = delete;
  ScalarRecording& operator=(const ScalarRecording&) = delete;
  Real variable(double v) { return Real(v, tape_->variable()); }
  const std::vector<double>& adjoints(const Real& y) const {
    if (y.index()) y.check_same_tape();
    return tape_->adjoints(y.index());
  }

 private:
  ScalarTape* tape_;
  ScalarTape* outer_;
  uint32_t outer_id_;
};

}  // namespace ad
}  // namespace fx
