// expect: static assertion failed: fx::gradient/pullback: an argument holds plain numbers
// A double listed in FX_FIELDS of a struct the function takes by its own type: tensor code
// cannot trace it, and its "gradient" used to be a copy of its value.
#include <fluxion/fluxion.hpp>

struct M {
  fx::Tensor w;
  double s;
  FX_FIELDS(w, s)
};

int main() {
  M m{fx::ones({2}, fx::f64), 3.0};
  auto g = fx::gradient([](const M& p) { return fx::sum(p.w * p.s); }, m);
  (void)g;
}
