// ProgressBar: step/total, a bar, rate, ETA and named metrics for a training loop.
//
//   fx::data::DataLoader loader(fx::randn({256, 784}), fx::zeros({256}, fx::i64), {.batch = 64});
//   fx::train::ProgressBar bar(loader.size(), {.label = "epoch 1/5"});
//   for (auto [x, y] : loader) {
//     double running_loss = fx::mean(fx::square(x)).item();   // a training step goes here
//     bar.update({{"loss", running_loss}});
//   }
//   bar.finish();
//   // epoch 1/5 [==============>               ] 234/469  152.3 it/s  ETA 0:01  loss=0.4821
//
// On a terminal the line is redrawn in place with '\r' (at most every tty_interval_s, so a fast
// loop does not spend its time printing). Anywhere else -- CI logs, a file, a pipe -- carriage
// returns turn into one giant line or thousands of lines, so the bar prints a whole line at most
// every log_interval_s and once more at finish(). finish() also runs from the destructor.
#pragma once
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fx::train {

struct Metric {
  std::string_view name;
  double value;
};

struct ProgressOptions {
  enum class Mode { automatic, tty, log };
  std::string label = {};       // printed before the bar, e.g. "epoch 1/5"
  int width = 30;               // characters inside the brackets
  double tty_interval_s = 0.1;  // terminal: shortest time between redraws
  double log_interval_s = 5.0;  // not a terminal: shortest time between printed lines
  std::ostream* out = nullptr;  // std::cout when null
  Mode mode = Mode::automatic;  // automatic: tty when `out` is std::cout/cerr on a terminal
};

class ProgressBar {
 public:
  // total <= 0 means unknown: the line shows the count and rate, without bar or ETA.
  explicit ProgressBar(int64_t total, ProgressOptions options = {});
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Advances by `steps` and sets the given metrics (kept, in first-seen order, until changed).
  void update(std::initializer_list<Metric> metrics = {}, int64_t steps = 1);
  void set(std::string_view name, double value);
  // Prints the final line (and the newline a terminal needs); later calls do nothing.
  void finish();

  int64_t step() const { return step_; }
  int64_t total() const { return total_; }
  double elapsed_s() const;
  bool is_tty() const { return tty_; }
  std::string line() const;  // what the bar shows now, without '\r' or newline

 private:
  void draw(bool final);

  using Clock = std::chrono::steady_clock;
  int64_t total_;
  int64_t step_ = 0;
  ProgressOptions opt_;
  std::ostream* out_;
  bool tty_;
  bool finished_ = false;
  size_t last_len_ = 0;
  Clock::time_point start_, last_draw_;
  std::vector<std::pair<std::string, double>> metrics_;
};

// "1:05", "12:00:07": durations as a human reads them in a log.
std::string format_duration(double seconds);

}  // namespace fx::train
