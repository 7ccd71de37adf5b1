#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fluxion/io/save.hpp>
#include <fluxion/nn/activations.hpp>
#include <fluxion/nn/chain.hpp>
#include <fluxion/nn/dense.hpp>
#include <fluxion/ops/create.hpp>
#include <fluxion/optim/rules.hpp>
#include <fluxion/optim/update.hpp>

#include "io_test_helpers.hpp"

using fx::testing_io::same_bits;
using fx::testing_io::TempDir;

namespace {

auto make_mlp(uint64_t seed, int64_t hidden = 5) {
  fx::Generator gen(seed);
  return fx::nn::Chain(fx::nn::Dense(3, hidden, fx::relu, gen),
                       fx::nn::Dense(hidden, 2, fx::identity, gen));
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST(SaveLoad, NamesAreTheFieldPaths) {
  auto m = make_mlp(1);
  fx::io::TensorMap t = fx::io::named_tensors(m);
  std::vector<std::string> names;
  for (const auto& [name, x] : t) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"layers.0.bias", "layers.0.weight", "layers.1.bias",
                                             "layers.1.weight"}));
}

TEST(SaveLoad, RoundTripsAModelIntoItsOwnTensors) {
  TempDir dir;
  auto a = make_mlp(1), b = make_mlp(2);
  fx::Tensor shared = std::get<0>(b.layers).weight;  // a handle held elsewhere sees the load
  fx::io::save(dir.file("m.safetensors"), a, {{"note", "x"}});
  fx::io::LoadReport r = fx::io::load(dir.file("m.safetensors"), b);
  EXPECT_TRUE(r.complete());
  EXPECT_EQ(r.loaded.size(), 4u);
  fx::io::TensorMap ta = fx::io::named_tensors(a), tb = fx::io::named_tensors(b);
  for (const auto& [name, x] : ta) EXPECT_TRUE(same_bits(x, tb.at(name))) << name;
  EXPECT_TRUE(same_bits(shared, std::get<0>(a.layers).weight));
  EXPECT_EQ(fx::io::read_safetensors(dir.file("m.safetensors")).metadata.at("note"), "x");
}

TEST(SaveLoad, StrictLoadReportsEveryMismatchAtOnceAndWritesNothing) {
  TempDir dir;
  auto small = make_mlp(1, 5);
  fx::io::TensorMap extra = fx::io::named_tensors(small);
  extra.erase("layers.1.bias");                     // missing
  extra.emplace("layers.2.weight", fx::ones({2}));  // unexpected
  fx::io::write_safetensors(dir.file("m.safetensors"), extra);
  auto big = make_mlp(2, 6);  // hidden 6: layers.0.* and layers.1.weight differ
  auto before = make_mlp(2, 6);
  try {
    fx::io::load(dir.file("m.safetensors"), big);
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    std::string msg = e.what();
    EXPECT_TRUE(has(msg, "m.safetensors")) << msg;
    EXPECT_TRUE(has(msg, "missing from the file (1): layers.1.bias")) << msg;
    EXPECT_TRUE(has(msg, "not in the model (1): layers.2.weight")) << msg;
    EXPECT_TRUE(has(msg, "layers.0.weight is f32 (5, 3) in the file, f32 (6, 3) in the model"))
        << msg;
    EXPECT_TRUE(has(msg, "layers.1.weight")) << msg;
  }
  fx::io::TensorMap tb = fx::io::named_tensors(big), t0 = fx::io::named_tensors(before);
  for (const auto& [name, x] : tb) EXPECT_TRUE(same_bits(x, t0.at(name))) << name;
}

TEST(SaveLoad, NonStrictLoadsWhatMatchesAndReturnsTheRest) {
  TempDir dir;
  auto small = make_mlp(1, 5);
  fx::io::save(dir.file("m.safetensors"), small);
  auto big = make_mlp(2, 6);
  auto before = make_mlp(2, 6);
  fx::io::LoadReport r = fx::io::load(dir.file("m.safetensors"), big, {.strict = false});
  EXPECT_EQ(r.loaded, (std::vector<std::string>{"layers.1.bias"}));  // the only one of equal shape
  EXPECT_TRUE(r.missing.empty());
  EXPECT_EQ(r.mismatched.size(), 3u);
  EXPECT_EQ(r.rest.size(), 3u);
  EXPECT_TRUE(r.rest.count("layers.0.weight"));
  EXPECT_FALSE(r.complete());
  EXPECT_TRUE(same_bits(std::get<1>(big.layers).bias, std::get<1>(small.layers).bias));
  EXPECT_TRUE(same_bits(std::get<1>(big.layers).weight, std::get<1>(before.layers).weight));
}

TEST(SaveLoad, OptimiserStateTreesSaveAndLoad) {
  TempDir dir;
  auto m = make_mlp(1);
  auto opt = fx::optim::setup(fx::optim::Adam{}, m);
  opt.leaves[0].m.fill_(0.25);
  fx::io::save(dir.file("opt.safetensors"), opt);
  auto opt2 = fx::optim::setup(fx::optim::Adam{}, m);
  fx::io::load(dir.file("opt.safetensors"), opt2);
  EXPECT_TRUE(same_bits(opt2.leaves[0].m, opt.leaves[0].m));
  EXPECT_TRUE(fx::io::read_safetensors(dir.file("opt.safetensors")).tensors.count("leaves.3.v"));
}

namespace {
// A layer with non-trainable state: a running mean (tensor) and a count of batches seen.
struct Norm {
  fx::Tensor scale, running_mean;
  int64_t seen = 0;
  FX_FIELDS(scale)
  FX_STATE(running_mean, seen)
};
struct Net {
  std::vector<Norm> norms;
  fx::Tensor w;
  FX_FIELDS(norms, w)
};
Net make_net(double base) {
  Net n{{}, fx::full({2}, base, fx::f64)};
  for (int k = 0; k < 2; ++k)
    n.norms.push_back({fx::full({3}, base + k, fx::f64), fx::full({3}, base + 10 + k, fx::f64),
                       int64_t(base) + k});
  return n;
}
}  // namespace

TEST(SaveLoad, StateFieldsRoundTripBesideTheParameters) {
  TempDir dir;
  Net a = make_net(1), b = make_net(5);
  fx::io::save(dir.file("n.safetensors"), a);
  fx::io::TensorMap file = fx::io::read_safetensors(dir.file("n.safetensors")).tensors;
  std::vector<std::string> names;
  for (const auto& [name, x] : file) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"norms.0.running_mean", "norms.0.scale",
                                             "norms.0.seen", "norms.1.running_mean",
                                             "norms.1.scale", "norms.1.seen", "w"}));
  EXPECT_EQ(file.at("norms.1.seen").dtype(), fx::i64);
  EXPECT_EQ(file.at("norms.1.seen").ndim(), 0);

  fx::io::LoadReport r = fx::io::load(dir.file("n.safetensors"), b);
  EXPECT_TRUE(r.complete());
  for (int k = 0; k < 2; ++k) {
    EXPECT_TRUE(same_bits(b.norms[k].running_mean, a.norms[k].running_mean)) << k;
    EXPECT_TRUE(same_bits(b.norms[k].scale, a.norms[k].scale)) << k;
    EXPECT_EQ(b.norms[k].seen, a.norms[k].seen) << k;
  }
  EXPECT_EQ(b.norms[1].seen, 2);
  // A file without the state is missing it: a strict load names it and changes nothing.
  file.erase("norms.0.seen");
  file.erase("norms.1.running_mean");
  fx::io::write_safetensors(dir.file("old.safetensors"), file);
  Net c = make_net(7);
  try {
    fx::io::load(dir.file("old.safetensors"), c);
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    EXPECT_TRUE(has(e.what(), "missing from the file (2): norms.0.seen; norms.1.running_mean;"))
        << e.what();
  }
  EXPECT_EQ(c.norms[0].seen, 7);
}

TEST(SaveLoad, OptimiserStepCountersRoundTrip) {
  TempDir dir;
  auto m = make_mlp(1);
  auto opt = fx::optim::setup(fx::optim::Adam{}, m);
  for (size_t k = 0; k < opt.leaves.size(); ++k) opt.leaves[k].step = int64_t(10 + k);
  fx::io::save(dir.file("opt.safetensors"), opt);
  auto opt2 = fx::optim::setup(fx::optim::Adam{}, m);
  fx::io::load(dir.file("opt.safetensors"), opt2);
  for (size_t k = 0; k < opt.leaves.size(); ++k) EXPECT_EQ(opt2.leaves[k].step, int64_t(10 + k));
}
