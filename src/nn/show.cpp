// Printing models: the non-template half of fluxion/nn/show.hpp (names, counts, alignment).
#include "fluxion/nn/show.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/reduce.hpp"

namespace fx {

std::string_view activation_name(Activation f) {
  // Overloaded functions (softmax, leakyrelu, elu) are named through their one-argument form,
  // the one a layer stores.
  static const std::pair<Activation, std::string_view> known[] = {
      {identity, "identity"},
      {relu, "relu"},
      {sigmoid, "sigmoid"},
      {tanh, "tanh"},
      {softplus, "softplus"},
      {softmax, "softmax"},
      {logsoftmax, "logsoftmax"},
      {leakyrelu, "leakyrelu"},
      {elu, "elu"},
      {gelu, "gelu"},
      {swish, "swish"},
      {hardsigmoid, "hardsigmoid"},
      {hardtanh, "hardtanh"},
      {relu6, "relu6"},
      {rrelu, "rrelu"},
      {trelu, "trelu"},
      {softshrink, "softshrink"},
      {celu, "celu"},
      {selu, "selu"},
      {gelu_tanh, "gelu_tanh"},
      {gelu_sigmoid, "gelu_sigmoid"},
      {gelu_erf, "gelu_erf"},
      {hardswish, "hardswish"},
      {mish, "mish"},
      {lisht, "lisht"},
      {softsign, "softsign"},
      {logsigmoid, "logsigmoid"},
      {logcosh, "logcosh"},
      {tanhshrink, "tanhshrink"},
      {glu, "glu"},
      {abs, "abs"},
      {exp, "exp"},
      {log, "log"},
      {square, "square"},
      {sqrt, "sqrt"},
      {neg, "neg"},
  };
  for (const auto& [g, name] : known)
    if (g == f) return name;
  return {};
}

}  // namespace fx

namespace fx::nn::detail {

namespace {

std::string with_unit(int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f %s", v, units[u]);
  return buf;
}

std::string plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::string ShowLines::render() const {
  size_t column = 0;  // where the comments start: two spaces after the longest commented line
  for (const auto& [code, comment] : rows)
    if (!comment.empty() && !code.empty()) column = std::max(column, code.size() + 2);
  std::string s;
  for (const auto& [code, comment] : rows) {
    s += code;
    if (!comment.empty()) {
      if (!code.empty()) s += std::string(column - code.size(), ' ');
      s += comment;
    }
    s += '\n';
  }
  return s;
}

void LeafStats::add(const std::string& path, const Tensor& t, bool trainable) {
  (trainable ? params : state) += t.numel();
  ++(trainable ? param_arrays : state_arrays);
  bytes += t.numel() * int64_t(itemsize(t.dtype()));
  // Reading values needs data: a meta tensor (fx::nn::outputsize, planning a model's size) has
  // none, and an integer tensor is always finite.
  if (!t.device().has_data() || !is_floating(t.dtype()) || t.numel() == 0) return;
  const std::string name = path.empty() ? "tensor" : path;
  if (any(isnan(t)).item<bool>()) flags.push_back("NaN in " + name);
  if (any(isinf(t)).item<bool>()) flags.push_back("Inf in " + name);
}

std::string LeafStats::layer_comment() const {
  std::string s;
  if (param_arrays + state_arrays > 0) {
    s = "# " + plural(params, "parameter", "parameters");
    if (state_arrays > 0) s += ", plus " + std::to_string(state) + " non-trainable";
  }
  if (!flags.empty()) {
    s += (s.empty() ? "# (" : "  (");
    for (size_t i = 0; i < flags.size(); ++i) s += (i ? ", " : "") + flags[i];
    s += ")";
  }
  return s;
}

std::string LeafStats::total_comment() const {
  std::string s = "# Total: ";
  if (state_arrays == 0) {
    s += plural(param_arrays, "array", "arrays") + ", " + plural(params, "parameter", "parameters");
  } else {
    s += plural(param_arrays, "trainable array", "trainable arrays") + ", " +
         plural(params, "parameter", "parameters") + ", plus " +
         plural(state_arrays, "non-trainable array", "non-trainable arrays") + ", " +
         plural(state, "value", "values");
  }
  return s + ", " + with_unit(bytes);
}

std::string short_type_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  std::string name = status == 0 && demangled ? demangled.get() : type.name();
  // Keep the last name at the outermost level: cut the template arguments ("Chain<...>") and
  // the namespaces and enclosing scopes before it. Brackets inside a lambda's or function's
  // signature ("{lambda(std::vector<int>)#1}", "TestBody()::Norm") do not count.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '(' || c == '{' || c == '[') ++depth;
    else if (c == ')' || c == '}' || c == ']') --depth;
    else if (depth == 0 && c == '<') {
      name.resize(i);
      break;
    } else if (depth == 0 && c == ':' && i + 1 < name.size() && name[i + 1] == ':') {
      start = i + 2;
      ++i;
    }
  }
  name = name.substr(start);
  return name;
}

std::string shape_text(const Tensor& t) {
  std::string s = t.shape().to_string();
  if (t.dtype() != f32) {
    s += ' ';
    s += dtype_name(t.dtype());
  }
  return s;
}

}  // namespace fx::nn::detail
