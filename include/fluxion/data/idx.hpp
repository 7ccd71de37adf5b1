// IDX files (the MNIST family's format) and the Fashion-MNIST dataset.
//
//   auto train = fx::data::fashion_mnist();                  // /usr/share/datasets/fashion-mnist
//   auto test = fx::data::fashion_mnist(fx::data::kFashionMnistDir, "test");  // t10k-*-ubyte.gz
//   fx::Tensor raw = fx::data::read_idx("train-labels-idx1-ubyte.gz", fx::i64);   // (60000,)
//   fx::data::write_idx("x.idx.gz", train.images, fx::data::IdxType::f32, {.gzip = true});
//
// read_idx reads gzip-compressed and plain files alike (zlib passes plain files through) and
// converts the stored values, unscaled, to the requested dtype. An IDX header is 2 zero bytes, a
// type byte, a rank byte, then one big-endian u32 per dimension; the payload must hold exactly
// the product of the dimensions. Anything else -- a bad magic, an unknown type, a truncated or
// over-long payload, a corrupt gzip stream -- throws fx::Error naming the file and the problem,
// because downloaded datasets do arrive truncated and must never become garbage tensors.
#pragma once
#include <cstdint>
#include <string>

#include "fluxion/core/tensor.hpp"
#include "fluxion/data/dataset.hpp"

namespace fx::data {

// Element type codes of the IDX format (the third header byte).
enum class IdxType : uint8_t {
  u8 = 0x08,
  i8 = 0x09,
  i16 = 0x0B,
  i32 = 0x0C,
  f32 = 0x0D,
  f64 = 0x0E
};

Tensor read_idx(const std::string& path, DType dtype = f32);

struct IdxWriteOptions {
  bool gzip = false;
};
// Writes x (at most 255 dims, each below 2^32) with elements stored as `type`. Integer types
// throw, writing nothing, when a value does not fit: a silent wrap would corrupt a dataset.
void write_idx(const std::string& path, const Tensor& x, IdxType type,
               IdxWriteOptions options = {});

// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Fashion-MNIST's "train" (60000) or "test" (10000) split: images (N, 784) f32 scaled to [0, 1],
// labels (N,) i64 in 0..9. Reads <dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]. A
// missing file throws fx::Error with the path tried and how to install the dataset.
Dataset fashion_mnist(const std::string& dir = kFashionMnistDir,
                      const std::string& split = "train");

}  // namespace fx::data
