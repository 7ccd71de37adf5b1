// The small command-line reader the examples share: `--name value` pairs of integers.
//
//   std::map<std::string, int64_t> args{{"iters", 300}, {"seed", 1}};   // the defaults
//   cli::parse_options(argc, argv, args, "neural_sde");   // --iters 20 sets args["iters"]
#pragma once
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>

namespace cli {

// --name value pairs into `options` (whose entries are the defaults); exits on a bad one.
inline void parse_options(int argc, char** argv, std::map<std::string, int64_t>& options,
                          const char* program) {
  auto usage = [&](int code) {
    std::cerr << "usage: " << program;
    for (auto& [k, v] : options) std::cerr << " [--" << k << " N (default " << v << ")]";
    std::cerr << "\n";
    std::exit(code);
  };
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "-h" || k == "--help") usage(0);
    if (k.rfind("--", 0) != 0 || !options.count(k.substr(2)) || i + 1 >= argc) usage(2);
    try {
      options[k.substr(2)] = std::stoll(argv[++i]);
    } catch (const std::logic_error&) {
      usage(2);
    }
  }
}

}  // namespace cli
