// History: the metrics a training run records (training loss, validation metrics, learning
// rate), kept in memory, logged to CSV as they come, and read back for plots.
//
//   fx::train::History h;
//   h.add({.step = 100, .epoch = 1, .name = "loss", .value = 0.52});
//   for (auto [step, value] : h.series("loss")) std::cout << step << " " << value << "\n";
//   h.write_csv("run/metrics.csv");                    // step,epoch,metric,value
//   fx::train::History back = fx::train::History::read_csv("run/metrics.csv");
//
// One row per value ("long" CSV), so metrics recorded at different rates (a loss every few
// steps, a validation accuracy every epoch) share a file without empty cells. Values are written
// with enough digits to read back exactly.
#pragma once
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fx::train {

struct Record {
  int64_t step = 0;   // optimiser steps taken when it was recorded
  int64_t epoch = 0;  // the epoch it belongs to (1-based)
  std::string name;
  double value = 0;
};

class History {
 public:
  void add(Record r) { records_.push_back(std::move(r)); }
  const std::vector<Record>& records() const { return records_; }
  bool empty() const { return records_.empty(); }

  // Metric names in first-recorded order.
  std::vector<std::string> names() const;
  // (step, value) of every record of `name`, in order.
  std::vector<std::pair<int64_t, double>> series(const std::string& name) const;
  std::optional<double> last(const std::string& name) const;
  // Drops records made after `step` (a resumed run replaces them).
  void truncate_after(int64_t step);

  void write_csv(const std::string& path) const;     // atomic
  static History read_csv(const std::string& path);  // fx::Error naming the line on bad input

 private:
  std::vector<Record> records_;
};

// The CSV header line and one record as a CSV line (without newline).
inline constexpr const char* kHistoryCsvHeader = "step,epoch,metric,value";
std::string csv_line(const Record& r);

// Appends records to a CSV file as they are made, flushing each, so a killed run keeps its log.
class CsvLog {
 public:
  CsvLog() = default;
  // append: keep the existing rows (a resumed run); otherwise start the file afresh.
  CsvLog(const std::string& path, bool append);
  void write(const Record& r);
  bool is_open() const { return out_.is_open(); }

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace fx::train
