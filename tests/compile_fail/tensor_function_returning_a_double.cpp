// expect: static assertion failed: fx::gradient/withgradient: f takes tensors but returns a plain number
#include <fluxion/fluxion.hpp>

int main() {
  fx::Tensor x = fx::ones({3});
  auto g = fx::gradient([](const fx::Tensor& t) { return fx::sum(t * t).item(); }, x);
  (void)g;
}
