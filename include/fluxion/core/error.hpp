// fx::Error: the one exception type fluxion throws for bad input.
//
//   fx::Tensor a = fx::ones({3, 4}), b = fx::ones({5, 6});
//   try { fx::matmul(a, b); }
//   catch (const fx::Error& e) { std::cerr << e.what(); }
//   // "fx::matmul: (3, 4) @ (5, 6): inner dimensions 4 and 5 differ"
//
// Messages always start with the op's name and include the offending shapes, so a user can find
// the failing line without a debugger. FX_CHECK builds such a message only when the check fails.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace fx {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

namespace detail {
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw Error(os.str());
}
}  // namespace detail

}  // namespace fx

// FX_CHECK(cond, "fx::op: ", shape, " must ...") throws fx::Error with the parts concatenated.
#define FX_CHECK(cond, ...)            \
  do {                                 \
    if (!(cond)) [[unlikely]]          \
      ::fx::detail::fail(__VA_ARGS__); \
  } while (0)
