// Matching a file's tensors to a model's by name, dtype and shape.
#include "fluxion/io/save.hpp"

#include <cstring>
#include <sstream>

namespace fx::io {
namespace {

std::string describe(const Tensor& t) {
  std::ostringstream os;
  os << dtype_name(t.dtype()) << " " << t.shape();
  return os.str();
}

void list(std::ostringstream& os, const char* title, const std::vector<std::string>& names) {
  if (names.empty()) return;
  os << "\n  " << title << " (" << names.size() << "):";
  for (const std::string& n : names) os << " " << n << ";";
}

}  // namespace

Tensor counter_tensor(int64_t value) {
  Tensor t = Tensor::empty(Shape{}, i64);
  *t.data<int64_t>() = value;
  return t;
}

int64_t counter_value(const Tensor& t) { return *t.data<int64_t>(); }

LoadReport load_tensors(TensorMap& targets, TensorMap source, LoadOptions options,
                        const std::string& what) {
  LoadReport r;
  std::vector<std::pair<Tensor*, const Tensor*>> copies;
  for (auto& [name, target] : targets) {
    auto it = source.find(name);
    if (it == source.end()) {
      r.missing.push_back(name);
    } else if (it->second.dtype() != target.dtype() || it->second.shape() != target.shape()) {
      r.mismatched.push_back(name + " is " + describe(it->second) + " in the file, " +
                             describe(target) + " in the model");
    } else {
      copies.emplace_back(&target, &it->second);
      r.loaded.push_back(name);
    }
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, t] : source)
    if (!targets.count(name)) unexpected.push_back(name);

  if (options.strict && (!r.missing.empty() || !r.mismatched.empty() || !unexpected.empty())) {
    std::ostringstream os;
    os << "fx::io::load: '" << what << "' does not match the model; nothing was loaded";
    list(os, "missing from the file", r.missing);
    list(os, "not in the model", unexpected);
    list(os, "dtype or shape differs", r.mismatched);
    throw Error(os.str());
  }

  for (auto [target, src] : copies) {
    if (target->is_contiguous())
      std::memcpy(target->raw_data(), src->raw_data(),
                  size_t(src->numel()) * itemsize(src->dtype()));
    else target->copy_(*src);
  }
  for (const std::string& name : r.loaded) source.erase(name);
  r.rest = std::move(source);
  return r;
}

}  // namespace fx::io
