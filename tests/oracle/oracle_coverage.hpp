// Built-in primitives whose libtorch comparison lives in an oracle file of its own (the fx::linalg
// primitives: tests/oracle/linalg_oracle_test.cpp) rather than in a row of torch_oracle_test.cpp.
// That file registers them here and checks, in a test of its own, that its cases apply each one;
// OracleTable's coverage test accepts them.
//
//   const fx::oracle::CoveredElsewhere kMine{"linalg_solve", "linalg_svd"};  // at namespace scope
//   bool ok = fx::oracle::covered_elsewhere().count("linalg_svd") == 1;
#pragma once
#include <initializer_list>
#include <set>
#include <string>

namespace fx::oracle {

inline std::set<std::string>& covered_elsewhere() {
  static std::set<std::string> names;
  return names;
}

// Registers primitive names during static initialisation (before any test runs).
struct CoveredElsewhere {
  CoveredElsewhere(std::initializer_list<const char*> names) {
    for (const char* n : names) covered_elsewhere().insert(n);
  }
};

}  // namespace fx::oracle
