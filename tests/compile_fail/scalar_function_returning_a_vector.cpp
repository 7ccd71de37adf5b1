// expect: static assertion failed: fx::gradient: f must return one number.*fx::jacobian
#include <fluxion/fluxion.hpp>

int main() {
  auto g = fx::gradient(
      [](const auto& v) {
        return std::vector{v[0] * v[1], v[1]};
      },
      std::vector<double>{1, 2});
  (void)g;
}
