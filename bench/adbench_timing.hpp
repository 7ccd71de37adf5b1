// ADBench's timing method and the agreement measure, shared by the ADBench benchmarks.
//
//   double t = adbench_time([&] { objective(); }, {.min_time = 0.5, .samples = 10});
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

namespace fx::bench {

struct TimeOpts {
  double min_time = 0.5;
  int samples = 10;
  double budget = 5;
};

// A sample repeats fn until >= min_time (doubling the count), its time per call is kept; the
// result is the minimum over up to `samples` samples, within `budget` seconds.
inline double adbench_time(const std::function<void()>& fn, const TimeOpts& o) {
  using C = std::chrono::steady_clock;
  auto start = C::now();
  double best = INFINITY;
  int64_t reps = 1;
  for (int s = 0; s < o.samples; ++s) {
    double el;
    for (;;) {
      auto t0 = C::now();
      for (int64_t r = 0; r < reps; ++r) fn();
      el = std::chrono::duration<double>(C::now() - t0).count();
      if (el >= o.min_time) break;
      reps = el <= 0 ? reps * 2
                     : std::max(reps * 2, int64_t(double(reps) * o.min_time / el * 1.1) + 1);
      reps = std::min<int64_t>(reps, int64_t(1) << 40);
    }
    best = std::min(best, el / double(reps));
    if (std::chrono::duration<double>(C::now() - start).count() >= o.budget) break;
  }
  return best;
}

// max |a - b| / max |b|: the relative error ADBench compares implementations with.
inline double max_rel_err(const std::vector<double>& a, const std::vector<double>& b) {
  double scale = 0, diff = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    scale = std::max(scale, std::abs(b[i]));
    diff = std::max(diff, std::abs(a[i] - b[i]));
  }
  return a.size() != b.size() ? INFINITY : diff / std::max(scale, 1e-300);
}

}  // namespace fx::bench
