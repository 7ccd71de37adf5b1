// The safetensors file format (Hugging Face): named tensors plus string metadata, readable from
// Python (`safetensors.numpy.load_file`), PyTorch and Rust without running any code.
//
//   fx::Generator gen(1);
//   fx::io::TensorMap tensors{{"w", fx::randn({3, 4}, gen)}, {"step", fx::scalar(10, fx::i64)}};
//   fx::io::write_safetensors("run/t.safetensors", tensors, {{"note", "hello"}});
//   fx::io::SafetensorsFile f = fx::io::read_safetensors("run/t.safetensors");
//   f.tensors.at("w");  f.metadata.at("note");
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [3, 4], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value"}}
// (padded with spaces to a multiple of 8), then the tensors' bytes, little-endian, row-major,
// at [begin, end) relative to the end of the header, covering that region exactly.
//
// dtypes: BOOL, I32, I64, F32, F64 map to fluxion's bool, i32, i64, f32, f64. Other safetensors
// dtypes (F16, BF16, U8, ...) and fluxion's complex dtypes have no counterpart: an fx::Error
// names the tensor.
//
// Writing is atomic (fluxion/io/atomic_file.hpp). Reading trusts nothing in the file: the header
// length is bounded by the file size and 100 MB, every offset must lie in the file, the ranges
// must tile the data region without gaps or overlaps, byte sizes must equal numel * itemsize
// (checked for overflow), dims are non-negative integers, booleans are 0 or 1. Each violation is
// an fx::Error naming the file and the tensor, found before any tensor memory is allocated.
#pragma once
#include <cstddef>
#include <map>
#include <span>
#include <string>

#include "fluxion/core/tensor.hpp"

namespace fx::io {

using TensorMap = std::map<std::string, Tensor>;
using Metadata = std::map<std::string, std::string>;

struct SafetensorsFile {
  TensorMap tensors;
  Metadata metadata;
};

// Headers longer than this are refused (the Rust reference implementation's limit).
inline constexpr size_t kMaxHeaderBytes = 100'000'000;

void write_safetensors(const std::string& path, const TensorMap& tensors,
                       const Metadata& metadata = {});
SafetensorsFile read_safetensors(const std::string& path);

// The same format in memory; `name` is what error messages call the buffer.
std::string serialize_safetensors(const TensorMap& tensors, const Metadata& metadata = {});
SafetensorsFile parse_safetensors(std::span<const std::byte> bytes,
                                  const std::string& name = "<memory>");

// "F32" for f32, ...; fx::Error for a dtype safetensors cannot hold.
const char* safetensors_dtype(DType t);

}  // namespace fx::io
