// expect: static assertion failed: fx::nn::Chain: a layer's operator\(\) must be const
#include <fluxion/fluxion.hpp>

struct Scale {
  fx::Tensor a;
  FX_FIELDS(a)
  fx::Tensor operator()(const fx::Tensor& x) { return x * a; }  // not const
};

int main() {
  auto model = fx::nn::Chain(Scale{fx::ones({2})}, fx::nn::Dense(2, 2));
  (void)model(fx::ones({1, 2}));
}
