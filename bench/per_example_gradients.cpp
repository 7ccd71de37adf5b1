// Per-example gradients of the Fashion-MNIST MLP (784-256-128-10, relu, f32): fx::vmap of
// fx::gradient beside the loop of single-example gradients it replaces, in the same run, on
// the first --batch training images. Prints the median time of each (--reps runs, interleaved),
// their ratio, and the largest relative difference between the two results.
//
//   build/bench/per_example_gradients [--batch 128] [--reps 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/ad/vmap.hpp>
#include <fluxion/data/idx.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>

namespace {

using Mlp = fx::nn::Chain<fx::nn::Dense, fx::nn::Dense, fx::nn::Dense>;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 128;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--batch")) batch = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: per_example_gradients [--batch N] [--reps N]\n");
      return 2;
    }
  }
  auto train = fx::data::fashion_mnist();
  fx::Tensor xs = fx::slice(train.images, 0, 0, batch), ys = fx::slice(train.labels, 0, 0, batch);
  fx::Generator gen(1);
  Mlp model(fx::nn::Dense(784, 256, fx::relu, gen), fx::nn::Dense(256, 128, fx::relu, gen),
            fx::nn::Dense(128, 10, fx::identity, gen));

  auto grad_one = [&](const fx::Tensor& x, const fx::Tensor& y) {
    return fx::gradient(
        [&](const Mlp& m) {
          return fx::logitcrossentropy(m(fx::reshape(x, {1, 784})), fx::reshape(y, {1}));
        },
        model);
  };
  auto by_vmap = [&] { return fx::vmap(grad_one)(xs, ys); };
  auto by_loop = [&] {
    std::vector<Mlp> each;
    for (int64_t b = 0; b < batch; ++b)
      each.push_back(grad_one(fx::select(xs, 0, b), fx::select(ys, 0, b)));
    Mlp out = each[0];
    std::vector<fx::Tensor> parts;
    size_t leaf = 0;
    fx::zip_tensors(
        [&](fx::Tensor& t) {
          parts.clear();
          for (Mlp& g : each) {
            size_t k = 0;
            fx::zip_tensors(
                [&](fx::Tensor& u) {
                  if (k++ == leaf) parts.push_back(u);
                },
                g);
          }
          t = fx::stack(parts, 0);
          ++leaf;
        },
        out);
    return out;
  };

  Mlp gv = by_vmap(), gl = by_loop();
  double max_rel = 0;
  fx::zip_tensors(
      [&](fx::Tensor& a, fx::Tensor& b) {
        const double scale = std::max(1e-30, fx::max(fx::abs(b)).item());
        max_rel = std::max(max_rel, fx::max(fx::abs(a - b)).item() / scale);
      },
      gv, gl);

  std::vector<double> tv, tl;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    (void)by_vmap();
    tv.push_back(seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    (void)by_loop();
    tl.push_back(seconds_since(t0));
  }
  const double v = median(tv), l = median(tl);
  std::printf("per_example_batch=%lld\n", static_cast<long long>(batch));
  std::printf("per_example_vmap_ms=%.3f\n", v * 1e3);
  std::printf("per_example_loop_ms=%.3f\n", l * 1e3);
  std::printf("per_example_vmap_speedup=%.3f\n", l / v);
  std::printf("per_example_max_rel_diff=%.3g\n", max_rel);
  return 0;
}
