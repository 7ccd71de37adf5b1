// Checkpoint files: the scalars as metadata strings, generators as i64 words, one strict load.
#include "fluxion/train/checkpoint.hpp"

#include <bit>
#include <charconv>
#include <cstring>
#include <system_error>
#include <vector>

namespace fx::train::detail {
namespace {

constexpr const char* kFormatKey = "fluxion.checkpoint";
constexpr const char* kFormatVersion = "2";  // 2: "lr" lists every rate

// Shortest text that reads back to the same double (or integer).
template <class T>
std::string exact_text(T v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

template <class T>
T parse_exact(const io::Metadata& m, const std::string& key, const std::string& path) {
  auto it = m.find(key);
  FX_CHECK(it != m.end(), "fx::train::load_checkpoint: '", path, "' has no '", key, "' entry");
  T v{};
  const std::string& s = it->second;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  FX_CHECK(r.ec == std::errc() && r.ptr == s.data() + s.size(), "fx::train::load_checkpoint: '",
           path, "': '", key, "' is '", s, "', not a number");
  return v;
}

// A space-separated list of exact doubles (empty text: none).
std::vector<double> parse_list(const io::Metadata& m, const std::string& key,
                               const std::string& path) {
  auto it = m.find(key);
  FX_CHECK(it != m.end(), "fx::train::load_checkpoint: '", path, "' has no '", key, "' entry");
  std::vector<double> out;
  const std::string& s = it->second;
  for (const char* p = s.data(); p < s.data() + s.size(); ++p) {  // p: one past a space
    double v = 0;
    auto r = std::from_chars(p, s.data() + s.size(), v);
    FX_CHECK(r.ec == std::errc() && (*r.ptr == ' ' || r.ptr == s.data() + s.size()),
             "fx::train::load_checkpoint: '", path, "': '", key, "' is '", s,
             "', not a list of numbers");
    out.push_back(v);
    p = r.ptr;
  }
  return out;
}

Tensor generator_tensor(const Generator::State& st) {
  Tensor t = Tensor::empty(Shape{int64_t(st.size())}, i64);
  std::memcpy(t.raw_data(), st.data(), sizeof st);
  return t;
}

}  // namespace

void write_checkpoint(const std::string& path, io::TensorMap tensors, const Checkpoint& ck,
                      const std::vector<double>& learning_rates) {
  for (const auto& [name, gen] : ck.generators) {
    FX_CHECK(gen, "fx::train::save_checkpoint: generator '", name, "' is null");
    tensors.emplace(std::string("rng.").append(name), generator_tensor(gen->state()));
  }
  io::Metadata m;
  for (const auto& [k, v] : ck.metadata) m.emplace(std::string("user.").append(k), v);
  m.emplace(kFormatKey, kFormatVersion);
  m["epoch"] = exact_text(ck.epoch);
  m["step"] = exact_text(ck.step);
  m["schedule"] = exact_text(ck.schedule);
  std::string lrs;
  for (double lr : learning_rates) lrs += (lrs.empty() ? "" : " ") + exact_text(lr);
  m["lr"] = lrs;
  if (ck.loader) {
    const data::LoaderOptions& o = ck.loader->options();
    m["loader.epoch"] = exact_text(ck.loader->epoch());
    m["loader.seed"] = exact_text(o.seed);
    m["loader.batch"] = exact_text(o.batch);
    m["loader.samples"] = exact_text(ck.loader->num_samples());
  }
  io::write_safetensors(path, tensors, m);
}

std::vector<double> read_checkpoint(const std::string& path, io::TensorMap& targets, Checkpoint& ck,
                                    size_t rates) {
  io::SafetensorsFile f = io::read_safetensors(path);
  FX_CHECK(f.metadata.count(kFormatKey), "fx::train::load_checkpoint: '", path,
           "' is a safetensors file but not a fluxion checkpoint (no '", kFormatKey, "' entry)");
  FX_CHECK(f.metadata.at(kFormatKey) == kFormatVersion, "fx::train::load_checkpoint: '", path,
           "' has checkpoint format ", f.metadata.at(kFormatKey), "; this fluxion reads ",
           kFormatVersion);
  // Everything is checked before anything is written: the strict load below, then the loader.
  std::map<std::string, Tensor> rng_targets;
  for (const auto& [name, gen] : ck.generators) {
    FX_CHECK(gen, "fx::train::load_checkpoint: generator '", name, "' is null");
    rng_targets.emplace(
        name, targets.emplace(std::string("rng.").append(name), generator_tensor(gen->state()))
                  .first->second);
  }
  int64_t loader_epoch = 0;
  if (ck.loader) {
    loader_epoch = parse_exact<int64_t>(f.metadata, "loader.epoch", path);
    const data::LoaderOptions& o = ck.loader->options();
    auto seed = parse_exact<uint64_t>(f.metadata, "loader.seed", path);
    auto batch = parse_exact<int64_t>(f.metadata, "loader.batch", path);
    auto samples = parse_exact<int64_t>(f.metadata, "loader.samples", path);
    FX_CHECK(seed == o.seed && batch == o.batch && samples == ck.loader->num_samples(),
             "fx::train::load_checkpoint: '", path, "' was saved with a DataLoader of seed ", seed,
             ", batch ", batch, " over ", samples, " samples; this one has seed ", o.seed,
             ", batch ", o.batch, " over ", ck.loader->num_samples(),
             " (the run would not repeat)");
  }
  const int64_t epoch = parse_exact<int64_t>(f.metadata, "epoch", path);
  const int64_t step = parse_exact<int64_t>(f.metadata, "step", path);
  const double schedule = parse_exact<double>(f.metadata, "schedule", path);
  std::vector<double> lrs = parse_list(f.metadata, "lr", path);
  FX_CHECK(lrs.size() == rates, "fx::train::load_checkpoint: '", path, "' holds ", lrs.size(),
           " learning rates, the optimiser has ", rates, " (set up with another rule?)");

  io::load_tensors(targets, std::move(f.tensors), {.strict = true}, path);

  for (const auto& [name, gen] : ck.generators) {
    Generator::State st;
    std::memcpy(st.data(), rng_targets.at(name).raw_data(), sizeof st);
    gen->set_state(st);
  }
  if (ck.loader) ck.loader->set_epoch(loader_epoch);
  ck.epoch = epoch;
  ck.step = step;
  ck.schedule = schedule;
  ck.metadata.clear();
  for (const auto& [k, v] : f.metadata)
    if (k.rfind("user.", 0) == 0) ck.metadata.emplace(k.substr(5), v);
  return lrs;
}

}  // namespace fx::train::detail
