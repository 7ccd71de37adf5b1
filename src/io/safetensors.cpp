// safetensors reading and writing. The header is parsed with nlohmann-json; everything it says
// is checked against the file before a tensor is allocated or a byte of data is read.
#include "fluxion/io/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "fluxion/io/atomic_file.hpp"

namespace fx::io {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian data; a big-endian host would need byte swaps");

using json = nlohmann::json;

struct DTypeName {
  const char* name;
  bool known_to_fluxion;
  DType dtype;
};

// Every dtype the format defines; the ones fluxion has no tensor type for are still recognised so
// that the error can say "unsupported" rather than "corrupt".
constexpr DTypeName kDTypes[] = {
    {"BOOL", true, boolean}, {"I32", true, i32},      {"I64", true, i64},
    {"F32", true, f32},      {"F64", true, f64},      {"U8", false, f32},
    {"I8", false, f32},      {"I16", false, f32},     {"U16", false, f32},
    {"F16", false, f32},     {"BF16", false, f32},    {"U32", false, f32},
    {"U64", false, f32},     {"F8_E5M2", false, f32}, {"F8_E4M3", false, f32},
    {"F8_E8M0", false, f32}, {"F4", false, f32},      {"F6_E2M3", false, f32},
    {"F6_E3M2", false, f32}, {"C64", false, f32},
};

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

struct Header {
  std::vector<Entry> entries;
  Metadata metadata;
};

// Error messages for one file (and, once known, one tensor in it).
struct Where {
  const std::string& file;
  std::string tensor;
  template <class... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    if (tensor.empty()) detail::fail("fx::io::read_safetensors: '", file, "': ", parts...);
    detail::fail("fx::io::read_safetensors: '", file, "': tensor '", tensor, "': ", parts...);
  }
};

uint64_t unsigned_field(const json& v, const Where& at, const char* what) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) at.fail(what, " is negative (", v.dump(), ")");
  at.fail(what, " must be a non-negative integer, got ", v.dump().substr(0, 64));
}

Entry parse_entry(const std::string& name, const json& v, const Where& file_at) {
  Where at{file_at.file, name};
  if (!v.is_object()) at.fail("the entry must be an object, got ", v.dump().substr(0, 64));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) at.fail("the entry has no \"", key, "\"");
  Entry e{name, f32, {}, 0, 0};

  const json& dt = v["dtype"];
  if (!dt.is_string()) at.fail("dtype must be a string, got ", dt.dump().substr(0, 64));
  const std::string& dts = dt.get_ref<const std::string&>();
  const DTypeName* found = nullptr;
  for (const DTypeName& d : kDTypes)
    if (dts == d.name) found = &d;
  if (!found) at.fail("unknown dtype \"", dts.substr(0, 32), "\"");
  if (!found->known_to_fluxion)
    at.fail("dtype ", dts, " has no fluxion counterpart (fluxion reads BOOL, I32, I64, F32, F64)");
  e.dtype = found->dtype;

  const json& shape = v["shape"];
  if (!shape.is_array()) at.fail("shape must be an array, got ", shape.dump().substr(0, 64));
  if (shape.size() > size_t(kMaxDims))
    at.fail("shape has ", shape.size(), " dimensions, fluxion holds at most ", kMaxDims);
  uint64_t numel = 1;
  for (const json& d : shape) {
    uint64_t n = unsigned_field(d, at, "a shape dimension");
    if (n > uint64_t(std::numeric_limits<int64_t>::max()) ||
        __builtin_mul_overflow(numel, n, &numel))
      at.fail("shape ", shape.dump(), " has more elements than fit in 64 bits");
    e.shape.push_back(int64_t(n));
  }
  uint64_t bytes;
  if (numel > uint64_t(std::numeric_limits<int64_t>::max()) ||
      __builtin_mul_overflow(numel, uint64_t(itemsize(e.dtype)), &bytes))
    at.fail("shape ", shape.dump(), " of ", dts, " needs more bytes than fit in 64 bits");

  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    at.fail("data_offsets must be [begin, end], got ", off.dump().substr(0, 64));
  e.begin = unsigned_field(off[0], at, "data_offsets' begin");
  e.end = unsigned_field(off[1], at, "data_offsets' end");
  if (e.end < e.begin) at.fail("data_offsets [", e.begin, ", ", e.end, "] end before they begin");
  if (e.end - e.begin != bytes)
    at.fail("data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin, " bytes, but ", dts,
            " ", e.shape, " needs ", bytes);
  return e;
}

// Parses and validates the JSON header; data_bytes is the size of the region after it.
Header parse_header(const std::string& file, std::string_view text, uint64_t data_bytes) {
  Where at{file, {}};
  // The format requires the header to start with '{'; checking first keeps odd JSON (a bare
  // number, a string) out of the parser.
  if (text.empty() || text.front() != '{') at.fail("the header does not start with '{'");
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    at.fail("the header is not valid JSON: ", e.what());
  }
  if (!j.is_object()) at.fail("the header is not a JSON object");

  Header h;
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) at.fail("__metadata__ must be an object of strings");
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string())
          at.fail("__metadata__ value of '", k, "' is not a string: ", v.dump().substr(0, 64));
        h.metadata.emplace(k, v.get<std::string>());
      }
      continue;
    }
    h.entries.push_back(parse_entry(key, value, at));
  }

  // The ranges must tile [0, data_bytes): sorted by position, each begins where the one before
  // ends. This rejects overlaps (a tensor aliasing another), gaps (hidden bytes) and anything
  // past the end of the file in one pass.
  std::vector<const Entry*> order;
  for (const Entry& e : h.entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t pos = 0;
  for (const Entry* e : order) {
    Where et{file, e->name};
    if (e->end > data_bytes)
      et.fail("data_offsets [", e->begin, ", ", e->end, "] run past the ", data_bytes,
              " bytes of data in the file");
    if (e->begin < pos)
      et.fail("data_offsets [", e->begin, ", ", e->end, "] overlap another tensor's (ending at ",
              pos, ")");
    if (e->begin > pos)
      et.fail("data_offsets [", e->begin, ", ", e->end, "] leave bytes [", pos, ", ", e->begin,
              ") that no tensor covers");
    pos = e->end;
  }
  if (pos != data_bytes)
    at.fail("the tensors cover ", pos, " bytes, but the data region holds ", data_bytes);
  return h;
}

using Reader = std::function<void(uint64_t offset, void* dst, size_t bytes)>;

SafetensorsFile read_with(const std::string& file, uint64_t size, const Reader& read) {
  Where at{file, {}};
  if (size < 8) at.fail("is ", size, " bytes, shorter than the 8-byte header length");
  unsigned char len[8];
  read(0, len, 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > kMaxHeaderBytes)
    at.fail("header length ", n, " is over the ", kMaxHeaderBytes, "-byte limit");
  if (n > size - 8) at.fail("header length ", n, " runs past the end of the ", size, "-byte file");
  std::string text(size_t(n), '\0');
  read(8, text.data(), size_t(n));
  Header h = parse_header(file, text, size - 8 - n);

  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  for (const Entry& e : h.entries) {
    // Allocation is bounded by the validated ranges, which the file's own size bounds.
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (e.end > e.begin) read(8 + n + e.begin, t.raw_data(), size_t(e.end - e.begin));
    if (e.dtype == boolean) {
      const unsigned char* p = static_cast<const unsigned char*>(t.raw_data());
      for (uint64_t i = 0; i < e.end - e.begin; ++i)
        if (p[i] > 1) Where{file, e.name}.fail("BOOL byte ", i, " is ", int(p[i]), ", not 0 or 1");
    }
    out.tensors.emplace(e.name, std::move(t));
  }
  return out;
}

// The header (padded so the data starts 8-byte aligned) and each tensor's contiguous bytes.
struct Serialized {
  std::string header;  // including the 8-byte length
  std::vector<Tensor> data;
};

Serialized serialize(const TensorMap& tensors, const Metadata& metadata) {
  json h = json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  Serialized s;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    FX_CHECK(name != "__metadata__", "fx::io::write_safetensors: '__metadata__' is reserved and ",
             "cannot name a tensor");
    FX_CHECK(t.defined(), "fx::io::write_safetensors: tensor '", name, "' is undefined");
    FX_CHECK(t.device() == Device::cpu, "fx::io::write_safetensors: tensor '", name, "' ",
             t.shape(), " lives on ", device_name(t.device()), "; move it to the cpu first");
    const char* dt = safetensors_dtype(t.dtype());
    uint64_t bytes = uint64_t(t.numel()) * itemsize(t.dtype());
    h[name] = {
        {"dtype", dt}, {"shape", t.shape().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    s.data.push_back(t.is_contiguous() ? t : t.contiguous());
  }
  std::string text;
  try {
    text = h.dump();
  } catch (const json::exception& e) {  // a name or metadata string that is not UTF-8
    detail::fail("fx::io::write_safetensors: ", e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  s.header.resize(8);
  for (int i = 0; i < 8; ++i) s.header[size_t(i)] = char((uint64_t(text.size()) >> (8 * i)) & 0xff);
  s.header += text;
  return s;
}

size_t byte_size(const Tensor& t) { return size_t(t.numel()) * itemsize(t.dtype()); }

}  // namespace

const char* safetensors_dtype(DType t) {
  for (const DTypeName& d : kDTypes)
    if (d.known_to_fluxion && d.dtype == t) return d.name;
  detail::fail("fx::io: dtype ", dtype_name(t), " has no safetensors counterpart");
}

std::string serialize_safetensors(const TensorMap& tensors, const Metadata& metadata) {
  Serialized s = serialize(tensors, metadata);
  std::string out = std::move(s.header);
  for (const Tensor& t : s.data) out.append(static_cast<const char*>(t.raw_data()), byte_size(t));
  return out;
}

void write_safetensors(const std::string& path, const TensorMap& tensors,
                       const Metadata& metadata) {
  Serialized s = serialize(tensors, metadata);
  AtomicFile f(path);
  f.write(s.header.data(), s.header.size());
  for (const Tensor& t : s.data) f.write(t.raw_data(), byte_size(t));
  f.commit();
}

SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, const std::string& name) {
  return read_with(name, bytes.size(), [&](uint64_t offset, void* dst, size_t n) {
    std::memcpy(dst, bytes.data() + offset, n);  // read_with only asks for validated ranges
  });
}

SafetensorsFile read_safetensors(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    detail::fail("fx::io::read_safetensors: cannot open '", path, "': ", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    detail::fail("fx::io::read_safetensors: '", path, "' is not a regular file");
  return read_with(path, uint64_t(st.st_size), [&](uint64_t offset, void* dst, size_t n) {
    char* p = static_cast<char*>(dst);
    while (n > 0) {
      ssize_t got = ::pread(fd, p, n, off_t(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0)  // the file shrank under us, or an I/O error
        detail::fail("fx::io::read_safetensors: '", path, "': read at byte ", offset,
                     " failed: ", got == 0 ? "unexpected end of file" : std::strerror(errno));
      p += got;
      n -= size_t(got);
      offset += uint64_t(got);
    }
  });
}

}  // namespace fx::io
