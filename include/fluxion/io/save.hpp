// Saving and loading models (any structure the FX_FIELDS traversal walks) as safetensors files,
// under the dotted names fx::for_each_named_tensor gives ("layers.0.weight").
//
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 256, fx::relu), fx::nn::Dense(256, 10));
//   fx::io::save("mlp.safetensors", model, {{"epochs", "5"}});   // atomic: old file or new one
//   fx::io::load("mlp.safetensors", model);   // fx::Error listing every missing, unexpected or
//                                              // mis-shaped tensor; nothing is written then
//   fx::io::LoadReport r = fx::io::load("other.safetensors", model, {.strict = false});
//   // loads the tensors whose name, dtype and shape match; r.missing names the model's tensors
//   // the file lacks, r.rest holds the file's tensors that were not loaded
//
// Loading copies into the model's existing tensors, so anything sharing them (an optimiser
// set up on the model, a tied weight) sees the new values. Undefined leaves (an absent bias)
// are neither saved nor expected. FX_STATE fields (a running mean) are saved beside the
// parameters, and integer FX_STATE fields (step counters) as 0-d i64 tensors. The same calls
// save and load an optimiser's state tree (fx::optim::setup's result: "leaves.0.m",
// "leaves.0.step", ...); fluxion/train/checkpoint.hpp saves a whole training run.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "fluxion/core/fields.hpp"
#include "fluxion/io/safetensors.hpp"

namespace fx::io {

struct LoadOptions {
  bool strict = true;  // false: load what matches, report the rest instead of throwing
};

struct LoadReport {
  std::vector<std::string> loaded;      // names copied into the model
  std::vector<std::string> missing;     // the model's names that the file lacks
  std::vector<std::string> mismatched;  // in both, with another dtype or shape (described)
  TensorMap rest;                       // the file's tensors that were not loaded
  bool complete() const { return missing.empty() && mismatched.empty() && rest.empty(); }
};

// The walk every save and load uses: every defined tensor, parameters and FX_STATE alike.
template <class T, class Fn>
void for_each_saved_tensor(T& x, Fn&& fn) {
  for_each_named_leaf(x, [&](const std::string& name, auto& t) {
    if (t.defined()) fn(name, t);
  });
}

Tensor counter_tensor(int64_t value);    // a 0-d i64 tensor holding value
int64_t counter_value(const Tensor& t);  // its value back

// The model's defined tensors by name (sharing storage with the model), and its integer
// FX_STATE fields as 0-d i64 tensors holding copies of their values (restore_counters writes
// such tensors back).
template <class M>
TensorMap named_tensors(const M& model) {
  TensorMap out;
  for_each_saved_tensor(model,
                        [&](const std::string& name, const Tensor& t) { out.emplace(name, t); });
  for_each_named_counter(model, [&](const std::string& name, const auto& c) {
    out.emplace(name, counter_tensor(int64_t(c)));
  });
  return out;
}

// Sets each integer FX_STATE field of `x` from the tensor named prefix + its path in `tensors`
// (named_tensors' map after a load).
template <class M>
void restore_counters(M& x, const TensorMap& tensors, const std::string& prefix = "") {
  for_each_named_counter(x, [&](const std::string& name, auto& c) {
    c = static_cast<std::remove_cvref_t<decltype(c)>>(counter_value(tensors.at(prefix + name)));
  });
}

// Copies `source` into `targets` (tensors that share storage with a model) by name; `what`
// names the file in messages. With strict, any missing, unexpected or mismatched tensor throws
// one fx::Error listing them all, before anything is copied.
LoadReport load_tensors(TensorMap& targets, TensorMap source, LoadOptions options,
                        const std::string& what);

template <class M>
void save(const std::string& path, const M& model, const Metadata& metadata = {}) {
  write_safetensors(path, named_tensors(model), metadata);
}

template <class M>
LoadReport load(const std::string& path, M& model, LoadOptions options = {}) {
  TensorMap targets = named_tensors(model);
  LoadReport r = load_tensors(targets, read_safetensors(path).tensors, options, path);
  restore_counters(model, targets);
  return r;
}

}  // namespace fx::io
