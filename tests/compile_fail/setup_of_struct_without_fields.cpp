// expect: fx::require_traversable\(\) \[with T = Forgotten; .*"fx::optim::setup"
// An optimiser set up on a struct that declares no FX_FIELDS would hold no state and never
// train it: fx::optim::setup refuses it at compile time, naming the type.
#include <fluxion/fluxion.hpp>

struct Forgotten {
  fx::Tensor w;
};

int main() {
  Forgotten m{fx::ones({2})};
  auto opt = fx::optim::setup(fx::optim::Adam{}, m);
  (void)opt;
}
