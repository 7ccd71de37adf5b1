// IDX reading and writing through zlib, and the Fashion-MNIST loader built on it.
#include "fluxion/data/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace fx::data {
namespace {

constexpr const char* kRead = "fx::data::read_idx: ";
constexpr const char* kWrite = "fx::data::write_idx: ";

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzHandle = std::unique_ptr<gzFile_s, GzCloser>;

int type_size(uint8_t code) {
  switch (IdxType(code)) {
    case IdxType::u8:
    case IdxType::i8: return 1;
    case IdxType::i16: return 2;
    case IdxType::i32:
    case IdxType::f32: return 4;
    case IdxType::f64: return 8;
  }
  return 0;  // not a type the format defines
}

const char* type_name(uint8_t code) {
  switch (IdxType(code)) {
    case IdxType::u8: return "ubyte";
    case IdxType::i8: return "sbyte";
    case IdxType::i16: return "short";
    case IdxType::i32: return "int";
    case IdxType::f32: return "float";
    case IdxType::f64: return "double";
  }
  return "?";
}

uint64_t be_load(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

void be_store(unsigned char* p, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i, v >>= 8) p[i] = static_cast<unsigned char>(v);
}

// One stored element as double: every IDX type is exactly representable in a double.
double decode(const unsigned char* p, uint8_t code) {
  switch (IdxType(code)) {
    case IdxType::u8: return p[0];
    case IdxType::i8: return static_cast<int8_t>(p[0]);
    case IdxType::i16: return static_cast<int16_t>(be_load(p, 2));
    case IdxType::i32: return static_cast<int32_t>(be_load(p, 4));
    case IdxType::f32: {
      uint32_t bits = static_cast<uint32_t>(be_load(p, 4));
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case IdxType::f64: {
      uint64_t bits = be_load(p, 8);
      double d;
      std::memcpy(&d, &bits, 8);
      return d;
    }
  }
  return 0;
}

// Reads up to `want` bytes; fewer only at the end of the data. Corrupt gzip streams throw.
size_t read_some(gzFile f, unsigned char* dst, size_t want, const std::string& path) {
  size_t got = 0;
  while (got < want) {
    unsigned chunk = unsigned(std::min<size_t>(want - got, size_t(1) << 24));
    int n = gzread(f, dst + got, chunk);
    if (n < 0) {
      int errnum = 0;
      const char* msg = gzerror(f, &errnum);
      detail::fail(kRead, path, ": corrupt gzip data (", msg, ")");
    }
    if (n == 0) break;
    got += size_t(n);
  }
  int errnum = 0;
  const char* msg = gzerror(f, &errnum);
  // zlib reports a gzip stream cut short as Z_BUF_ERROR after returning what it could inflate.
  if (errnum == Z_BUF_ERROR) detail::fail(kRead, path, ": truncated gzip stream (", msg, ")");
  if (errnum != Z_OK) detail::fail(kRead, path, ": read error (", msg, ")");
  return got;
}

std::string dims_string(const std::vector<int64_t>& dims, uint8_t code) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? " x " : "") + std::to_string(dims[i]);
  return s + " " + type_name(code);
}

}  // namespace

Tensor read_idx(const std::string& path, DType dtype) {
  errno = 0;
  GzHandle f(gzopen(path.c_str(), "rb"));
  if (!f) {
    const char* why = errno ? std::strerror(errno) : "cannot allocate a zlib stream";
    detail::fail(kRead, "cannot open ", path, ": ", why);
  }
  gzbuffer(f.get(), 1 << 17);

  unsigned char head[4];
  size_t got = read_some(f.get(), head, 4, path);
  FX_CHECK(got == 4, kRead, path, ": truncated header: ", got, " bytes, an IDX header needs 4");
  FX_CHECK(head[0] == 0 && head[1] == 0, kRead, path, ": bad magic (first two bytes are ",
           int(head[0]), " and ", int(head[1]), ", must be 0 and 0): not an IDX file");
  const uint8_t code = head[2];
  const int esize = type_size(code);
  if (esize == 0) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", unsigned(code));
    detail::fail(kRead, path, ": unknown element type byte ", hex,
                 " (IDX defines 0x08, 0x09, 0x0b, 0x0c, 0x0d, 0x0e)");
  }
  const int rank = head[3];
  FX_CHECK(rank >= 1 && rank <= kMaxDims, kRead, path, ": rank ", rank,
           " is not supported (fluxion tensors have 1 to ", kMaxDims, " dimensions)");

  unsigned char dbytes[4 * kMaxDims];
  got = read_some(f.get(), dbytes, size_t(4 * rank), path);
  FX_CHECK(got == size_t(4 * rank), kRead, path, ": truncated header: rank ", rank, " needs ",
           4 * rank, " bytes of dimensions, file has ", got);
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  uint64_t nbytes = uint64_t(esize);
  for (int d = 0; d < rank; ++d) {
    dims[size_t(d)] = int64_t(be_load(dbytes + 4 * d, 4));
    // Caps the claimed size so a corrupt header cannot overflow, nor ask for absurd memory.
    FX_CHECK(!__builtin_mul_overflow(nbytes, uint64_t(dims[size_t(d)]), &nbytes) &&
                 nbytes <= (uint64_t(1) << 40),
             kRead, path, ": implausible dimensions ", dims_string(dims, code), "...");
  }

  // Grow as data arrives rather than trusting the header's size up front; one extra byte tells
  // an over-long payload from an exact one.
  std::vector<unsigned char> buf;
  size_t have = 0;
  while (have <= nbytes) {
    size_t next = std::min<size_t>(nbytes + 1, std::max<size_t>(have * 2, size_t(1) << 20));
    buf.resize(next);
    size_t n = read_some(f.get(), buf.data() + have, next - have, path);
    have += n;
    if (have < next) break;
  }
  FX_CHECK(have >= nbytes, kRead, path, ": truncated: the header promises ", nbytes,
           " bytes of data (", dims_string(dims, code), "), the file holds ", have);
  FX_CHECK(have == nbytes, kRead, path, ": trailing data after the ", nbytes, " bytes its header (",
           dims_string(dims, code), ") promises");

  Tensor out = Tensor::empty(Shape(dims), dtype);
  const int64_t n = out.numel();
  const unsigned char* src = buf.data();
  const bool stored_float = code == uint8_t(IdxType::f32) || code == uint8_t(IdxType::f64);
  visit_dtype(dtype, [&]<class T>() {
    T* dst = out.data<T>();
    if (code == uint8_t(IdxType::u8)) {  // the common case (images, labels): no decode switch
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]);
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      double v = decode(src + i * esize, code);
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        // Casting a NaN or out-of-range float to an integer is undefined behaviour.
        if (stored_float)
          FX_CHECK(std::isfinite(v) && v >= double(std::numeric_limits<T>::min()) &&
                       v <= double(std::numeric_limits<T>::max()),
                   kRead, path, ": element ", i, " (", v, ") does not fit ", dtype_name(dtype));
      }
      dst[i] = static_cast<T>(v);
    }
  });
  return out;
}

void write_idx(const std::string& path, const Tensor& x, IdxType type, IdxWriteOptions options) {
  FX_CHECK(x.defined(), kWrite, path, ": undefined tensor");
  const uint8_t code = uint8_t(type);
  const int esize = type_size(code);
  FX_CHECK(esize > 0, kWrite, path, ": unknown IdxType ", int(code));
  FX_CHECK(x.ndim() >= 1, kWrite, path, ": IDX needs at least one dimension, got a 0-d tensor");
  for (int64_t d : x.shape())
    FX_CHECK(uint64_t(d) <= 0xffffffffu, kWrite, path, ": dimension ", d, " of ", x.shape(),
             " does not fit the format's u32");

  const Tensor xc = x.contiguous();
  std::vector<double> vals(size_t(xc.numel()));
  visit_dtype(xc.dtype(), [&]<class T>() {
    const T* src = xc.data<T>();
    for (size_t i = 0; i < vals.size(); ++i) vals[i] = double(src[i]);
  });
  double lo = 0, hi = 0;
  switch (type) {
    case IdxType::u8: lo = 0, hi = 255; break;
    case IdxType::i8: lo = -128, hi = 127; break;
    case IdxType::i16: lo = -32768, hi = 32767; break;
    case IdxType::i32: lo = -2147483648.0, hi = 2147483647.0; break;
    default: break;
  }
  std::vector<unsigned char> bytes(4 + 4 * size_t(x.ndim()) + vals.size() * size_t(esize));
  unsigned char* p = bytes.data();
  p[0] = p[1] = 0;
  p[2] = code;
  p[3] = static_cast<unsigned char>(x.ndim());
  p += 4;
  for (int64_t d : x.shape()) be_store(p, uint64_t(d), 4), p += 4;
  for (size_t i = 0; i < vals.size(); ++i, p += esize) {
    double v = vals[i];
    if (type == IdxType::f32) {
      float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      be_store(p, bits, 4);
    } else if (type == IdxType::f64) {
      uint64_t bits;
      std::memcpy(&bits, &v, 8);
      be_store(p, bits, 8);
    } else {
      FX_CHECK(v >= lo && v <= hi && v == std::trunc(v), kWrite, path, ": element ", i, " (", v,
               ") does not fit IDX type ", type_name(code));
      be_store(p, uint64_t(int64_t(v)), esize);
    }
  }

  if (options.gzip) {
    errno = 0;
    GzHandle f(gzopen(path.c_str(), "wb"));
    FX_CHECK(f != nullptr, kWrite, "cannot open ", path,
             " for writing: ", errno ? std::strerror(errno) : "zlib error");
    size_t done = 0;
    while (done < bytes.size()) {
      unsigned chunk = unsigned(std::min<size_t>(bytes.size() - done, size_t(1) << 24));
      int n = gzwrite(f.get(), bytes.data() + done, chunk);
      FX_CHECK(n > 0, kWrite, path, ": write failed");
      done += size_t(n);
    }
    FX_CHECK(gzclose(f.release()) == Z_OK, kWrite, path, ": write failed on close");
  } else {
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), std::fclose);
    FX_CHECK(f != nullptr, kWrite, "cannot open ", path, " for writing: ", std::strerror(errno));
    FX_CHECK(std::fwrite(bytes.data(), 1, bytes.size(), f.get()) == bytes.size(), kWrite, path,
             ": write failed");
    FX_CHECK(std::fclose(f.release()) == 0, kWrite, path, ": write failed on close");
  }
}

namespace {

constexpr const char* kInstallHint =
    "Install it with `apt-get install dataset-fashion-mnist` (Debian/Ubuntu, as root), or pass "
    "the directory that holds the four Fashion-MNIST IDX files";

std::string find_file(const std::string& dir, const std::string& base) {
  namespace fs = std::filesystem;
  for (const std::string& name : {base + ".gz", base}) {
    fs::path p = fs::path(dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  detail::fail("fx::data::fashion_mnist: ", (fs::path(dir) / (base + ".gz")).string(),
               " not found (nor without .gz). ", kInstallHint, ".");
}

}  // namespace

Dataset fashion_mnist(const std::string& dir, const std::string& split) {
  FX_CHECK(split == "train" || split == "test",
           "fx::data::fashion_mnist: split must be \"train\" or "
           "\"test\", got \"",
           split, "\"");
  std::error_code ec;
  FX_CHECK(std::filesystem::is_directory(dir, ec), "fx::data::fashion_mnist: directory ", dir,
           " does not exist. ", kInstallHint, ".");
  const std::string prefix = split == "train" ? "train" : "t10k";
  std::string ipath = find_file(dir, prefix + "-images-idx3-ubyte");
  std::string lpath = find_file(dir, prefix + "-labels-idx1-ubyte");

  Tensor images = read_idx(ipath, f32);
  Tensor labels = read_idx(lpath, i64);
  const Shape& is = images.shape();
  FX_CHECK(is.size() == 3 && is[1] == 28 && is[2] == 28, "fx::data::fashion_mnist: ", ipath,
           ": images are ", is, ", expected (N, 28, 28)");
  FX_CHECK(labels.ndim() == 1 && labels.shape()[0] == is[0], "fx::data::fashion_mnist: ", lpath,
           ": labels are ", labels.shape(), ", expected (", is[0], ",) to match ", ipath);
  const int64_t* lp = labels.data<int64_t>();
  for (int64_t i = 0; i < labels.numel(); ++i)
    FX_CHECK(lp[i] >= 0 && lp[i] < 10, "fx::data::fashion_mnist: ", lpath, ": label ", i, " is ",
             lp[i], ", expected 0..9");

  float* ip = images.data<float>();
  for (int64_t i = 0, n = images.numel(); i < n; ++i) ip[i] /= 255.0f;
  return {images.reshape({is[0], 28 * 28}), labels};
}

}  // namespace fx::data
