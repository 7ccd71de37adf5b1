// ADBench's timing method and the agreement measure, shared by the ADBench benchmarks.
//
//   Interleaved g = interleaved_time({fluxion_grad, torch_grad}, {.min_time = 0.5, .samples = 10});
//   g.min(0);       // fluxion's time per call: the minimum over samples, as ADBench reports it
//   g.ratio(0, 1);  // fluxion / libtorch: the median of the per-round ratios
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace fx::bench {

struct TimeOpts {
  double min_time = 0.5;
  int samples = 10;
  double budget = 5;
};

// Several implementations timed in alternation: round r takes one ADBench sample (calls
// repeated until >= min_time) of each in turn, so a change in the machine's speed (a shared,
// noisy host) lands on all of them alike. An implementation's time is its minimum over rounds,
// ADBench's figure; the ratio of two is the median of their per-round ratios, the figure the
// acceptance ratios use (medians of >= 5 rounds). Runs `samples` rounds, stopping early once
// `budget` seconds per implementation are spent and at least 5 rounds are done.
struct Interleaved {
  std::vector<std::vector<double>> rounds;  // rounds[r][i]: seconds per call of implementation i

  double min(size_t i) const {
    double m = INFINITY;
    for (const auto& r : rounds) m = std::min(m, r[i]);
    return m;
  }
  // Median over rounds of num(round) / den(round), for figures built from several entries.
  template <class Num, class Den>
  double median_ratio(Num num, Den den) const {
    std::vector<double> q;
    for (const auto& r : rounds) q.push_back(num(r) / den(r));
    if (q.empty()) return NAN;
    std::sort(q.begin(), q.end());
    const size_t n = q.size();
    return n % 2 ? q[n / 2] : 0.5 * (q[n / 2 - 1] + q[n / 2]);
  }
  double ratio(size_t a, size_t b) const {
    return median_ratio([a](const std::vector<double>& r) { return r[a]; },
                        [b](const std::vector<double>& r) { return r[b]; });
  }
};

inline Interleaved interleaved_time(const std::vector<std::function<void()>>& fns,
                                    const TimeOpts& o) {
  using C = std::chrono::steady_clock;
  auto start = C::now();
  Interleaved out;
  std::vector<int64_t> reps(fns.size(), 1);
  const int at_least = std::min(o.samples, 5);
  for (int s = 0; s < o.samples; ++s) {
    std::vector<double> round(fns.size());
    for (size_t i = 0; i < fns.size(); ++i) {
      for (;;) {  // the call count grows until a sample lasts min_time (ADBench's method)
        auto t0 = C::now();
        for (int64_t r = 0; r < reps[i]; ++r) fns[i]();
        const double el = std::chrono::duration<double>(C::now() - t0).count();
        if (el >= o.min_time) {
          round[i] = el / double(reps[i]);
          break;
        }
        reps[i] = el <= 0
                      ? reps[i] * 2
                      : std::max(reps[i] * 2, int64_t(double(reps[i]) * o.min_time / el * 1.1) + 1);
        reps[i] = std::min<int64_t>(reps[i], int64_t(1) << 40);
      }
    }
    out.rounds.push_back(std::move(round));
    const double spent = std::chrono::duration<double>(C::now() - start).count();
    if (s + 1 >= at_least && spent >= o.budget * double(fns.size())) break;
  }
  return out;
}

// Several named implementations of one objective and its derivative timed the ADBench way:
// objectives in alternation, then derivatives. Prints <tag>_<name>_objective_s and
// <tag>_<name>_jacobian_s for each; "manual" and "torch" are the peers, every other name a
// fluxion implementation, of which the best counts in the ratios (medians of per-round ratios).
struct Compared {
  std::vector<double> objective_s, jacobian_s;  // per implementation: ADBench's minimum
  double fluxion_vs_manual = NAN, fluxion_vs_torch = NAN;
  size_t rounds = 0;  // of the derivatives
};

inline Compared compare_implementations(const std::string& tag,
                                        const std::vector<std::string>& names,
                                        const std::vector<std::function<void()>>& objectives,
                                        const std::vector<std::function<void()>>& jacobians,
                                        const TimeOpts& to) {
  const Interleaved obj = interleaved_time(objectives, to), jac = interleaved_time(jacobians, to);
  Compared c;
  c.rounds = jac.rounds.size();
  std::vector<size_t> fluxion;
  int manual = -1, torch = -1;
  for (size_t i = 0; i < names.size(); ++i) {
    c.objective_s.push_back(obj.min(i));
    c.jacobian_s.push_back(jac.min(i));
    std::printf("%s_%s_objective_s=%.6e\n%s_%s_jacobian_s=%.6e\n", tag.c_str(), names[i].c_str(),
                obj.min(i), tag.c_str(), names[i].c_str(), jac.min(i));
    if (names[i] == "manual") manual = int(i);
    else if (names[i] == "torch") torch = int(i);
    else fluxion.push_back(i);
  }
  auto best = [&](const std::vector<double>& r) {
    double b = INFINITY;
    for (size_t i : fluxion) b = std::min(b, r[i]);
    return b;
  };
  auto entry = [](int i) { return [i](const std::vector<double>& r) { return r[size_t(i)]; }; };
  if (!fluxion.empty() && manual >= 0) c.fluxion_vs_manual = jac.median_ratio(best, entry(manual));
  if (!fluxion.empty() && torch >= 0) c.fluxion_vs_torch = jac.median_ratio(best, entry(torch));
  return c;
}

// The command line the Jacobian benchmarks share: --dir, --sets and --impls (comma-separated
// lists), --min-time, --samples, --budget. False (after a message) on anything else.
struct JacobianArgs {
  std::string dir;
  std::vector<std::string> sets, impls;
  TimeOpts to;
};

inline std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string s; std::getline(ss, s, ',');) out.push_back(s);
  return out;
}

inline bool parse_jacobian_args(const char* prog, int argc, char** argv, JacobianArgs& a) {
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: option %s needs a value\n", prog, k.c_str());
      return false;
    }
    const std::string v = argv[i + 1];
    if (k == "--dir") a.dir = v;
    else if (k == "--sets") a.sets = split_list(v);
    else if (k == "--impls") a.impls = split_list(v);
    else if (k == "--min-time") a.to.min_time = std::atof(v.c_str());
    else if (k == "--samples") a.to.samples = std::max(1, std::atoi(v.c_str()));
    else if (k == "--budget") a.to.budget = std::atof(v.c_str());
    else {
      std::fprintf(stderr, "%s: unknown option %s\n", prog, k.c_str());
      return false;
    }
  }
  if (std::find(a.impls.begin(), a.impls.end(), "manual") == a.impls.end())
    a.impls.push_back("manual");
  return true;
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
