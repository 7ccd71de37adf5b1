// Forward + backward time of the recurrent and attention layers beside libtorch's, on one thread,
// in the same process and on the same inputs, as name=value lines:
//   recurrent_<layer>_fx_ms, recurrent_<layer>_torch_ms, recurrent_<layer>_ratio (fluxion / torch)
// and recurrent_<layer>_composed_fx_ms: the LSTM and GRU with fused = false, stepping the cells
// with fluxion ops instead of oneDNN's RNN primitives (fluxion/nn/recurrent.hpp), and
// recurrent_lstm_forward[_composed]_fx_ms: the LSTM's forward alone, outside differentiation
// for an LSTM and a GRU (N 32, T 64, features 64, hidden 256) and MultiHeadAttention (N 16,
// L 64, E 256, 8 heads). Each figure is the median of --reps timed runs after one warm-up, in
// the thread's CPU time (everything runs on the calling thread), which a busy shared machine
// disturbs far less than wall time.
//
//   ./build/bench/recurrent_layers [--reps 7]
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/gru.hpp>
#include <fluxion/nn/lstm.hpp>
#include <fluxion/nn/multihead_attention.hpp>
#include <fluxion/ops.hpp>

#ifdef FLUXION_BENCH_TORCH
#include <torch/torch.h>
#endif

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

double thread_ms() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

double median_ms(int reps, const std::function<void()>& f) {
  f();  // warm-up: first-touch allocations, oneDNN/BLAS setup
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double a = thread_ms();
    f();
    t.push_back(thread_ms() - a);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void report(const std::string& name, double fx_ms, double torch_ms) {
  std::cout << "recurrent_" << name << "_fx_ms=" << fx_ms << "\n";
  if (torch_ms > 0) {
    std::cout << "recurrent_" << name << "_torch_ms=" << torch_ms << "\n";
    std::cout << "recurrent_" << name << "_ratio=" << fx_ms / torch_ms << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7;
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::string(argv[i]) == "--reps") reps = std::max(1, std::atoi(argv[i + 1]));
  omp_set_num_threads(1);
  if (openblas_set_num_threads) openblas_set_num_threads(1);
#ifdef FLUXION_BENCH_TORCH
  torch::set_num_threads(1);
#endif
  const int64_t N = 32, T = 64, F = 64, H = 256;
  fx::Generator gen(1);
  fx::Tensor x = fx::randn({N, T, F}, gen);

  auto lstm = fx::nn::LSTM(F, H, {.gen = &gen});
  double lstm_fx = median_ms(reps, [&] {
    auto g = fx::gradient([&](const fx::nn::LSTM& m) { return fx::sum(m(x).first); }, lstm);
  });
  auto gru = fx::nn::GRU(F, H, {.gen = &gen});
  double gru_fx = median_ms(reps, [&] {
    auto g = fx::gradient([&](const fx::nn::GRU& m) { return fx::sum(m(x).first); }, gru);
  });
  // The same layers on the composed path (the cells stepped with fluxion ops), for comparison.
  auto lstm_c = lstm;
  lstm_c.fused = false;
  double lstm_composed = median_ms(reps, [&] {
    auto g = fx::gradient([&](const fx::nn::LSTM& m) { return fx::sum(m(x).first); }, lstm_c);
  });
  auto gru_c = gru;
  gru_c.fused = false;
  double gru_composed = median_ms(reps, [&] {
    auto g = fx::gradient([&](const fx::nn::GRU& m) { return fx::sum(m(x).first); }, gru_c);
  });
  // Forward alone, outside any differentiation (inference), both paths.
  double lstm_inf = median_ms(reps, [&] { auto y = lstm(x).first; });
  double lstm_inf_c = median_ms(reps, [&] { auto y = lstm_c(x).first; });
  const int64_t AN = 16, AL = 64, AE = 256;
  auto mha = fx::nn::MultiHeadAttention(AE, 8, {.gen = &gen});
  fx::Tensor ax = fx::randn({AN, AL, AE}, gen);
  double mha_fx = median_ms(reps, [&] {
    auto g = fx::gradient(
        [&](const fx::nn::MultiHeadAttention& m) { return fx::sum(m(ax, ax, ax).first); }, mha);
  });

  double lstm_t = 0, gru_t = 0, mha_t = 0;
#ifdef FLUXION_BENCH_TORCH
  auto tx = torch::randn({N, T, F});
  torch::nn::LSTM tl(torch::nn::LSTMOptions(F, H).batch_first(true));
  lstm_t = median_ms(reps, [&] {
    tl->zero_grad();
    std::get<0>(tl->forward(tx)).sum().backward();
  });
  torch::nn::GRU tg(torch::nn::GRUOptions(F, H).batch_first(true));
  gru_t = median_ms(reps, [&] {
    tg->zero_grad();
    std::get<0>(tg->forward(tx)).sum().backward();
  });
  torch::nn::MultiheadAttention tm(torch::nn::MultiheadAttentionOptions(AE, 8));
  auto tax = torch::randn({AL, AN, AE});
  mha_t = median_ms(reps, [&] {
    tm->zero_grad();
    std::get<0>(tm->forward(tax, tax, tax)).sum().backward();
  });
#endif
  report("lstm", lstm_fx, lstm_t);
  report("gru", gru_fx, gru_t);
  std::cout << "recurrent_lstm_composed_fx_ms=" << lstm_composed << "\n";
  std::cout << "recurrent_gru_composed_fx_ms=" << gru_composed << "\n";
  std::cout << "recurrent_lstm_forward_fx_ms=" << lstm_inf << "\n";
  std::cout << "recurrent_lstm_forward_composed_fx_ms=" << lstm_inf_c << "\n";
  report("mha", mha_fx, mha_t);
}
