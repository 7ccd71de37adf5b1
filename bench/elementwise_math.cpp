// Transcendental elementwise ops on 2^20 contiguous elements, one thread: fluxion's tuned kernel
// (Highway SIMD polynomials), libtorch's (SLEEF), and a plain <cmath> loop, in one run.
// Medians of repeated calls.
//
//   ./build/bench/elementwise_math [--n 1048576] [--reps 15]
//   vecmath_f32_exp_fluxion_ns=... vecmath_f32_exp_libm_ns=... vecmath_f32_exp_torch_ns=...
//   vecmath_f32_exp_speedup_vs_libm=... vecmath_f32_exp_ratio_fluxion_torch=...
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <fluxion/ops.hpp>
#ifdef FLUXION_HAVE_TORCH
#include <torch/torch.h>
#endif

namespace {

double median_seconds(int reps, const std::function<void()>& f) {
  f();  // warm-up: allocator pools, pages
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Fn {
  const char* name;
  double lo, hi;  // input range
  fx::Tensor (*fluxion)(const fx::Tensor&);
  double (*libm)(double);
};

template <class T>
std::vector<T> libm_loop(const std::vector<T>& x, double (*f)(double)) {
  std::vector<T> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = T(f(double(x[i])));
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 1 << 20;
  int reps = 15;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--n") n = std::atoll(argv[i + 1]);
    else if (k == "--reps") reps = std::max(1, std::atoi(argv[i + 1]));
  }
  omp_set_num_threads(1);
#ifdef FLUXION_HAVE_TORCH
  torch::set_num_threads(1);
#endif
  const Fn fns[] = {
      {"exp", -10, 10, [](const fx::Tensor& x) { return fx::exp(x); },
       [](double v) { return std::exp(v); }},
      {"log", 0.01, 100, [](const fx::Tensor& x) { return fx::log(x); },
       [](double v) { return std::log(v); }},
      {"tanh", -5, 5, [](const fx::Tensor& x) { return fx::tanh(x); },
       [](double v) { return std::tanh(v); }},
      {"sigmoid", -10, 10, [](const fx::Tensor& x) { return fx::sigmoid(x); },
       [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"sin", -10, 10, [](const fx::Tensor& x) { return fx::sin(x); },
       [](double v) { return std::sin(v); }},
  };
  fx::Generator gen(3);
  for (fx::DType dt : {fx::f32, fx::f64}) {
    for (const Fn& f : fns) {
      fx::Tensor x = fx::uniform({n}, f.lo, f.hi, gen, dt);
      const std::string key = std::string("vecmath_") + fx::dtype_name(dt) + "_" + f.name;
      double tf = median_seconds(reps, [&] { (void)f.fluxion(x); });
      double tl;
      if (dt == fx::f32) {
        auto xs = fx::to_vector<float>(x);
        tl = median_seconds(reps, [&] { (void)libm_loop(xs, f.libm); });
      } else {
        auto xs = fx::to_vector<double>(x);
        tl = median_seconds(reps, [&] { (void)libm_loop(xs, f.libm); });
      }
      std::printf("%s_fluxion_ns=%.3f\n%s_libm_ns=%.3f\n%s_speedup_vs_libm=%.2f\n", key.c_str(),
                  tf / double(n) * 1e9, key.c_str(), tl / double(n) * 1e9, key.c_str(), tl / tf);
#ifdef FLUXION_HAVE_TORCH
      auto v = fx::to_vector<double>(x);
      torch::Tensor tx = torch::from_blob(v.data(), {n}, torch::kDouble)
                             .to(dt == fx::f32 ? torch::kFloat : torch::kDouble);
      std::string nm = f.name;
      double tt = median_seconds(reps, [&] {
        (void)(nm == "exp"       ? torch::exp(tx)
               : nm == "log"     ? torch::log(tx)
               : nm == "tanh"    ? torch::tanh(tx)
               : nm == "sigmoid" ? torch::sigmoid(tx)
                                 : torch::sin(tx));
      });
      std::printf("%s_torch_ns=%.3f\n%s_ratio_fluxion_torch=%.3f\n", key.c_str(),
                  tt / double(n) * 1e9, key.c_str(), tf / tt);
#endif
    }
  }
  return 0;
}
