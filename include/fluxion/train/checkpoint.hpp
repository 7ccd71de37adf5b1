// Training checkpoints: one safetensors file holding everything a run needs to continue bit for
// bit -- the model, the optimiser's state (moments and step counters) and learning rate, the
// epoch and step, named random streams, the DataLoader's shuffle position and a schedule
// position.
//
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 32, fx::relu), fx::nn::Dense(32, 10));
//   fx::Tensor x = fx::randn({256, 784}), y = fx::zeros({256}, fx::i64);
//   auto opt = fx::optim::setup(fx::optim::Adam{}, model);
//   fx::Generator gen(1);
//   fx::data::DataLoader loader(x, y, {.batch = 128, .shuffle = true, .seed = 1});
//   fx::train::Checkpoint ck{.epoch = 2, .step = 938, .generators = {{"init", &gen}},
//                            .loader = &loader};
//   fx::train::save_checkpoint("run/checkpoint.safetensors", model, opt, ck);   // atomic
//   // ... later, or in another process:
//   fx::train::Checkpoint back{.generators = {{"init", &gen}}, .loader = &loader};
//   fx::train::load_checkpoint("run/checkpoint.safetensors", model, opt, back);
//   // back.epoch == 2, back.step == 938; model, opt, gen and loader are as they were
//
// Names in the file: "model.<path>", "optimiser.<path>" (as fx::io::save names them: FX_STATE
// fields included, integer ones such as the per-leaf step counter "optimiser.leaves.<k>.step"
// as 0-d i64), "rng.<name>" (the generator's six state words as i64 bits); the scalars are
// __metadata__ strings, "lr" every learning rate of the optimiser (fx::train::learning_rates;
// other hyperparameters and frozen leaves come from the code that sets the optimiser up). The
// learning rates are checked against the optimiser before anything is written. Loading is
// strict: any missing, unexpected or mis-shaped entry is one fx::Error listing them all, and the
// DataLoader must have the seed, batch size and sample count it was saved with. The write is
// atomic (fluxion/io/atomic_file.hpp): a kill mid-save leaves the previous checkpoint intact.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fluxion/data/dataloader.hpp"
#include "fluxion/io/save.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/train/learning_rate.hpp"

namespace fx::train {

struct Checkpoint {
  int64_t epoch = 0;                                  // epochs completed
  int64_t step = 0;                                   // optimiser steps taken
  double schedule = 0;                                // a schedule's position, stored as given
  std::map<std::string, Generator*> generators = {};  // random streams, by name
  data::DataLoader* loader = nullptr;                 // its epoch counter fixes the next shuffle
  io::Metadata metadata = {};  // free-form strings ("user." keys in the file)
};

namespace detail {

template <class M, class O>
io::TensorMap checkpoint_tensors(const M& model, const O& opt) {
  io::TensorMap t;
  for (auto& [name, x] : io::named_tensors(model)) t.emplace("model." + name, x);
  for (auto& [name, x] : io::named_tensors(opt)) t.emplace("optimiser." + name, x);
  return t;
}

void write_checkpoint(const std::string& path, io::TensorMap tensors, const Checkpoint& ck,
                      const std::vector<double>& learning_rates);
// Loads strictly into `targets`, restores ck's generators and loader, fills ck's numbers;
// returns the saved learning rates, which must be `rates` many (checked first).
std::vector<double> read_checkpoint(const std::string& path, io::TensorMap& targets, Checkpoint& ck,
                                    size_t rates);

}  // namespace detail

template <class M, class O>
void save_checkpoint(const std::string& path, const M& model, const O& opt, const Checkpoint& ck) {
  detail::write_checkpoint(path, detail::checkpoint_tensors(model, opt), ck, learning_rates(opt));
}

template <class M, class O>
void load_checkpoint(const std::string& path, M& model, O& opt, Checkpoint& ck) {
  io::TensorMap targets = detail::checkpoint_tensors(model, opt);  // counters: fresh 0-d tensors
  std::vector<double> lrs = detail::read_checkpoint(path, targets, ck, learning_rates(opt).size());
  io::restore_counters(model, targets, "model.");
  io::restore_counters(opt, targets, "optimiser.");
  set_learning_rates(opt, lrs);
}

}  // namespace fx::train
