#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include <fluxion/data/idx.hpp>
#include <fluxion/ops.hpp>

namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;

namespace {

// A fresh directory per test, removed afterwards.
class Idx : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("fluxion_idx_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write_plain(const std::string& name, const Bytes& b) const {
    std::ofstream(path(name), std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    return path(name);
  }
  std::string write_gz(const std::string& name, const Bytes& b) const {
    gzFile f = gzopen(path(name).c_str(), "wb");
    if (!b.empty()) gzwrite(f, b.data(), unsigned(b.size()));
    gzclose(f);
    return path(name);
  }
  static Bytes read_bytes(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
  }

  fs::path dir_;
};

// Runs fn, expecting an fx::Error whose message contains every part.
template <class Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no fx::Error thrown";
  } catch (const fx::Error& e) {
    std::string msg = e.what();
    for (const auto& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << msg << "\n  lacks: " << p;
  }
}

// A 2 x 3 ubyte file: header, then 0..5.
Bytes small_u8() { return {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 0, 1, 2, 3, 4, 250}; }

}  // namespace

TEST_F(Idx, ReadsHandWrittenPlainAndGzipFiles) {
  for (const std::string& p :
       {write_plain("a.idx", small_u8()), write_gz("a.idx.gz", small_u8())}) {
    fx::Tensor t = fx::data::read_idx(p, fx::i64);
    EXPECT_EQ(t.shape(), (fx::Shape{2, 3}));
    EXPECT_EQ(t.dtype(), fx::i64);
    EXPECT_EQ(fx::to_vector<int64_t>(t), (std::vector<int64_t>{0, 1, 2, 3, 4, 250}));
    EXPECT_EQ(fx::to_vector<float>(fx::data::read_idx(p)).back(), 250.0f);  // f32, unscaled
  }
}

TEST_F(Idx, DecodesBigEndianMultiByteTypes) {
  // One short -2 (0xfffe), then a float 1.5 (0x3fc00000).
  write_plain("s.idx", {0, 0, 0x0B, 1, 0, 0, 0, 1, 0xff, 0xfe});
  write_plain("f.idx", {0, 0, 0x0D, 1, 0, 0, 0, 1, 0x3f, 0xc0, 0, 0});
  EXPECT_EQ(fx::data::read_idx(path("s.idx"), fx::i32).item(), -2);
  EXPECT_EQ(fx::data::read_idx(path("f.idx"), fx::f64).item(), 1.5);
}

TEST_F(Idx, RoundTripsEveryTypePlainAndGzip) {
  using T = fx::data::IdxType;
  std::vector<double> vals(24);
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = double(i) * 5 - 50;  // -50..65
  for (T type : {T::u8, T::i8, T::i16, T::i32, T::f32, T::f64}) {
    std::vector<double> want = vals;
    if (type == T::u8)
      for (double& v : want) v += 50;
    if (type == T::f32 || type == T::f64)
      for (double& v : want) v *= 0.25;
    fx::Tensor x = fx::from_vector(want, {2, 3, 4});
    for (bool gz : {false, true}) {
      std::string p = path(std::to_string(int(type)).append(gz ? ".gz" : ""));
      fx::data::write_idx(p, x, type, {.gzip = gz});
      fx::Tensor back = fx::data::read_idx(p, fx::f64);
      EXPECT_EQ(back.shape(), (fx::Shape{2, 3, 4}));
      EXPECT_EQ(fx::to_vector<double>(back), want) << "type " << int(type) << " gzip " << gz;
    }
  }
}

TEST_F(Idx, WritesStridedViews) {
  fx::Tensor x = fx::from_vector(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3}).t();  // (3, 2)
  fx::data::write_idx(path("v"), x, fx::data::IdxType::i16);
  fx::Tensor back = fx::data::read_idx(path("v"), fx::i32);
  EXPECT_EQ(back.shape(), (fx::Shape{3, 2}));
  EXPECT_EQ(fx::to_vector<int32_t>(back), (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
}

TEST_F(Idx, WriteRefusesValuesTheTypeCannotHoldAndWritesNothing) {
  fx::Tensor x = fx::tensor({1, 256, 3});
  expect_error([&] { fx::data::write_idx(path("bad"), x, fx::data::IdxType::u8); },
               {"fx::data::write_idx", "256", "ubyte"});
  EXPECT_FALSE(fs::exists(path("bad")));
  expect_error([&] { fx::data::write_idx(path("bad"), fx::tensor({0.5}), fx::data::IdxType::i32); },
               {"0.5", "does not fit"});
}

TEST_F(Idx, CorruptHeadersNameTheFileAndTheProblem) {
  struct Case {
    Bytes bytes;
    std::string says;
  };
  std::vector<Case> cases = {
      {{}, "truncated header: 0 bytes"},
      {{0, 0, 8}, "truncated header: 3 bytes"},
      {{1, 0, 8, 1, 0, 0, 0, 1, 7}, "bad magic"},
      {{0, 0, 0x07, 1, 0, 0, 0, 1, 7}, "unknown element type byte 0x07"},
      {{0, 0, 0x08, 0}, "rank 0"},
      {{0, 0, 0x08, 9}, "rank 9"},
      {{0, 0, 0x08, 2, 0, 0, 0, 1, 0, 0}, "needs 8 bytes of dimensions, file has 6"},
      {{0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3}, "truncated: the header promises 6 bytes"},
      {{0, 0, 0x0C, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0}, "truncated: the header promises 8 bytes"},
      {{0, 0, 0x08, 1, 0, 0, 0, 2, 1, 2, 3}, "trailing data"},
      {{0,   0,   0x08, 4,   255, 255, 255, 255, 255, 255, 255,
        255, 255, 255,  255, 255, 255, 255, 255, 255, 1},
       "implausible dimensions"},
      {{0, 0, 0x08, 2, 0, 0, 255, 255, 0, 0, 255, 255, 1}, "promises 4294836225 bytes"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    for (bool gz : {false, true}) {
      std::string name = std::to_string(i).append(gz ? ".gz" : "");
      std::string p = gz ? write_gz(name, cases[i].bytes) : write_plain(name, cases[i].bytes);
      SCOPED_TRACE(name);
      expect_error([&] { fx::data::read_idx(p); }, {"fx::data::read_idx", p, cases[i].says});
    }
  }
}

TEST_F(Idx, CorruptOrTruncatedGzipStreamsThrow) {
  Bytes big = {0, 0, 0x08, 1, 0, 0, 0x10, 0};  // 4096 ubytes of noise-like data
  for (int i = 0; i < 4096; ++i) big.push_back(static_cast<unsigned char>((i * 7919) >> 3));
  Bytes gz = read_bytes(write_gz("ok.gz", big));
  ASSERT_EQ(fx::data::read_idx(path("ok.gz")).numel(), 4096);

  for (size_t keep : {size_t(12), gz.size() / 2, gz.size() - 3}) {  // cut mid-stream or trailer
    std::string p = write_plain(std::to_string(keep).append("cut.gz"),
                                Bytes(gz.begin(), gz.begin() + long(keep)));
    SCOPED_TRACE(p);
    expect_error([&] { fx::data::read_idx(p); }, {"fx::data::read_idx", p});
  }
  Bytes flipped = gz;
  for (size_t i = 20; i < 40; ++i) flipped[i] ^= 0x5a;
  std::string p = write_plain("flipped.gz", flipped);
  expect_error([&] { fx::data::read_idx(p); }, {"fx::data::read_idx", p});
  Bytes badcrc = gz;
  badcrc[badcrc.size() - 6] ^= 1;  // the CRC32 in the trailer
  p = write_plain("badcrc.gz", badcrc);
  expect_error([&] { fx::data::read_idx(p); }, {"fx::data::read_idx", p, "corrupt gzip data"});
}

TEST_F(Idx, MissingFileSaysWhichPath) {
  expect_error([&] { fx::data::read_idx(path("nope.gz")); },
               {"fx::data::read_idx", "cannot open", path("nope.gz"), "No such file"});
}

TEST_F(Idx, FloatsThatDoNotFitAnIntegerDtypeThrow) {
  std::string p = path("nan");
  fx::data::write_idx(p, fx::tensor({1, NAN}), fx::data::IdxType::f32);
  expect_error([&] { fx::data::read_idx(p, fx::i64); }, {"element 1", "does not fit i64"});
  fx::data::write_idx(p, fx::tensor({1e12}, fx::f64), fx::data::IdxType::f64);
  expect_error([&] { fx::data::read_idx(p, fx::i32); }, {"element 0", "does not fit i32"});
  EXPECT_EQ(fx::data::read_idx(p, fx::i64).item(), 1e12);
}

TEST(FashionMnist, LoadsBothSplitsWithTheDocumentedShapes) {
  auto train = fx::data::fashion_mnist(fx::data::kFashionMnistDir, "train");
  auto test = fx::data::fashion_mnist(fx::data::kFashionMnistDir, "test");
  EXPECT_EQ(train.images.shape(), (fx::Shape{60000, 784}));
  EXPECT_EQ(train.labels.shape(), (fx::Shape{60000}));
  EXPECT_EQ(test.images.shape(), (fx::Shape{10000, 784}));
  EXPECT_EQ(test.labels.shape(), (fx::Shape{10000}));
  EXPECT_EQ(train.images.dtype(), fx::f32);
  EXPECT_EQ(train.labels.dtype(), fx::i64);
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(fx::min(train.images).item(), 0.0);
  EXPECT_EQ(fx::max(train.images).item(), 1.0);
  EXPECT_EQ(fx::min(test.labels).item(), 0);
  EXPECT_EQ(fx::max(test.labels).item(), 9);
  // Fashion-MNIST is balanced: 6000 of each class in train.
  auto labels = fx::to_vector<int64_t>(train.labels);
  EXPECT_EQ(std::count(labels.begin(), labels.end(), 3), 6000);
  // The first training label of Fashion-MNIST is 9 (ankle boot).
  EXPECT_EQ(labels[0], 9);
}

TEST_F(Idx, FashionMnistMissingDataSaysHowToInstallAndWhereItLooked) {
  expect_error(
      [&] { fx::data::fashion_mnist(path("absent")); },
      {"fx::data::fashion_mnist", path("absent"), "apt-get install dataset-fashion-mnist"});
  expect_error([&] { fx::data::fashion_mnist(dir_.string(), "test"); },
               {path("t10k-images-idx3-ubyte.gz"), "apt-get install dataset-fashion-mnist"});
  expect_error([&] { fx::data::fashion_mnist(dir_.string(), "valid"); }, {"\"valid\""});
}

TEST_F(Idx, FashionMnistChecksTheFilesItFinds) {
  // Right names, wrong contents: 2 images of 4 x 4.
  fx::data::write_idx(path("train-images-idx3-ubyte"), fx::zeros({2, 4, 4}), fx::data::IdxType::u8);
  fx::data::write_idx(path("train-labels-idx1-ubyte.gz"), fx::tensor({1, 2}), fx::data::IdxType::u8,
                      {.gzip = true});
  expect_error([&] { fx::data::fashion_mnist(dir_.string()); }, {"(2, 4, 4)", "(N, 28, 28)"});
  fx::data::write_idx(path("train-images-idx3-ubyte"), fx::full({2, 28, 28}, 255),
                      fx::data::IdxType::u8);
  fx::data::write_idx(path("train-labels-idx1-ubyte.gz"), fx::tensor({1, 12}),
                      fx::data::IdxType::u8, {.gzip = true});
  expect_error([&] { fx::data::fashion_mnist(dir_.string()); }, {"label 1 is 12"});
  fx::data::write_idx(path("train-labels-idx1-ubyte.gz"), fx::tensor({1, 2}), fx::data::IdxType::u8,
                      {.gzip = true});
  auto d = fx::data::fashion_mnist(dir_.string());  // plain images beside gzipped labels
  EXPECT_EQ(d.images.shape(), (fx::Shape{2, 784}));
  EXPECT_EQ(fx::max(d.images).item(), 1.0);
}
