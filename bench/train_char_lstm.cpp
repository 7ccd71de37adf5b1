// Training step time of examples/char_lstm's network (embedding -> LSTM -> Dense to the
// vocabulary, next-character cross-entropy, Adam) in fluxion beside libtorch (torch::nn::Embedding,
// torch::nn::LSTM, torch::nn::Linear, torch::optim::Adam) in the same process, with the same
// thread count, the same initial weights and the same batches of perldiag.pod.
//
//   ./build/bench/train_char_lstm                    // 1 thread, batch 32 x 64, hidden 256
//   ./build/bench/train_char_lstm --threads 2 --hidden 512 --rounds 7
//   lstm_fluxion_step_ms=...  lstm_libtorch_step_ms=...  lstm_ratio_t1=...  (fluxion / libtorch)
//
// Each of --rounds rounds times --steps training steps of fluxion, then the same steps of
// libtorch (so that noise from other processes lands on both); every figure is the median over
// rounds of the mean step time, after one untimed warm-up round. With one thread everything runs
// on the calling thread and the time is that thread's CPU time, which a busy shared machine
// disturbs far less than wall time; with more it is wall time. Wall-clock medians are printed
// as well (lstm_*_step_wall_ms). So are the losses the two reach (lstm_*_loss_last): from the
// same start on the same batches they agree to a few digits, a check that both train the same
// network. Without libtorch (CMake found no Torch) only the fluxion lines are printed.
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/dense.hpp>
#include <fluxion/nn/losses.hpp>
#include <fluxion/nn/lstm.hpp>
#include <fluxion/ops/index.hpp>
#include <fluxion/optim/rules.hpp>
#include <fluxion/optim/update.hpp>

#ifdef FLUXION_BENCH_TORCH
#include <torch/torch.h>
#endif

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

struct Args {
  int threads = 1;
  int64_t steps = 10, rounds = 5, batch = 32, seq = 64, hidden = 256, embed = 32;
  std::string text;
  uint64_t seed = 1;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    auto num = [&] { return std::max<int64_t>(1, std::atoll(v.c_str())); };
    if (k == "--threads") a.threads = int(num());
    else if (k == "--steps") a.steps = num();
    else if (k == "--rounds") a.rounds = num();
    else if (k == "--batch") a.batch = num();
    else if (k == "--seq") a.seq = num();
    else if (k == "--hidden") a.hidden = num();
    else if (k == "--embed") a.embed = num();
    else if (k == "--text") a.text = v;
    else if (k == "--seed") a.seed = std::strtoull(v.c_str(), nullptr, 10);
    else {
      std::cerr << "usage: train_char_lstm [--threads T] [--steps K] [--rounds R] [--batch N] "
                   "[--seq T] [--hidden H] [--embed E] [--text FILE] [--seed S]\n";
      std::exit(2);
    }
  }
  if (argc % 2 == 0) {
    std::cerr << "train_char_lstm: " << argv[argc - 1] << " needs a value\n";
    std::exit(2);
  }
  return a;
}

// The example's default text: perldiag.pod of the installed Perl.
std::string default_text() {
  std::error_code ec;
  for (const auto& dir : std::filesystem::directory_iterator("/usr/share/perl", ec)) {
    auto p = dir.path() / "pod" / "perldiag.pod";
    if (std::filesystem::exists(p, ec)) return p.string();
  }
  return "/usr/share/perl/5.36.0/pod/perldiag.pod";
}

// The text as ids into its sorted alphabet of bytes; the vocabulary size in `vocab`.
std::vector<int64_t> read_ids(const std::string& path, int64_t& vocab) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "train_char_lstm: cannot read " << path << "\n";
    std::exit(1);
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::array<int64_t, 256> id{};
  for (unsigned char c : text) id[c] = 1;
  vocab = 0;
  for (auto& v : id) v = v ? vocab++ : -1;
  std::vector<int64_t> ids;
  for (unsigned char c : text) ids.push_back(id[c]);
  return ids;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Milliseconds on the clock that suits the thread count (see the header comment); 0: the wall.
double now_ms(int threads) {
  if (threads == 1) {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
  }
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// examples/char_lstm's CharModel.
struct CharModel {
  fx::Tensor embed;
  fx::nn::LSTM lstm;
  fx::nn::Dense head;
  FX_FIELDS(embed, lstm, head)

  CharModel(int64_t vocab, int64_t e, int64_t hidden, fx::Generator& gen)
      : embed(fx::randn({vocab, e}, gen)),
        lstm(e, hidden, {.gen = &gen}),
        head(hidden, vocab, fx::identity, gen) {}

  fx::Tensor operator()(const fx::Tensor& ids) const {
    const int64_t n = ids.size(0), t = ids.size(1);
    fx::Tensor x = fx::index_select(embed, 0, ids.reshape({n * t})).reshape({n, t, embed.size(1)});
    return head(lstm(x).first);
  }
};

// Every batch either library trains on: (inputs, next characters), each (N, T), as int64.
struct Batch {
  std::vector<int64_t> x, y;
};

#ifdef FLUXION_BENCH_TORCH
struct TorchCharImpl : torch::nn::Module {
  torch::nn::Embedding embed;
  torch::nn::LSTM lstm;
  torch::nn::Linear head;
  TorchCharImpl(int64_t vocab, int64_t e, int64_t hidden)
      : embed(register_module("embed", torch::nn::Embedding(vocab, e))),
        lstm(register_module("lstm",
                             torch::nn::LSTM(torch::nn::LSTMOptions(e, hidden).batch_first(true)))),
        head(register_module("head", torch::nn::Linear(hidden, vocab))) {}
  torch::Tensor forward(const torch::Tensor& ids) { return head(std::get<0>(lstm(embed(ids)))); }
};
TORCH_MODULE(TorchChar);

torch::Tensor to_torch(const fx::Tensor& t) {
  fx::Tensor c = t.contiguous();
  std::vector<int64_t> sizes(c.shape().begin(), c.shape().end());
  return torch::from_blob(c.raw_data(), sizes, torch::kFloat).clone();
}

// libtorch starts from fluxion's initial weights (fluxion's LSTMCell has PyTorch's layout).
void copy_weights(TorchChar& tm, const CharModel& fm) {
  torch::NoGradGuard no_grad;
  tm->embed->weight.copy_(to_torch(fm.embed));
  const auto& cell = fm.lstm.cells.at(0);
  auto p = tm->lstm->named_parameters();
  p["weight_ih_l0"].copy_(to_torch(cell.weight_ih));
  p["weight_hh_l0"].copy_(to_torch(cell.weight_hh));
  p["bias_ih_l0"].copy_(to_torch(cell.bias_ih));
  p["bias_hh_l0"].copy_(to_torch(cell.bias_hh));
  tm->head->weight.copy_(to_torch(fm.head.weight));
  tm->head->bias.copy_(to_torch(fm.head.bias));
}
#endif

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  if (args.text.empty()) args.text = default_text();
  omp_set_num_threads(args.threads);
  if (openblas_set_num_threads) openblas_set_num_threads(args.threads);
#ifdef FLUXION_BENCH_TORCH
  torch::set_num_threads(args.threads);
#endif

  int64_t vocab = 0;
  const std::vector<int64_t> ids = read_ids(args.text, vocab);
  const int64_t N = args.batch, T = args.seq;
  FX_CHECK(int64_t(ids.size()) > T + 1, "train_char_lstm: the text is shorter than a sequence");

  // The batches of all rounds (warm-up included), drawn once: both libraries train on them.
  fx::Generator gen(args.seed);
  std::vector<Batch> batches;
  for (int64_t b = 0; b < (args.rounds + 1) * args.steps; ++b) {
    Batch batch;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t s = int64_t(gen.below(uint64_t(int64_t(ids.size()) - T - 1)));
      batch.x.insert(batch.x.end(), ids.begin() + s, ids.begin() + s + T);
      batch.y.insert(batch.y.end(), ids.begin() + s + 1, ids.begin() + s + T + 1);
    }
    batches.push_back(std::move(batch));
  }

  CharModel model(vocab, args.embed, args.hidden, gen);
  auto opt = fx::optim::setup(fx::optim::Adam(3e-3), model);
  double fx_loss = 0;
  auto fluxion_steps = [&](int64_t first) {
    for (int64_t k = first; k < first + args.steps; ++k) {
      fx::Tensor x = fx::from_vector(batches[size_t(k)].x, {N, T});
      fx::Tensor y = fx::from_vector(batches[size_t(k)].y, {N, T});
      auto [loss, grad] = fx::withgradient(
          [&](const CharModel& m) { return fx::logitcrossentropy(m(x), y); }, model);
      fx::optim::update(opt, model, grad);
      fx_loss = loss.item();  // read every step, as a progress bar would; libtorch does too
    }
  };
#ifdef FLUXION_BENCH_TORCH
  torch::manual_seed(args.seed);
  TorchChar tmodel(vocab, args.embed, args.hidden);
  copy_weights(tmodel, model);
  torch::optim::Adam topt(tmodel->parameters(), torch::optim::AdamOptions(3e-3));
  double torch_loss = 0;
  auto torch_steps = [&](int64_t first) {
    for (int64_t k = first; k < first + args.steps; ++k) {
      auto& b = batches[size_t(k)];
      torch::Tensor x = torch::from_blob(b.x.data(), {N, T}, torch::kLong);
      torch::Tensor y = torch::from_blob(b.y.data(), {N * T}, torch::kLong);
      topt.zero_grad();
      torch::Tensor loss =
          torch::nn::functional::cross_entropy(tmodel->forward(x).reshape({N * T, vocab}), y);
      loss.backward();
      topt.step();
      torch_loss = loss.item<double>();
    }
  };
#endif

  std::printf(
      "# char LSTM: embedding %lld -> LSTM %lld -> Dense %lld, batch %lld x %lld, Adam; "
      "%d thread(s); %lld rounds of %lld steps, median of per-step means (%s)\n",
      (long long)args.embed, (long long)args.hidden, (long long)vocab, (long long)N, (long long)T,
      args.threads, (long long)args.rounds, (long long)args.steps,
      args.threads == 1 ? "thread CPU time" : "wall time");
  // Per-step milliseconds of each round: on the clock above, and on the wall clock.
  std::vector<double> fx_ms, torch_ms, fx_wall, torch_wall;
  auto timed = [&](auto&& steps, int64_t first, std::vector<double>& ms, std::vector<double>& wall,
                   bool keep) {
    const double t0 = now_ms(args.threads), w0 = now_ms(0);
    steps(first);
    if (!keep) return;
    ms.push_back((now_ms(args.threads) - t0) / double(args.steps));
    wall.push_back((now_ms(0) - w0) / double(args.steps));
  };
  for (int64_t r = 0; r <= args.rounds; ++r) {  // round 0: the untimed warm-up
    timed(fluxion_steps, r * args.steps, fx_ms, fx_wall, r > 0);
#ifdef FLUXION_BENCH_TORCH
    timed(torch_steps, r * args.steps, torch_ms, torch_wall, r > 0);
    if (r > 0)
      std::printf(
          "# round %lld: fluxion %.2f ms/step (loss %.4f), libtorch %.2f ms/step (loss "
          "%.4f)\n",
          (long long)r, fx_ms.back(), fx_loss, torch_ms.back(), torch_loss);
#endif
    std::fflush(stdout);
  }
  const std::string t = "_t" + std::to_string(args.threads);
  const double f = median(fx_ms);
  std::printf("lstm_fluxion_step_ms=%.3f\n", f);
  std::printf("lstm_fluxion_step_wall_ms=%.3f\n", median(fx_wall));
  std::printf("lstm_fluxion_loss_last=%.4f\n", fx_loss);
#ifdef FLUXION_BENCH_TORCH
  const double l = median(torch_ms);
  std::printf("lstm_libtorch_step_ms=%.3f\n", l);
  std::printf("lstm_libtorch_step_wall_ms=%.3f\n", median(torch_wall));
  std::printf("lstm_libtorch_loss_last=%.4f\n", torch_loss);
  std::printf("# ratio = fluxion / libtorch step time: below 1 means fluxion is faster\n");
  std::printf("lstm_ratio%s=%.3f\n", t.c_str(), f / l);
#endif
  return 0;
}
