// Differentiates a small function through an installed fluxion; exits non-zero on a wrong answer.
#include <cmath>
#include <cstdio>
#include <fluxion/fluxion.hpp>  // every installed header compiles in a project of its own

int main() {
  fx::Tensor x = fx::tensor({0.25, -0.5}, fx::f64);
  fx::Tensor g = fx::gradient([](const fx::Tensor& x) { return fx::sum(fx::tanh(x)); }, x);
  double want = 1 - std::tanh(0.25) * std::tanh(0.25);
  std::printf("consumer: d/dx sum(tanh(x)) at 0.25 = %.12f (want %.12f)\n",
              fx::to_vector<double>(g)[0], want);
  return std::abs(fx::to_vector<double>(g)[0] - want) < 1e-12 ? 0 : 1;
}
