// fx::fft on one thread over batches of lines whose lengths take each path of the CPU kernel
// (power of two, mixed radix, a prime through KISS FFT's generic butterfly, a large prime through
// Bluestein), beside libtorch's torch::fft::fft when built with it. Medians of repeated calls.
// Build twice, with and without -DFLUXION_WITH_FFTW=ON, to compare the two FFT libraries
// (docs/dependencies.md has the figures).
//
//   OMP_NUM_THREADS=1 ./build/bench/fft [--reps 21]
//   fft_c64_1024x256_fluxion_us=... fft_c64_1024x256_torch_us=... ...
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <fluxion/ops.hpp>
#ifdef FLUXION_HAVE_TORCH
#include <torch/torch.h>
#endif

namespace {

double median_us(int reps, const std::function<void()>& f) {
  f();  // warm-up: allocator pools, pages
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 21;
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  omp_set_num_threads(1);
#ifdef FLUXION_HAVE_TORCH
  torch::set_num_threads(1);
#endif
  struct Case {
    int64_t n, lines;
  };
  // 2^18 complex values each, except the primes (fewer lines: the generic butterfly is O(n p)).
  const std::vector<Case> cases = {{1024, 256}, {1000, 256}, {61 * 64, 64},
                                   {1009, 256}, {4099, 64},  {65536, 4}};
  for (fx::DType dt : {fx::c64, fx::c128}) {
    const char* dname = dt == fx::c64 ? "c64" : "c128";
    for (const Case& c : cases) {
      fx::Tensor x = fx::randn({c.lines, c.n}, dt == fx::c64 ? fx::f32 : fx::f64).astype(dt);
      const std::string key =
          std::string("fft_") + dname + "_" + std::to_string(c.n) + "x" + std::to_string(c.lines);
      std::printf("%s_fluxion_us=%.1f\n", key.c_str(), median_us(reps, [&] { (void)fx::fft(x); }));
#ifdef FLUXION_HAVE_TORCH
      auto tx = torch::randn({c.lines, c.n},
                             dt == fx::c64 ? torch::kComplexFloat : torch::kComplexDouble);
      std::printf("%s_torch_us=%.1f\n", key.c_str(),
                  median_us(reps, [&] { (void)torch::fft::fft(tx); }));
#endif
    }
  }
}
