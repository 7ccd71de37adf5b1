// Forward + backward time of the normalisation layers at a typical CNN size, fluxion beside
// libtorch in the same process on one thread (run with OMP_NUM_THREADS=1). Prints name=value
// lines: <layer>_fx_ms, <layer>_torch_ms and <layer>_ratio (fluxion / libtorch, median of runs);
// group_norm_composed_ms is GroupNorm written with public ops, what the fused kernel replaces.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>

namespace {

double median_ms(const std::function<void()>& f, int reps = 20) {
  f();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

torch::Tensor to_torch(const fx::Tensor& t) {
  std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
  auto v = fx::to_vector<float>(t);
  return torch::from_blob(v.data(), dims, torch::kFloat).clone();
}

void report(const char* name, double fx_ms, double torch_ms) {
  std::printf("%s_fx_ms=%.3f\n%s_torch_ms=%.3f\n%s_ratio=%.3f\n", name, fx_ms, name, torch_ms, name,
              fx_ms / torch_ms);
}

// Times d/d(x, params) of sum(layer(x) * u) in fluxion and the same in torch.
template <class L>
double time_fx(const L& layer, const fx::Tensor& x, const fx::Tensor& u) {
  return median_ms([&] {
    auto g =
        fx::gradient([&](const L& m, const fx::Tensor& x) { return fx::sum(m(x) * u); }, layer, x);
    (void)g;
  });
}
double time_torch(const std::function<torch::Tensor(const torch::Tensor&)>& f,
                  const torch::Tensor& x0, const torch::Tensor& u,
                  std::vector<torch::Tensor> params) {
  return median_ms([&] {
    auto x = x0.detach().requires_grad_();
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    (f(x) * u).sum().backward();
  });
}

}  // namespace

int main() {
  torch::set_num_threads(1);
  fx::Generator gen(1);
  const int64_t n = 32, c = 64, h = 28, w = 28;
  auto x = fx::randn({n, c, h, w}, gen), u = fx::randn({n, c, h, w}, gen);
  auto tx = to_torch(x), tu = to_torch(u);
  auto tw = torch::ones({c}).requires_grad_(), tb = torch::zeros({c}).requires_grad_();

  auto gn = fx::nn::GroupNorm(c, 8);
  report("group_norm", time_fx(gn, x, u),
         time_torch([&](const torch::Tensor& x) { return torch::group_norm(x, 8, tw, tb); }, tx, tu,
                    {tw, tb}));
  std::printf(
      "group_norm_composed_ms=%.3f\n", median_ms([&] {
        auto g = fx::gradient(
            [&](const fx::nn::GroupNorm& m, const fx::Tensor& x) {
              return fx::sum(
                  fx::nn::detail::group_normalise_composed(x, 8, c, 1e-5, m.scale, m.bias) * u);
            },
            gn, x);
        (void)g;
      }));
  auto in = fx::nn::InstanceNorm(c, fx::identity, true);
  report("instance_norm", time_fx(in, x, u),
         time_torch(
             [&](const torch::Tensor& x) {
               return torch::instance_norm(x, tw, tb, {}, {}, true, 0.1, 1e-5, false);
             },
             tx, tu, {tw, tb}));
  auto bn = fx::nn::BatchNorm(c);
  auto trm = torch::zeros({c}), trv = torch::ones({c});
  report("batch_norm", time_fx(bn, x, u),
         time_torch(
             [&](const torch::Tensor& x) {
               return torch::batch_norm(x, tw, tb, trm, trv, true, 0.1, 1e-5, false);
             },
             tx, tu, {tw, tb}));
  auto xl = fx::randn({n * 64, 512}, gen), ul = fx::randn({n * 64, 512}, gen);
  auto lw = torch::ones({512}).requires_grad_(), lb = torch::zeros({512}).requires_grad_();
  auto ln = fx::nn::LayerNorm(512);
  report(
      "layer_norm", time_fx(ln, xl, ul),
      time_torch(
          [&](const torch::Tensor& x) { return torch::layer_norm(x, {512}, lw, lb, 1e-5, false); },
          to_torch(xl), to_torch(ul), {lw, lb}));
  return 0;
}
