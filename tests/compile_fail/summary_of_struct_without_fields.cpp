// expect: fx::require_traversable\(\) \[with T = Forgotten
// fx::nn::summary of a model that declares no FX_FIELDS would print nothing.
#include <fluxion/fluxion.hpp>

struct Forgotten {
  fx::Tensor w;
};

int main() {
  Forgotten m{fx::ones({2})};
  (void)fx::nn::summary(m);
}
