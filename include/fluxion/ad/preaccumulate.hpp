// fx::preaccumulated_sum: a sum of many terms, differentiated term by term so the scalar tape
// stays small enough to live in cache.
//
//   std::vector<std::array<double, 2>> data = {{0, 1}, {1, 3}, {2, 5}};   // points (x, y)
//   auto objective = [&](const auto& theta) {      // least squares for y = a x + b, theta = {a, b}
//     return fx::preaccumulated_sum(data.size(), [&](size_t i) {
//       auto r = theta[0] * data[i][0] + theta[1] - data[i][1];
//       return r * r;
//     });
//   };
//   std::vector<double> g = fx::gradient(objective, std::vector<double>{0.5, 0.5});
//
// With fx::Real (a scalar gradient is recording), each term is recorded, swept backwards at once
// with seed 1, and dropped; what survives is one statement holding d(sum)/d(e) for every earlier
// value e the terms read (the local Jacobian of the sum, "preaccumulation" in the AD
// literature). The gradient is the same as without it, to rounding; the tape holds the terms'
// inputs once instead of every term's operations, so a loss over 10^3..10^6 data points sweeps a
// few kilobytes of hot tape per point instead of streaming megabytes through memory (ADBench's
// GMM: 1.93M statements become 25 per point). With any other number type (double, fx::Dual,
// fx::Tensor, ...) it is the plain loop `s = s + term(i)` (R{} for n = 0).
//
// A term may use any Real made before the sum and may keep temporaries in outer variables, but
// a Real made inside a term belongs to that term: using one after its term ended throws fx::Error
// (its statements are gone). Terms must not create variables. A preaccumulated_sum inside a term
// runs as a plain loop (its terms join the outer term's tape).
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "fluxion/ad/scalar.hpp"

namespace fx {
namespace ad {

// One preaccumulated sum on the active tape: begin_term()/end_term() around each term, then
// finish() records the single statement. The destructor cleans up after an exception.
class SumPreaccumulation {
 public:
  explicit SumPreaccumulation(ScalarTape& tape);
  ~SumPreaccumulation();
  SumPreaccumulation(const SumPreaccumulation&) = delete;
  SumPreaccumulation& operator=(const SumPreaccumulation&) = delete;

  void begin_term();
  void end_term(const Real& term);
  Real finish();

  // Whether a sum can be preaccumulated here: a recording is active and no sum is running on it.
  static bool available();

 private:
  void discard();  // zero what the terms accumulated and drop their statements

  ScalarTape& tape_;
  size_t start_ = 0, start_ops_ = 0;  // the tape before the sum
  uint32_t lowest_ = UINT32_MAX;      // lowest earlier entry a term reached (minus one)
  uint32_t base_id_ = 0;              // the recording's id, restored after each term
  double value_ = 0;
  bool open_ = true;
};

}  // namespace ad

template <class F>
auto preaccumulated_sum(size_t n, F&& term) {
  using R = std::remove_cvref_t<std::invoke_result_t<F&, size_t>>;
  if constexpr (std::is_same_v<R, Real>) {
    if (!ad::SumPreaccumulation::available()) {
      Real s = 0;
      for (size_t i = 0; i < n; ++i) s += term(i);
      return s;
    }
    ad::SumPreaccumulation acc(*ad::active_scalar_tape);
    for (size_t i = 0; i < n; ++i) {
      acc.begin_term();
      acc.end_term(term(i));
    }
    return acc.finish();
  } else {
    if (n == 0) return R{};
    R s = term(0);
    for (size_t i = 1; i < n; ++i) s = s + term(i);
    return s;
  }
}

}  // namespace fx
