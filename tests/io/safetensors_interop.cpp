// The C++ half of the Python interoperability check (tests/io/python_interop.sh):
//   safetensors_interop write FILE   writes the tensors below, which Python checks
//   safetensors_interop read FILE    checks the tensors Python wrote (the same values)
// Values: "f32" = arange(12).reshape(3, 4) * 0.5 - 1, "f64" = arange(5) / 3, "i32" = [-2, 0, 7],
// "i64" = [[2^40], [-5]], "flag" = [True, False, True], "scalar" = 2.5 (f64, 0-d), "empty" = f32
// (0, 3); metadata {"source": <writer>}.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include <fluxion/io/safetensors.hpp>
#include <fluxion/ops/create.hpp>

namespace {

fx::io::TensorMap expected() {
  fx::Tensor f32 = fx::Tensor::empty(fx::Shape{3, 4}, fx::f32);
  for (int i = 0; i < 12; ++i) f32.data<float>()[i] = float(i) * 0.5f - 1.0f;
  fx::Tensor f64 = fx::Tensor::empty(fx::Shape{5}, fx::f64);
  for (int i = 0; i < 5; ++i) f64.data<double>()[i] = double(i) / 3.0;
  fx::Tensor i64 = fx::Tensor::empty(fx::Shape{2, 1}, fx::i64);
  i64.data<int64_t>()[0] = int64_t(1) << 40, i64.data<int64_t>()[1] = -5;
  return {{"f32", f32},
          {"f64", f64},
          {"i32", fx::tensor({-2, 0, 7}, fx::i32)},
          {"i64", i64},
          {"flag", fx::tensor({1, 0, 1}, fx::boolean)},
          {"scalar", fx::scalar(2.5, fx::f64)},
          {"empty", fx::zeros({0, 3})}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: safetensors_interop write|read FILE\n");
    return 2;
  }
  const std::string mode = argv[1], path = argv[2];
  try {
    if (mode == "write") {
      fx::io::write_safetensors(path, expected(), {{"source", "fluxion"}});
      std::printf("safetensors_interop: wrote %s\n", path.c_str());
      return 0;
    }
    fx::io::SafetensorsFile f = fx::io::read_safetensors(path);
    fx::io::TensorMap want = expected();
    int bad = 0;
    if (f.tensors.size() != want.size()) ++bad, std::printf("tensor count %zu\n", f.tensors.size());
    for (const auto& [name, w] : want) {
      auto it = f.tensors.find(name);
      bool ok = it != f.tensors.end() && it->second.dtype() == w.dtype() &&
                it->second.shape() == w.shape() &&
                std::memcmp(it->second.raw_data(), w.raw_data(),
                            size_t(w.numel()) * fx::itemsize(w.dtype())) == 0;
      if (!ok) ++bad, std::printf("tensor %s differs\n", name.c_str());
    }
    if (!f.metadata.count("source") || f.metadata.at("source") != "python")
      ++bad, std::printf("metadata 'source' is missing or not 'python'\n");
    std::printf("safetensors_interop: %s\n", bad ? "MISMATCH" : "read ok");
    return bad ? 1 : 0;
  } catch (const fx::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
