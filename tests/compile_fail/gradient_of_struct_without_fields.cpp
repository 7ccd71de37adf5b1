// expect: fx::require_traversable\(\) \[with T = Forgotten
// A struct that forgot FX_FIELDS: its tensor would get no gradient and the optimiser would never
// train it, silently. fx::gradient refuses it at compile time, naming the type.
#include <fluxion/fluxion.hpp>

struct Forgotten {
  fx::Tensor w;
};

int main() {
  Forgotten m{fx::ones({2})};
  auto g = fx::gradient([](const Forgotten& p) { return fx::sum(p.w); }, m);
  (void)g;
}
