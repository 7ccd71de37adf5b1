// History bookkeeping and its CSV form.
#include "fluxion/train/history.hpp"

#include <charconv>
#include <cmath>
#include <sstream>
#include <system_error>

#include "fluxion/core/error.hpp"
#include "fluxion/io/atomic_file.hpp"

namespace fx::train {

std::vector<std::string> History::names() const {
  std::vector<std::string> out;
  for (const Record& r : records_) {
    bool seen = false;
    for (const std::string& n : out) seen = seen || n == r.name;
    if (!seen) out.push_back(r.name);
  }
  return out;
}

std::vector<std::pair<int64_t, double>> History::series(const std::string& name) const {
  std::vector<std::pair<int64_t, double>> out;
  for (const Record& r : records_)
    if (r.name == name) out.emplace_back(r.step, r.value);
  return out;
}

std::optional<double> History::last(const std::string& name) const {
  for (auto it = records_.rbegin(); it != records_.rend(); ++it)
    if (it->name == name) return it->value;
  return std::nullopt;
}

void History::truncate_after(int64_t step) {
  std::erase_if(records_, [&](const Record& r) { return r.step > step; });
}

std::string csv_line(const Record& r) {
  // Metric names come from code, but a comma or quote would still break the columns.
  FX_CHECK(r.name.find_first_of(",\"\n\r") == std::string::npos,
           "fx::train::History: metric name '", r.name, "' contains a comma, quote or newline");
  char buf[64];
  auto end = std::to_chars(buf, buf + sizeof buf, r.value).ptr;  // shortest exact form
  return std::to_string(r.step) + "," + std::to_string(r.epoch) + "," + r.name + "," +
         std::string(buf, end);
}

void History::write_csv(const std::string& path) const {
  std::string text = std::string(kHistoryCsvHeader) + "\n";
  for (const Record& r : records_) text += csv_line(r) + "\n";
  io::write_file_atomically(path, text);
}

History History::read_csv(const std::string& path) {
  std::ifstream in(path);
  FX_CHECK(in.is_open(), "fx::train::History::read_csv: cannot open '", path, "'");
  std::string line;
  FX_CHECK(std::getline(in, line) && line == kHistoryCsvHeader, "fx::train::History::read_csv: '",
           path, "' does not start with '", kHistoryCsvHeader, "'");
  History h;
  for (int64_t lineno = 2; std::getline(in, line); ++lineno) {
    if (line.empty()) continue;
    std::string cells[4];
    std::istringstream ls(line);
    int n = 0;
    while (n < 4 && std::getline(ls, cells[n], ',')) ++n;
    std::string extra;
    FX_CHECK(n == 4 && !std::getline(ls, extra), "fx::train::History::read_csv: '", path, "' line ",
             lineno, " has not 4 cells: ", line);
    Record r;
    r.name = cells[2];
    auto number = [&](const std::string& s, auto& v) {
      auto res = std::from_chars(s.data(), s.data() + s.size(), v);
      FX_CHECK(res.ec == std::errc() && res.ptr == s.data() + s.size(),
               "fx::train::History::read_csv: '", path, "' line ", lineno, ": '", s,
               "' is not a number");
    };
    number(cells[0], r.step);
    number(cells[1], r.epoch);
    if (cells[3] == "nan" || cells[3] == "-nan") r.value = std::nan("");
    else number(cells[3], r.value);
    h.add(std::move(r));
  }
  return h;
}

CsvLog::CsvLog(const std::string& path, bool append) : path_(path) {
  bool has_header = false;
  if (append) {
    std::ifstream in(path);
    std::string first;
    has_header = in.is_open() && std::getline(in, first) && first == kHistoryCsvHeader;
  }
  out_.open(path, has_header ? std::ios::app : std::ios::trunc);
  FX_CHECK(out_.is_open(), "fx::train::CsvLog: cannot open '", path, "' for writing");
  if (!has_header) out_ << kHistoryCsvHeader << "\n" << std::flush;
}

void CsvLog::write(const Record& r) {
  out_ << csv_line(r) << "\n" << std::flush;
  FX_CHECK(out_.good(), "fx::train::CsvLog: writing '", path_, "' failed");
}

}  // namespace fx::train
