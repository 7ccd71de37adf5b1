// Matrix product throughput: fx::matmul (f32, n x n @ n x n) beside cblas_sgemm (OpenBLAS) and
// dnnl_sgemm (oneDNN) called directly on the same buffers, in the same run, at 1 and 2 threads.
// fx::matmul sends f32 products up to about 400^3 to oneDNN and larger ones to OpenBLAS.
//
//   ./build/bench/matmul [--reps 7] [--sizes 64,128,256,512,1024]
//   matmul_t1_n256_fluxion_gflops=...  matmul_t1_n256_openblas_gflops=...
//   matmul_t1_n256_onednn_gflops=...
//   matmul_ratio_256=...        (fluxion / OpenBLAS at 1 thread: 1 is parity)
//   matmul_t2_ratio_256=...     (the same at 2 threads)
//
// Each point is the median of --reps timings; each timing repeats the product until it has run
// at least 50 ms. The three alternate inside each repetition so noise lands on all of them.
#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <fluxion/ops.hpp>

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Seconds per call, repeating fn until >= min_s has passed.
double per_call(const std::function<void()>& fn, double min_s) {
  int64_t n = 0;
  auto t0 = std::chrono::steady_clock::now();
  double el = 0;
  do {
    fn();
    ++n;
    el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (el < min_s);
  return el / double(n);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7;
  std::vector<int64_t> sizes{64, 128, 256, 512, 1024};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--reps") reps = std::max(5, std::atoi(argv[i + 1]));
    else if (k == "--sizes") {
      sizes.clear();
      for (char* p = std::strtok(argv[i + 1], ","); p; p = std::strtok(nullptr, ","))
        sizes.push_back(std::atoll(p));
    }
  }
  fx::Generator gen(3);
  std::printf("%-8s %-6s %14s %14s %14s %8s\n", "threads", "n", "fluxion GF/s", "openblas GF/s",
              "onednn GF/s", "ratio");
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    if (openblas_set_num_threads) openblas_set_num_threads(threads);
    for (int64_t n : sizes) {
      fx::Tensor a = fx::randn({n, n}, gen), b = fx::randn({n, n}, gen);
      std::vector<float> c(size_t(n * n));
      const float* pa = a.data<float>();
      const float* pb = b.data<float>();
      auto run_fx = [&] { fx::Tensor y = fx::matmul(a, b); };
      auto run_blas = [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f, pa,
                    int(n), pb, int(n), 0.0f, c.data(), int(n));
      };
      auto run_dnnl = [&] { dnnl_sgemm('N', 'N', n, n, n, 1.0f, pa, n, pb, n, 0.0f, c.data(), n); };
      run_fx();
      run_dnnl();
      run_blas();
      // Same result (sanity).
      fx::Tensor y = fx::matmul(a, b);
      double maxdiff = 0;
      for (int64_t i = 0; i < n * n; ++i)
        maxdiff = std::max(maxdiff, double(std::abs(y.data<float>()[i] - c[size_t(i)])));
      std::vector<double> tf, tb, td;
      for (int r = 0; r < reps; ++r) {
        tf.push_back(per_call(run_fx, 0.05));
        tb.push_back(per_call(run_blas, 0.05));
        td.push_back(per_call(run_dnnl, 0.05));
      }
      double flops = 2.0 * double(n) * double(n) * double(n);
      double gf = flops / median(tf) * 1e-9, gb = flops / median(tb) * 1e-9;
      double gd = flops / median(td) * 1e-9;
      std::printf("%-8d %-6lld %14.2f %14.2f %14.2f %8.3f%s\n", threads, (long long)n, gf, gb, gd,
                  gf / gb, maxdiff > 1e-2 * double(n) ? "  (results differ!)" : "");
      std::printf("matmul_t%d_n%lld_fluxion_gflops=%.3f\n", threads, (long long)n, gf);
      std::printf("matmul_t%d_n%lld_openblas_gflops=%.3f\n", threads, (long long)n, gb);
      std::printf("matmul_t%d_n%lld_onednn_gflops=%.3f\n", threads, (long long)n, gd);
      if (threads == 1) std::printf("matmul_ratio_%lld=%.4f\n", (long long)n, gf / gb);
      else std::printf("matmul_t2_ratio_%lld=%.4f\n", (long long)n, gf / gb);
    }
  }
  return 0;
}
