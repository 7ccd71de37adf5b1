// Learning-rate schedules: closed forms of the step number.
#include "fluxion/optim/schedules.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fluxion/core/error.hpp"

namespace fx::optim {

namespace {
void check_step(const char* name, int64_t t) {
  FX_CHECK(t >= 0, "fx::optim::", name, ": step ", t, " is negative");
}
void check_positive(const char* name, const char* what, int64_t v) {
  FX_CHECK(v > 0, "fx::optim::", name, ": ", what, " ", v, " must be positive");
}
// From a at phase 0 to b at phase 1 along half a cosine.
double cosine_between(double a, double b, double phase) {
  return b + (a - b) * (1 + std::cos(std::numbers::pi * phase)) / 2;
}
}  // namespace

double Constant::operator()(int64_t t) const {
  check_step("Constant", t);
  return value;
}

double Step::operator()(int64_t t) const {
  check_step("Step", t);
  check_positive("Step", "step_size", step_size);
  return start * std::pow(decay, double(t / step_size));
}

double Exp::operator()(int64_t t) const {
  check_step("Exp", t);
  return start * std::pow(decay, double(t));
}

double Poly::operator()(int64_t t) const {
  check_step("Poly", t);
  check_positive("Poly", "steps", steps);
  const double left = 1 - double(std::min(t, steps)) / double(steps);
  return end + (start - end) * std::pow(left, degree);
}

double Inv::operator()(int64_t t) const {
  check_step("Inv", t);
  return start / std::pow(1 + decay * double(t), degree);
}

double Cosine::operator()(int64_t t) const {
  check_step("Cosine", t);
  check_positive("Cosine", "period", period);
  check_positive("Cosine", "period_mult", period_mult);
  if (!restart) return cosine_between(max, min, double(t) / double(period));
  int64_t len = period;
  while (t >= len) {  // whole periods before t (at most ~60 when they grow)
    t -= len;
    len *= period_mult;
  }
  return cosine_between(max, min, double(t) / double(len));
}

double Triangle::operator()(int64_t t) const {
  check_step("Triangle", t);
  check_positive("Triangle", "half_period", half_period);
  const int64_t cycle = t / (2 * half_period);
  const double x = std::abs(double(t) / double(half_period) - 2 * double(cycle) - 1);
  return min + (max - min) * std::max(0.0, 1 - x) * std::pow(amplitude_decay, double(cycle));
}

double OneCycle::operator()(int64_t t) const {
  check_step("OneCycle", t);
  check_positive("OneCycle", "total_steps", total_steps);
  const double initial = max_lr / div_factor, final_lr = initial / final_div_factor;
  // torch's phase ends: warm-up over steps [0, pct_start * total - 1], annealing to total - 1.
  const double up_end = pct_start * double(total_steps) - 1, down_end = double(total_steps) - 1;
  const double s = double(std::min(t, total_steps - 1));
  if (s <= up_end) return cosine_between(initial, max_lr, up_end > 0 ? s / up_end : 1);
  return cosine_between(max_lr, final_lr, (s - up_end) / (down_end - up_end));
}

double Linear::operator()(int64_t t) const {
  check_step("Linear", t);
  check_positive("Linear", "steps", steps);
  return start + (end - start) * double(std::min(t, steps)) / double(steps);
}

Sequence::Sequence(std::initializer_list<Part> parts) : Sequence(std::vector<Part>(parts)) {}

Sequence::Sequence(std::vector<Part> parts) : parts_(std::move(parts)) {
  FX_CHECK(!parts_.empty(), "fx::optim::Sequence: give at least one schedule");
  for (size_t i = 0; i + 1 < parts_.size(); ++i)
    FX_CHECK(parts_[i].steps >= 0, "fx::optim::Sequence: part ", i, " runs for ", parts_[i].steps,
             " steps");
}

double Sequence::operator()(int64_t t) const {
  check_step("Sequence", t);
  for (size_t i = 0; i + 1 < parts_.size(); ++i) {
    if (t < parts_[i].steps) return parts_[i].schedule(t);
    t -= parts_[i].steps;
  }
  return parts_.back().schedule(t);
}

Schedule warmup(int64_t steps, Schedule after, double from) {
  check_positive("warmup", "steps", steps);
  const double to = after(0);
  return Sequence({{Linear{from, to, steps}, steps}, {std::move(after), 0}});
}

}  // namespace fx::optim
