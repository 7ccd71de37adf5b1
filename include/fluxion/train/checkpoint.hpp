// Training checkpoints: one safetensors file holding everything a run needs to continue bit for
// bit -- the model, the optimiser's state (moments and step counters) and learning rate, the
// epoch and step, named random streams, the DataLoader's shuffle position and a schedule
// position.
//
//   fx::Generator gen(1);
//   fx::data::DataLoader loader(x, y, {.batch = 128, .shuffle = true, .seed = 1});
//   fx::train::Checkpoint ck{.epoch = 2, .step = 938, .generators = {{"init", &gen}},
//                            .loader = &loader};
//   fx::train::save_checkpoint("run/checkpoint.safetensors", model, opt, ck);   // atomic
//   ...
//   fx::train::Checkpoint back{.generators = {{"init", &gen}}, .loader = &loader};
//   fx::train::load_checkpoint("run/checkpoint.safetensors", model, opt, back);
//   // back.epoch == 2, back.step == 938; model, opt, gen and loader are as they were
//
// Names in the file: "model.<path>", "optimiser.<path>" (as fx::io::save names them),
// "optimiser.leaves.<k>.step" for per-leaf step counters (0-d i64), "rng.<name>" (the
// generator's six state words as i64 bits); the scalars are __metadata__ strings. Loading is
// strict: any missing, unexpected or mis-shaped entry is one fx::Error listing them all, and the
// DataLoader must have the seed, batch size and sample count it was saved with. The write is
// atomic (fluxion/io/atomic_file.hpp): a kill mid-save leaves the previous checkpoint intact.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "fluxion/data/dataloader.hpp"
#include "fluxion/io/save.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/train/learning_rate.hpp"

namespace fx::train {

struct Checkpoint {
  int64_t epoch = 0;                             // epochs completed
  int64_t step = 0;                              // optimiser steps taken
  double schedule = 0;                           // a schedule's position, stored as given
  std::map<std::string, Generator*> generators = {};  // random streams, by name
  data::DataLoader* loader = nullptr;            // its epoch counter fixes the next shuffle
  io::Metadata metadata = {};                    // free-form strings ("user." keys in the file)
};

namespace detail {

// Calls fn(name, counter) for the integer step counter of each optimiser leaf state that has
// one (Adam's per-leaf `step`): state the FX_FIELDS walk does not reach, but which a resumed
// run needs for the same bias corrections.
template <class O, class Fn>
void for_each_step_counter(O& opt, Fn&& fn) {
  if constexpr (requires { opt.leaves.size(); }) {
    for (size_t k = 0; k < opt.leaves.size(); ++k) {
      if constexpr (requires { opt.leaves[k].step; }) {
        using C = std::remove_cvref_t<decltype(opt.leaves[k].step)>;
        if constexpr (std::is_integral_v<C>)
          fn("leaves." + std::to_string(k) + ".step", opt.leaves[k].step);
      }
    }
  }
}

Tensor counter_tensor(int64_t value);  // 0-d i64
int64_t counter_value(const Tensor& t);

template <class M, class O>
io::TensorMap checkpoint_tensors(const M& model, const O& opt) {
  io::TensorMap t;
  io::for_each_saved_tensor(model, [&](const std::string& n, const Tensor& x) { t.emplace("model." + n, x); });
  io::for_each_saved_tensor(opt, [&](const std::string& n, const Tensor& x) { t.emplace("optimiser." + n, x); });
  for_each_step_counter(opt, [&](const std::string& n, auto c) {
    t.emplace("optimiser." + n, counter_tensor(int64_t(c)));
  });
  return t;
}

void write_checkpoint(const std::string& path, io::TensorMap tensors, const Checkpoint& ck,
                      std::optional<double> lr);
// Loads strictly into `targets`, restores ck's generators and loader, fills ck's numbers;
// returns the saved learning rate.
std::optional<double> read_checkpoint(const std::string& path, io::TensorMap& targets,
                                      Checkpoint& ck);

}  // namespace detail

template <class M, class O>
void save_checkpoint(const std::string& path, const M& model, const O& opt, const Checkpoint& ck) {
  detail::write_checkpoint(path, detail::checkpoint_tensors(model, opt), ck, learning_rate(opt));
}

template <class M, class O>
void load_checkpoint(const std::string& path, M& model, O& opt, Checkpoint& ck) {
  io::TensorMap targets = detail::checkpoint_tensors(model, opt);  // counters: fresh 0-d tensors
  std::optional<double> lr = detail::read_checkpoint(path, targets, ck);
  detail::for_each_step_counter(opt, [&](const std::string& n, auto& c) {
    c = static_cast<std::remove_cvref_t<decltype(c)>>(detail::counter_value(targets.at("optimiser." + n)));
  });
  if (lr) set_learning_rate(opt, *lr);
}

}  // namespace fx::train
