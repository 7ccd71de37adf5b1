// Progress bar rendering and its terminal/log pacing.
#include "fluxion/train/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace fx::train {
namespace {

bool stream_is_tty(std::ostream* out) {
  if (out == &std::cout) return ::isatty(STDOUT_FILENO);
  if (out == &std::cerr || out == &std::clog) return ::isatty(STDERR_FILENO);
  return false;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = int64_t(std::llround(seconds));
  char buf[48];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)(s / 3600),
                  (long long)(s / 60 % 60), (long long)(s % 60));
  else std::snprintf(buf, sizeof buf, "%lld:%02lld", (long long)(s / 60), (long long)(s % 60));
  return buf;
}

ProgressBar::ProgressBar(int64_t total, ProgressOptions options)
    : total_(total), opt_(std::move(options)), out_(opt_.out ? opt_.out : &std::cout) {
  using Mode = ProgressOptions::Mode;
  tty_ = opt_.mode == Mode::tty || (opt_.mode == Mode::automatic && stream_is_tty(out_));
  opt_.width = std::max(opt_.width, 1);
  start_ = last_draw_ = Clock::now();
}

ProgressBar::~ProgressBar() {
  try {
    finish();
  } catch (...) {  // a destructor runs during unwinding: printing must not terminate the program
  }
}

double ProgressBar::elapsed_s() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void ProgressBar::set(std::string_view name, double value) {
  for (auto& [k, v] : metrics_)
    if (k == name) {
      v = value;
      return;
    }
  metrics_.emplace_back(std::string(name), value);
}

void ProgressBar::update(std::initializer_list<Metric> metrics, int64_t steps) {
  if (finished_) return;
  step_ += steps;
  for (const Metric& m : metrics) set(m.name, m.value);
  const double since = std::chrono::duration<double>(Clock::now() - last_draw_).count();
  if (since >= (tty_ ? opt_.tty_interval_s : opt_.log_interval_s)) draw(false);
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  draw(true);
}

std::string ProgressBar::line() const {
  const double t = elapsed_s();
  std::string s = opt_.label;
  if (!s.empty()) s += ' ';
  if (total_ > 0) {
    const double frac = std::clamp(double(step_) / double(total_), 0.0, 1.0);
    const int fill = int(frac * opt_.width);
    std::string bar(size_t(opt_.width), ' ');
    std::fill_n(bar.begin(), fill, '=');
    if (fill < opt_.width && step_ > 0) bar[size_t(fill)] = '>';
    s += '[' + bar + "] " + std::to_string(step_) + '/' + std::to_string(total_);
  } else {
    s += std::to_string(step_);
  }
  const double rate = t > 0 ? double(step_) / t : 0;
  if (step_ > 0) s += rate >= 1 ? fmt("  %.1f it/s", rate) : fmt("  %.2f s/it", 1 / rate);
  if (finished_ || (total_ > 0 && step_ >= total_)) s += "  " + format_duration(t);
  else if (total_ > 0 && step_ > 0) s += "  ETA " + format_duration(double(total_ - step_) / rate);
  for (const auto& [k, v] : metrics_) s += "  " + k + '=' + fmt("%.4g", v);
  return s;
}

void ProgressBar::draw(bool final) {
  last_draw_ = Clock::now();
  std::string s = line();
  if (tty_) {
    // Pad over the tail of a longer previous line instead of relying on ANSI erase codes.
    size_t len = s.size();
    if (len < last_len_) s.append(last_len_ - len, ' ');
    last_len_ = len;
    *out_ << '\r' << s;
    if (final) *out_ << '\n';
  } else {
    *out_ << s << '\n';
  }
  out_->flush();
}

}  // namespace fx::train
