// A small command-line parser shared by the examples: typed options, `--name value` and
// `--name=value`, `--help` on standard output, and every mistake named, with its reason, on
// standard error.
//
//   int epochs = 1;
//   uint64_t seed = 1;
//   std::string data = "/usr/share/datasets/fashion-mnist";
//   bool quiet = false;
//   fx::examples::Cli cli("train", "Trains a model.");
//   cli.option("--epochs", "N", "passes over the data", epochs, {.min = 1});
//   cli.option("--seed", "S", "seed of the initial weights", seed);
//   cli.option("--data", "DIR", "where the dataset is", data);
//   cli.flag("--quiet", "no progress bar", quiet);
//   cli.parse_or_exit(argc, argv);   // --help: usage on stdout, exit 0; a mistake: exit 2
//
// Numbers must be whole text of their type: `--epochs 1.5`, `--epochs 2x` and `--seed -3` (an
// unsigned option) are mistakes, where std::stoi would read 1 and 2 and std::stoull would wrap
// -3 to 18446744073709551613. Header-only because only the examples use it.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace fx::examples {

// Accepted range of a numeric option (inclusive) and, when the value's own printing would
// mislead (0 meaning "all threads"), the default as the help should show it.
template <class T>
struct OptionSpec {
  std::optional<T> min = {}, max = {};
  std::string shown_default = {};
};

class Cli {
 public:
  // What parse() found: run the program, print the help, or stop on a mistake.
  struct Outcome {
    enum Kind { run, help, mistake } kind = run;
    std::string error;  // a mistake's reason: "--epochs must be at least 0, got '-1'"
  };

  Cli(std::string program, std::string summary)
      : program_(std::move(program)), summary_(std::move(summary)) {}

  // A valued option (`--name VALUE` or `--name=VALUE`) that writes into `target`. T is an
  // integer type, a floating-point type or std::string; `target` keeps its value as the default.
  template <class T>
  Cli& option(std::string name, std::string metavar, std::string help, T& target,
              OptionSpec<T> spec = {}) {
    static_assert(std::is_arithmetic_v<T> || std::is_same_v<T, std::string>,
                  "Cli::option: numbers and std::string only");
    std::string shown = spec.shown_default;
    if (shown.empty() && !(std::is_same_v<T, std::string> && format(target).empty()))
      shown = format(target);
    options_.push_back(
        {std::move(name), std::move(metavar), std::move(help), std::move(shown),
         [&target, spec](std::string_view text) { return assign(text, target, spec); }});
    return *this;
  }

  // A switch without a value: present sets `target` to true.
  Cli& flag(std::string name, std::string help, bool& target) {
    options_.push_back({std::move(name), "", std::move(help), "", [&target](std::string_view) {
                          target = true;
                          return std::string();
                        }});
    return *this;
  }

  // Parses argv[1..argc) into the targets. Stops at the first mistake, naming it in `error`.
  Outcome parse(int argc, const char* const* argv) const {
    for (int i = 1; i < argc; ++i) {
      std::string_view arg = argv[i];
      if (arg == "-h" || arg == "--help") return {Outcome::help, ""};
      if (arg.size() < 3 || arg.substr(0, 2) != "--")
        return fail("unexpected argument '" + std::string(arg) + "' (options start with --)");
      const size_t eq = arg.find('=');
      const std::string_view name = arg.substr(0, eq);
      const Option* opt = find(name);
      if (!opt) return fail(unknown(name));
      std::string_view value;
      if (opt->metavar.empty()) {
        if (eq != std::string_view::npos) return fail(std::string(name) + " takes no value");
      } else if (eq != std::string_view::npos) {
        value = arg.substr(eq + 1);
      } else if (i + 1 < argc && std::string_view(argv[i + 1]).substr(0, 2) != "--") {
        value = argv[++i];  // "-1" is a value (to be judged); "--x" is the next option
      } else {
        return fail(std::string(name) + " needs a value " + opt->metavar);
      }
      if (!opt->metavar.empty() && value.empty())
        return fail(std::string(name) + " needs a value " + opt->metavar + ", got an empty one");
      if (std::string why = opt->set(value); !why.empty())
        return fail(std::string(name) + " " + why);
    }
    return {};
  }

  // parse(), then: help on standard output and exit 0, or the mistake on standard error and
  // exit 2 (the usual code for a command-line mistake).
  void parse_or_exit(int argc, const char* const* argv) const {
    const Outcome out = parse(argc, argv);
    if (out.kind == Outcome::help) {
      std::cout << usage();
      std::exit(0);
    }
    if (out.kind == Outcome::mistake) {
      std::cerr << program_ << ": " << out.error << "\n"
                << "run '" << program_ << " --help' for the options\n";
      std::exit(2);
    }
  }
  void parse_or_exit(int argc, char** argv) const {
    parse_or_exit(argc, const_cast<const char* const*>(argv));
  }

  std::string usage() const {
    std::ostringstream os;
    os << "usage: " << program_;
    for (const Option& o : options_)
      os << " [" << o.name << (o.metavar.empty() ? "" : " " + o.metavar) << "]";
    os << "\n" << summary_ << "\n\noptions (--name VALUE or --name=VALUE):\n";
    size_t width = std::string_view("-h, --help").size();
    for (const Option& o : options_) width = std::max(width, label(o).size());
    for (const Option& o : options_) {
      os << "  " << label(o) << std::string(width - label(o).size() + 2, ' ') << o.help;
      if (!o.shown_default.empty()) os << " (default " << o.shown_default << ")";
      os << "\n";
    }
    os << "  -h, --help" << std::string(width - 10 + 2, ' ') << "print this help and exit\n";
    return os.str();
  }

 private:
  struct Option {
    std::string name, metavar, help, shown_default;
    std::function<std::string(std::string_view)> set;  // empty result: accepted; else the reason
  };

  static Outcome fail(std::string why) { return {Outcome::mistake, std::move(why)}; }
  static std::string label(const Option& o) {
    return o.metavar.empty() ? o.name : o.name + " " + o.metavar;
  }

  const Option* find(std::string_view name) const {
    for (const Option& o : options_)
      if (o.name == name) return &o;
    return nullptr;
  }

  // "unknown option '--epoch'", with the nearest known name when one is a typo away.
  std::string unknown(std::string_view name) const {
    std::string msg = "unknown option '" + std::string(name) + "'";
    const Option* best = nullptr;
    size_t best_d = 3;  // more than two edits away is no longer a typo
    for (const Option& o : options_)
      if (size_t d = edit_distance(name, o.name); d < best_d) best = &o, best_d = d;
    if (best) msg += " (did you mean " + best->name + "?)";
    return msg;
  }

  static size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    return row[b.size()];
  }

  template <class T>
  static std::string format(const T& v) {
    std::ostringstream os;
    os << v;
    return os.str();
  }

  // Reads `text` into `target`; returns why it cannot (e.g. "needs a whole number, got '1.5'").
  template <class T>
  static std::string assign(std::string_view text, T& target, const OptionSpec<T>& spec) {
    if constexpr (std::is_same_v<T, std::string>) {
      target = std::string(text);
      return "";
    } else {
      const std::string got = ", got '" + std::string(text) + "'";
      const char* kind = std::is_integral_v<T> ? "a whole number" : "a number";
      if (std::is_unsigned_v<T> && text.front() == '-') return "must not be negative" + got;
      T v{};
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec == std::errc::result_out_of_range)
        return "is out of range" + got + " (at most " + format(std::numeric_limits<T>::max()) + ")";
      if (ec != std::errc() || end != text.data() + text.size())
        return std::string("needs ") + kind + got;
      if (spec.min && v < *spec.min) return "must be at least " + format(*spec.min) + got;
      if (spec.max && v > *spec.max) return "must be at most " + format(*spec.max) + got;
      target = v;
      return "";
    }
  }

  std::string program_, summary_;
  std::vector<Option> options_;
};

}  // namespace fx::examples
