#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include <fluxion/io/atomic_file.hpp>
#include <fluxion/io/safetensors.hpp>
#include <fluxion/ops/create.hpp>
#include <fluxion/ops/view.hpp>

#include "io_test_helpers.hpp"

using fx::testing_io::same_bits;
using fx::testing_io::TempDir;

namespace {

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[size_t(i)] = char((n >> (8 * i)) & 0xff);
  return s;
}

std::string f32_bytes(std::initializer_list<float> v) {
  std::string s;
  for (float x : v) s.append(reinterpret_cast<const char*>(&x), 4);
  return s;
}

fx::io::SafetensorsFile parse(const std::string& bytes) {
  return fx::io::parse_safetensors({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()},
                                   "test.safetensors");
}

}  // namespace

// A file written by hand from the format's description reads as the values it holds.
TEST(Safetensors, ReadsAHandWrittenFile) {
  std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"I64","shape":[],"data_offsets":[8,16]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  int64_t seven = 7;
  std::string bytes = le64(header.size()) + header + f32_bytes({1.5f, -2.0f}) +
                      std::string(reinterpret_cast<const char*>(&seven), 8);
  fx::io::SafetensorsFile f = parse(bytes);
  ASSERT_EQ(f.tensors.size(), 2u);
  const fx::Tensor& a = f.tensors.at("a");
  EXPECT_EQ(a.dtype(), fx::f32);
  EXPECT_EQ(a.shape(), fx::Shape{2});
  EXPECT_EQ(fx::to_vector<float>(a), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(f.tensors.at("b").ndim(), 0);
  EXPECT_EQ(f.tensors.at("b").item<int64_t>(), 7);
  EXPECT_EQ(f.metadata.at("format"), "pt");
}

// The writer's bytes, spelled out: length, compact JSON (keys sorted), space padding to 8 bytes,
// then the data in name order.
TEST(Safetensors, WritesTheExactBytesOfTheSpec) {
  fx::io::TensorMap t{{"w", fx::tensor({1.0, 2.0}, fx::f32)},
                      {"m", fx::Tensor::empty(fx::Shape{3}, fx::boolean)}};
  bool* m = t.at("m").data<bool>();
  m[0] = true, m[1] = false, m[2] = true;
  std::string header =
      R"({"__metadata__":{"k":"v"},"m":{"data_offsets":[0,3],"dtype":"BOOL","shape":[3]},)"
      R"("w":{"data_offsets":[3,11],"dtype":"F32","shape":[2]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string expected =
      le64(header.size()) + header + std::string("\x01\x00\x01", 3) + f32_bytes({1.0f, 2.0f});
  EXPECT_EQ(fx::io::serialize_safetensors(t, {{"k", "v"}}), expected);

  TempDir dir;
  fx::io::write_safetensors(dir.file("t.safetensors"), t, {{"k", "v"}});
  EXPECT_EQ(fx::testing_io::read_bytes(dir.file("t.safetensors")), expected);
}

TEST(Safetensors, RoundTripsEveryDtypeShapeAndView) {
  fx::Generator gen(3);
  fx::Tensor base = fx::randn({4, 5}, gen, fx::f64);
  fx::io::TensorMap t{
      {"f32", fx::randn({2, 3, 4}, gen)},
      {"f64.transposed", base.t()},  // a strided view is written in row-major order
      {"i32", fx::tensor({-1, 0, 2147483647}, fx::i32)},
      {"i64", fx::arange(5, fx::i64)},
      {"bool", fx::tensor({1, 0, 0, 1}, fx::boolean)},
      {"scalar", fx::scalar(3.25, fx::f64)},
      {"empty", fx::zeros({0, 7})},
  };
  TempDir dir;
  fx::io::write_safetensors(dir.file("all.safetensors"), t, {{"epoch", "3"}});
  fx::io::SafetensorsFile f = fx::io::read_safetensors(dir.file("all.safetensors"));
  ASSERT_EQ(f.tensors.size(), t.size());
  for (const auto& [name, x] : t) EXPECT_TRUE(same_bits(f.tensors.at(name), x)) << name;
  EXPECT_EQ(f.metadata, (fx::io::Metadata{{"epoch", "3"}}));
}

TEST(Safetensors, RejectsWhatTheFormatCannotHold) {
  TempDir dir;
  auto write = [&](fx::io::TensorMap t) { fx::io::write_safetensors(dir.file("x"), t); };
  EXPECT_THROW(write({{"z", fx::Tensor::empty(fx::Shape{2}, fx::c64)}}), fx::Error);
  EXPECT_THROW(write({{"__metadata__", fx::ones({2})}}), fx::Error);
  EXPECT_THROW(write({{"u", fx::Tensor()}}), fx::Error);
  EXPECT_FALSE(std::filesystem::exists(dir.file("x")));
  EXPECT_THROW(fx::io::read_safetensors(dir.file("missing")), fx::Error);
}

// Every malformed header is an fx::Error that names the file and, where there is one, the tensor.
TEST(Safetensors, ValidatesTheHeader) {
  auto file = [](const std::string& header, const std::string& data) {
    return le64(header.size()) + header + data;
  };
  auto expect_error = [&](const std::string& bytes, const std::string& part) {
    try {
      parse(bytes);
      ADD_FAILURE() << "no error for " << bytes.substr(8);
    } catch (const fx::Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("test.safetensors"), std::string::npos) << msg;
      EXPECT_NE(msg.find(part), std::string::npos) << msg;
    }
  };
  const std::string d8(8, '\0');
  auto one = [](const std::string& fields) { return R"({"t":{)" + fields + "}}"; };
  expect_error(file(one(R"("dtype":"F32","shape":[2],"data_offsets":[0,8])"), d8 + "x"), "cover");
  expect_error(file(one(R"("dtype":"F32","shape":[2],"data_offsets":[0,16])"), d8), "'t'");
  expect_error(file(one(R"("dtype":"F32","shape":[3],"data_offsets":[0,8])"), d8), "needs 12");
  expect_error(file(one(R"("dtype":"F32","shape":[-2],"data_offsets":[0,8])"), d8), "negative");
  expect_error(file(one(R"("dtype":"F32","shape":[2.5],"data_offsets":[0,8])"), d8),
               "non-negative");
  expect_error(file(one(R"("dtype":"F32","shape":[2],"data_offsets":[8,0])"), d8), "end before");
  expect_error(file(one(R"("dtype":"F32","shape":[2],"data_offsets":[0])"), d8), "data_offsets");
  expect_error(file(one(R"("dtype":"Q7","shape":[2],"data_offsets":[0,8])"), d8), "unknown dtype");
  expect_error(file(one(R"("dtype":"F16","shape":[4],"data_offsets":[0,8])"), d8), "F16");
  expect_error(file(one(R"("shape":[2],"data_offsets":[0,8])"), d8), "dtype");
  expect_error(
      file(one(R"("dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8])"), d8),
      "64 bits");
  expect_error(file(one(R"("dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4])"), d8),
               "dimensions");
  expect_error(file(one(R"("dtype":"BOOL","shape":[1],"data_offsets":[0,1])"), "\x02"),
               "BOOL byte");
  expect_error(file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                    R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                    d8 + "abcd"),
               "overlap");
  expect_error(file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                    R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                    d8 + "abcd"),
               "no tensor covers");
  expect_error(file(R"({"__metadata__":{"k":1}})", ""), "__metadata__");
  expect_error(file(R"([1, 2])", ""), "'{'");
  expect_error(file(R"({"t": )", ""), "JSON");
  expect_error(le64(1ull << 40) + "{}", "limit");
  expect_error(le64(100) + "{}", "past the end");
  expect_error("abc", "shorter");
}

// Fuzzing: a valid file cut at every length, every byte of its header changed, and random bytes
// after a plausible length. Each is an fx::Error or, when the change happens to leave a valid
// file, a parse whose tensors fill the data region exactly; never a crash, hang or huge
// allocation (the suite also runs under ASan).
TEST(Safetensors, FuzzedFilesNeverCrash) {
  fx::Generator gen(11);
  fx::io::TensorMap t{{"a", fx::randn({3, 2}, gen)},
                      {"b", fx::arange(4, fx::i64)},
                      {"c", fx::tensor({1, 0}, fx::boolean)},
                      {"d", fx::scalar(2.0, fx::f64)}};
  const std::string good = fx::io::serialize_safetensors(t, {{"k", "v"}});
  ASSERT_EQ(parse(good).tensors.size(), 4u);
  const uint64_t header_len = uint64_t(uint8_t(good[0])) | uint64_t(uint8_t(good[1])) << 8;

  for (size_t cut = 0; cut < good.size(); ++cut)
    EXPECT_THROW(parse(good.substr(0, cut)), fx::Error) << "cut at " << cut;

  auto parse_or_error = [&](const std::string& bytes) {
    try {
      fx::io::SafetensorsFile f = parse(bytes);
      uint64_t n = 0;
      for (int i = 7; i >= 0; --i) n = n << 8 | uint8_t(bytes[size_t(i)]);
      uint64_t total = 0;
      for (const auto& [name, x] : f.tensors)
        total += uint64_t(x.numel()) * fx::itemsize(x.dtype());
      EXPECT_EQ(total, bytes.size() - 8 - n);
    } catch (const fx::Error&) {
    }
  };
  const char replacements[] = {'\0', '"', '{', '}', '[', ']', ',', ':', '9', '-', 'e', '\xff'};
  for (size_t pos = 0; pos < 8 + header_len; ++pos)
    for (char r : replacements) {
      std::string bad = good;
      bad[pos] = r;
      parse_or_error(bad);
    }
  for (int trial = 0; trial < 2000; ++trial) {
    size_t n = size_t(gen.below(200));
    std::string bytes = le64(gen.below(n + 16));
    for (size_t i = 0; i < n; ++i) bytes += char(gen.below(256));
    if (trial % 2) bytes[8] = '{';
    parse_or_error(bytes);
  }
}

TEST(Safetensors, AtomicWriteLeavesNoTemporaryAndKeepsTheOldFileOnFailure) {
  TempDir dir;
  fx::io::write_safetensors(dir.file("m.safetensors"), {{"a", fx::ones({2})}});
  const std::string before = fx::testing_io::read_bytes(dir.file("m.safetensors"));
  // A write that fails part-way (an undefined tensor after a good one) keeps the old file.
  EXPECT_THROW(fx::io::write_safetensors(dir.file("m.safetensors"),
                                         {{"a", fx::zeros({2})}, {"b", fx::Tensor()}}),
               fx::Error);
  EXPECT_EQ(fx::testing_io::read_bytes(dir.file("m.safetensors")), before);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) (void)e, ++files;
  EXPECT_EQ(files, 1);  // no temporary left behind
}

TEST(AtomicFile, AnUncommittedWriteLeavesTheTargetAlone) {
  TempDir dir;
  fx::testing_io::write_bytes(dir.file("f"), "old");
  {
    fx::io::AtomicFile f(dir.file("f"));
    f.write("new contents", 12);
    EXPECT_TRUE(std::filesystem::exists(f.temporary_path()));
  }  // destroyed without commit, as when an exception unwinds
  EXPECT_EQ(fx::testing_io::read_bytes(dir.file("f")), "old");
  fx::io::AtomicFile g(dir.file("f"));
  g.write("new", 3);
  g.commit();
  EXPECT_EQ(fx::testing_io::read_bytes(dir.file("f")), "new");
  EXPECT_FALSE(std::filesystem::exists(g.temporary_path()));
  EXPECT_THROW(fx::io::AtomicFile(dir.file("no/such/dir/f")), fx::Error);
}
