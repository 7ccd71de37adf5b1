// ADBench readers (GMM, BA, hand): the shipped files, small files read in order, and malformed
// files that must throw.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fluxion/data/adbench.hpp>
#include <fluxion/testing/helpers.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace {

const char* kShipped = FLUXION_ADBENCH_DIR "/gmm/1k/gmm_d10_K25.txt";

// d=2, k=2, n=3: 2 alphas, 2×2 means, 2×3 icf, 3×2 points, gamma m.
const std::string kSmall =
    "2 2 3\n0.5\n-1\n1 2\n3 4\n0.1 0.2 0.3\n0.4 0.5 0.6\n1 1\n2 2\n3 3\n1.5 2\n";

std::string write_temp(const std::string& name, const std::string& text) {
  // The process id keeps tests that ctest runs side by side out of each other's files.
  std::filesystem::path p = std::filesystem::temp_directory_path() /
                            ("fx_adbench_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p.string();
}

::testing::AssertionResult read_throws(const std::string& text,
                                       const std::vector<std::string>& parts) {
  std::string path = write_temp("bad.txt", text), message;
  bool ok =
      fx::testing::throws_mentioning([&] { (void)fx::data::read_gmm(path); }, parts, &message);
  std::filesystem::remove(path);
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "message: " << message;
}

}  // namespace

TEST(AdbenchGmm, ReadsTheShippedFile) {
  ASSERT_TRUE(std::filesystem::exists(kShipped)) << kShipped << " (ADBench inputs beside the repo)";
  fx::data::GmmInput g = fx::data::read_gmm(kShipped);
  EXPECT_EQ(g.d, 10);
  EXPECT_EQ(g.k, 25);
  EXPECT_EQ(g.n, 1000);
  EXPECT_EQ(g.icf_size(), 55);
  ASSERT_EQ(g.alphas.size(), 25u);
  ASSERT_EQ(g.means.size(), 250u);
  ASSERT_EQ(g.icf.size(), 25u * 55u);
  ASSERT_EQ(g.x.size(), 10000u);
  EXPECT_EQ(g.alphas.front(), -0.649014);  // first and last values of each block in the file
  EXPECT_EQ(g.alphas.back(), -1.865123);
  EXPECT_EQ(g.means.front(), 0.039055);
  EXPECT_EQ(g.x.back(), 1.427060);
  EXPECT_EQ(g.x[g.x.size() - 10], 0.157990);
  EXPECT_EQ(g.gamma, 1.0);
  EXPECT_EQ(g.m, 0);
}

TEST(AdbenchGmm, ReadsASmallFileInOrder) {
  std::string path = write_temp("small.txt", kSmall);
  fx::data::GmmInput g = fx::data::read_gmm(path);
  std::filesystem::remove(path);
  EXPECT_EQ(g.d, 2);
  EXPECT_EQ(g.k, 2);
  EXPECT_EQ(g.n, 3);
  EXPECT_EQ(g.alphas, (std::vector<double>{0.5, -1}));
  EXPECT_EQ(g.means, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(g.icf, (std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}));
  EXPECT_EQ(g.x, (std::vector<double>{1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(g.gamma, 1.5);
  EXPECT_EQ(g.m, 2);
}

TEST(AdbenchGmm, MalformedFilesThrowNamingTheProblem) {
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] { (void)fx::data::read_gmm("/nonexistent/gmm.txt"); },
      {"fx::data::read_gmm", "cannot open", "/nonexistent/gmm.txt"}));
  EXPECT_TRUE(read_throws("2 x 3\n", {"read_gmm", "line 1", "components", "'x'"}));
  EXPECT_TRUE(read_throws("0 2 3\n", {"dimension", "is 0"}));
  EXPECT_TRUE(read_throws("", {"ends", "dimension"}));
  // Truncated: the last line (gamma m) is missing.
  EXPECT_TRUE(read_throws(kSmall.substr(0, kSmall.rfind("1.5")), {"ends", "Wishart gamma"}));
  // A non-number where the second mean's first value belongs (line 5).
  std::string bad = kSmall;
  bad.replace(bad.find("3 4"), 1, "abc");
  EXPECT_TRUE(read_throws(bad, {"line 5", "mean 1 of 2, value 0", "'abc'"}));
  EXPECT_TRUE(read_throws(kSmall + "7\n", {"unexpected data", "'7'"}));
  bad = kSmall;
  bad.replace(bad.find("1.5 2"), 3, "nan");
  EXPECT_TRUE(read_throws(bad, {"Wishart gamma", "finite", "'nan'"}));
  EXPECT_TRUE(read_throws("1000 1000 100000\n1\n", {"promises", "bytes"}));
}

// ---- bundle adjustment ----------------------------------------------------------------------

namespace {

// n=2 cameras, m=3 points, p=5 observations: one camera, one point, one weight, one feature.
const std::string kBa = "2 3 5\n0.1 0.2 0.3 1 2 3 400 5 6 0.01 0.02\n7 8 9\n0.5\n10 -20\n";

::testing::AssertionResult ba_throws(const std::string& text,
                                     const std::vector<std::string>& parts) {
  std::string path = write_temp("bad_ba.txt", text), message;
  bool ok = fx::testing::throws_mentioning([&] { (void)fx::data::read_ba(path); }, parts, &message);
  std::filesystem::remove(path);
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "message: " << message;
}

}  // namespace

TEST(AdbenchBa, ReplicatesLikeAdbench) {
  std::string path = write_temp("ba.txt", kBa);
  fx::data::BaInput b = fx::data::read_ba(path);
  std::filesystem::remove(path);
  EXPECT_EQ(b.n, 2);
  EXPECT_EQ(b.m, 3);
  EXPECT_EQ(b.p, 5);
  const std::vector<double> cam{0.1, 0.2, 0.3, 1, 2, 3, 400, 5, 6, 0.01, 0.02};
  ASSERT_EQ(b.cams.size(), 22u);
  for (int c = 0; c < 2; ++c)
    EXPECT_EQ(std::vector<double>(b.cams.begin() + c * 11, b.cams.begin() + c * 11 + 11), cam);
  EXPECT_EQ(b.X, (std::vector<double>{7, 8, 9, 7, 8, 9, 7, 8, 9}));
  EXPECT_EQ(b.w, std::vector<double>(5, 0.5));
  EXPECT_EQ(b.feats, (std::vector<double>{10, -20, 10, -20, 10, -20, 10, -20, 10, -20}));
  // observation i: camera i mod n, point i mod m.
  EXPECT_EQ(b.obs, (std::vector<int>{0, 0, 1, 1, 0, 2, 1, 0, 0, 1}));
}

TEST(AdbenchBa, ReadsTheShippedFile) {
  const char* shipped = FLUXION_ADBENCH_DIR "/ba/ba1_n49_m7776_p31843.txt";
  ASSERT_TRUE(std::filesystem::exists(shipped)) << shipped << " (ADBench inputs beside the repo)";
  fx::data::BaInput b = fx::data::read_ba(shipped);
  EXPECT_EQ(b.n, 49);
  EXPECT_EQ(b.m, 7776);
  EXPECT_EQ(b.p, 31843);
  ASSERT_EQ(b.cams.size(), 49u * 11u);
  ASSERT_EQ(b.X.size(), 7776u * 3u);
  ASSERT_EQ(b.feats.size(), 2u * 31843u);
  ASSERT_EQ(b.obs.size(), 2u * 31843u);
  EXPECT_EQ(b.cams[48 * 11 + 0], -0.758453);  // the last camera is the file's camera
  EXPECT_EQ(b.cams[48 * 11 + 10], 0.002739);
  EXPECT_EQ(b.X[7775 * 3 + 2], 3.023326);
  EXPECT_EQ(b.w.back(), 0.417022);
  EXPECT_EQ(b.feats[2 * 31842 + 1], 834.209256);
  EXPECT_EQ(b.obs[2 * 31842], 31842 % 49);
  EXPECT_EQ(b.obs[2 * 31842 + 1], 31842 % 7776);
}

TEST(AdbenchBa, MalformedFilesThrowNamingTheProblem) {
  EXPECT_TRUE(
      fx::testing::throws_mentioning([] { (void)fx::data::read_ba("/nonexistent/ba.txt"); },
                                     {"fx::data::read_ba", "cannot open", "/nonexistent/ba.txt"}));
  // Bad headers.
  EXPECT_TRUE(ba_throws("", {"read_ba", "ends", "cameras n"}));
  EXPECT_TRUE(ba_throws("2 x 5\n", {"read_ba", "line 1", "points m", "'x'"}));
  EXPECT_TRUE(ba_throws("2 3 0\n", {"observations p", "is 0"}));
  EXPECT_TRUE(ba_throws("-1 3 5\n", {"cameras n", "is -1"}));
  EXPECT_TRUE(ba_throws("2 3 5.5\n", {"observations p", "integer", "'5.5'"}));
  // Truncated: the feature's second coordinate is missing.
  EXPECT_TRUE(ba_throws(kBa.substr(0, kBa.rfind("-20")), {"ends", "feature coordinate 1 of 2"}));
  // Truncated inside the camera.
  EXPECT_TRUE(ba_throws("2 3 5\n0.1 0.2 0.3\n", {"ends", "camera value 3 of 11"}));
  std::string bad = kBa;
  bad.replace(bad.find("400"), 3, "inf");
  EXPECT_TRUE(ba_throws(bad, {"line 2", "camera value 6 of 11", "finite", "'inf'"}));
  EXPECT_TRUE(ba_throws(kBa + "3\n", {"unexpected data after the feature", "'3'"}));
}

// ---- hand tracking ---------------------------------------------------------------------------

namespace {

const std::string kHandDir = std::string(FLUXION_ADBENCH_DIR) + "/hand/";

std::string slurp_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// A bone line: name, parent, then base_relative = first..first+15, inverse = first+16..first+31.
std::string bone(const std::string& name, int parent, int first) {
  std::ostringstream line;
  line << name << ':' << parent;
  for (int j = 0; j < 32; ++j) line << ':' << first + j;
  line << '\n';
  return line.str();
}

// 2 bones, 3 vertices (one with a CRLF ending, a blank line before the last), 1 triangle.
struct HandFiles {
  std::string bones = bone("root", -1, 0) + bone("tip", 0, 100);
  std::string vertices =
      "0:0:0:0:0:1:0:0:1:0:1\n"
      "1 : 0 : 0 : 0:0:1:0.5:0 : 2 : 0:0.25 : 1:0.75\r\n"
      "\n"
      "0:1:0:0:0:1:0:1:1:1:1\n";
  std::string triangles = "0:1:2\n";
  // 2 points, 3 thetas; `complicated` inserts 4 us before theta.
  std::string instance = "2 3\n1 0.1 0.2 0.3\n2 0.4 0.5 0.6\n7 8 9\n";
  std::string complicated = "2 3\n0 0.1 0.2 0.3\n0 0.4 0.5 0.6\n0.25 0.5 0.125 0.75\n7 8 9\n";
};

// Writes the model and `instance` under a temp folder, reads them, and removes the folder.
fx::data::HandInput read_hand_files(const HandFiles& f, const std::string& instance) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("fx_adbench_hand_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bones.txt") << f.bones;
  std::ofstream(dir / "vertices.txt") << f.vertices;
  std::ofstream(dir / "triangles.txt") << f.triangles;
  std::ofstream(dir / "instance.txt") << instance;
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  return fx::data::read_hand(dir.string(), (dir / "instance.txt").string());
}

::testing::AssertionResult hand_throws(const HandFiles& f, const std::string& instance,
                                       const std::vector<std::string>& parts) {
  std::string message;
  if (fx::testing::throws_mentioning([&] { (void)read_hand_files(f, instance); }, parts, &message))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "message: " << message;
}

// Row-major 4×4 product c = a·b.
void mul4(const double* a, const double* b, double* c) {
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < 4; ++k) {
      c[4 * r + k] = 0;
      for (int j = 0; j < 4; ++j) c[4 * r + k] += a[4 * r + j] * b[4 * j + k];
    }
}

}  // namespace

TEST(AdbenchHand, ReadsTheShippedSimpleInstance) {
  const std::string model = kHandDir + "simple_small/model";
  const std::string file = kHandDir + "simple_small/hand1_t26_c100.txt";
  ASSERT_TRUE(std::filesystem::exists(file)) << file << " (ADBench inputs beside the repo)";
  fx::data::HandInput h = fx::data::read_hand(model, file);
  EXPECT_EQ(h.bones(), 22);
  EXPECT_EQ(h.vertices(), 544);
  EXPECT_EQ(h.npoints(), 100);
  EXPECT_FALSE(h.complicated());
  EXPECT_TRUE(h.us.empty());
  ASSERT_EQ(h.theta.size(), 26u);
  ASSERT_EQ(h.points.size(), 300u);
  ASSERT_EQ(h.bone_names.size(), 22u);
  ASSERT_EQ(h.base_relatives.size(), 22u * 16u);
  ASSERT_EQ(h.inverse_base_absolutes.size(), 22u * 16u);
  ASSERT_EQ(h.weights.size(), 544u * 22u);
  EXPECT_EQ(h.triangles.size() % 3, 0u);
  EXPECT_EQ(h.bone_names[0], "wrist");
  EXPECT_EQ(h.parents[0], -1);

  // Each vertex's weights sum to 1 (the file lists 1 to 4 bones per vertex).
  for (int v = 0; v < h.vertices(); ++v) {
    double sum = 0;
    for (int b = 0; b < h.bones(); ++b) sum += h.weights[size_t(v) * 22 + size_t(b)];
    ASSERT_LT(std::abs(sum - 1), 1e-6) << "vertex " << v;
  }

  // The matrices are row-major: the base absolutes, chained from the base relatives down the
  // bone tree, are the inverses of the stored inverse_base_absolutes (to the file's float
  // precision). Read column-major, this fails by O(1).
  std::vector<double> absolute(22 * 16);
  for (int b = 0; b < 22; ++b) {
    const double* rel = &h.base_relatives[size_t(16) * b];
    const int p = h.parents[size_t(b)];
    if (p < 0) std::copy(rel, rel + 16, &absolute[size_t(16) * b]);
    else mul4(&absolute[size_t(16) * p], rel, &absolute[size_t(16) * b]);
    double id[16];
    mul4(&h.inverse_base_absolutes[size_t(16) * b], &absolute[size_t(16) * b], id);
    for (int k = 0; k < 16; ++k) EXPECT_NEAR(id[k], k % 5 == 0 ? 1.0 : 0.0, 1e-5) << "bone " << b;
  }

  // The instance matches the file's text: header, first record, last theta.
  std::istringstream text(slurp_text(file));
  int n = 0, nt = 0, c = -1;
  double x = 0, y = 0, z = 0;
  ASSERT_TRUE(text >> n >> nt >> c >> x >> y >> z);
  EXPECT_EQ(n, 100);
  EXPECT_EQ(nt, 26);
  EXPECT_EQ(h.correspondences[0], c);
  EXPECT_EQ(h.points[0], x);
  EXPECT_EQ(h.points[1], y);
  EXPECT_EQ(h.points[2], z);
  std::string token, last;
  while (text >> token) last = token;
  EXPECT_EQ(h.theta.back(), std::stod(last));
  for (int i = 0; i < h.npoints(); ++i) {
    ASSERT_GE(h.correspondences[size_t(i)], 0);
    ASSERT_LT(h.correspondences[size_t(i)], h.vertices());
  }
}

TEST(AdbenchHand, ReadsTheShippedComplicatedInstance) {
  const std::string model = kHandDir + "complicated_small/model";
  const std::string file = kHandDir + "complicated_small/hand1_t26_c100.txt";
  ASSERT_TRUE(std::filesystem::exists(file)) << file << " (ADBench inputs beside the repo)";
  fx::data::HandInput h = fx::data::read_hand(model, file);
  EXPECT_TRUE(h.complicated());
  EXPECT_EQ(h.npoints(), 100);
  ASSERT_EQ(h.us.size(), 200u);
  ASSERT_EQ(h.theta.size(), 26u);
  const int ntri = int(h.triangles.size() / 3);
  EXPECT_EQ(ntri, 1084);  // the lines of model/triangles.txt
  for (int i = 0; i < h.npoints(); ++i) {
    ASSERT_GE(h.correspondences[size_t(i)], 0);
    ASSERT_LT(h.correspondences[size_t(i)], ntri);
  }
  // The us follow the 100 point records: the file's tokens 2 + 400 and 2 + 400 + 199.
  std::istringstream text(slurp_text(file));
  std::vector<double> values;
  for (double v; text >> v;) values.push_back(v);
  ASSERT_EQ(values.size(), 2u + 400u + 200u + 26u);
  EXPECT_EQ(h.correspondences[0], int(values[2]));
  EXPECT_EQ(h.us.front(), values[402]);
  EXPECT_EQ(h.us.back(), values[601]);
  EXPECT_EQ(h.theta.front(), values[602]);
}

TEST(AdbenchHand, ReadsASmallModelInOrder) {
  HandFiles f;
  fx::data::HandInput h = read_hand_files(f, f.instance);
  EXPECT_EQ(h.bone_names, (std::vector<std::string>{"root", "tip"}));
  EXPECT_EQ(h.parents, (std::vector<int>{-1, 0}));
  ASSERT_EQ(h.base_relatives.size(), 32u);
  EXPECT_EQ(h.base_relatives[0], 0);
  EXPECT_EQ(h.base_relatives[15], 15);
  EXPECT_EQ(h.base_relatives[1], 1);  // row 0, column 1: the file's order, not transposed
  EXPECT_EQ(h.inverse_base_absolutes[4], 20);
  EXPECT_EQ(h.base_relatives[16], 100);
  EXPECT_EQ(h.inverse_base_absolutes[0], 16);
  EXPECT_EQ(h.inverse_base_absolutes[31], 131);
  EXPECT_EQ(h.base_positions, (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(h.weights, (std::vector<double>{1, 0, 0.25, 0.75, 0, 1}));
  EXPECT_EQ(h.triangles, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(h.correspondences, (std::vector<int>{1, 2}));
  EXPECT_EQ(h.points, (std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}));
  EXPECT_TRUE(h.us.empty());
  EXPECT_EQ(h.theta, (std::vector<double>{7, 8, 9}));

  h = read_hand_files(f, f.complicated);
  EXPECT_TRUE(h.complicated());
  EXPECT_EQ(h.correspondences, (std::vector<int>{0, 0}));
  EXPECT_EQ(h.us, (std::vector<double>{0.25, 0.5, 0.125, 0.75}));
  EXPECT_EQ(h.theta, (std::vector<double>{7, 8, 9}));
}

TEST(AdbenchHand, MalformedFilesThrowNamingTheProblem) {
  const HandFiles f;
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] { (void)fx::data::read_hand("/nonexistent/hand_model", "/nonexistent/hand1.txt"); },
      {"fx::data::read_hand", "cannot open", "/nonexistent/hand_model/bones.txt"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] { (void)fx::data::read_hand(kHandDir + "simple_small/model", "/nonexistent/hand1.txt"); },
      {"fx::data::read_hand", "cannot open", "/nonexistent/hand1.txt"}));

  // The instance: truncated (a theta missing), neither variant, bad header, bad numbers.
  const std::string& in = f.instance;
  EXPECT_TRUE(hand_throws(f, in.substr(0, in.rfind('9')),
                          {"fx::data::read_hand", "instance.txt", "needs 11", "got 10"}));
  EXPECT_TRUE(hand_throws(f, in + "1 2\n", {"needs 11", "or 15", "got 13"}));
  EXPECT_TRUE(hand_throws(f, "0 3\n7 8 9\n", {"instance.txt", "number of points", "is 0"}));
  EXPECT_TRUE(hand_throws(f, "2 0\n", {"number of pose parameters", "is 0"}));
  std::string bad = in;
  bad.replace(bad.find("0.5"), 3, "nan");
  EXPECT_TRUE(hand_throws(f, bad, {"line 3", "point 1 of 2, value 1", "finite", "'nan'"}));
  // Correspondences: vertices 0..2 (simple), triangle 0 only (complicated).
  bad = in;
  bad.replace(bad.find("2 0.4"), 1, "3");
  EXPECT_TRUE(hand_throws(
      f, bad,
      {"instance.txt", "line 3", "vertex correspondence of point 1", "is 3", "outside [0, 2]"}));
  bad = f.complicated;
  bad.replace(bad.find("0 0.4"), 1, "1");
  EXPECT_TRUE(hand_throws(f, bad, {"triangle correspondence of point 1", "is 1", "[0, 0]"}));

  // bones.txt: a parent that does not precede its child, a bad root, field count, non-numbers.
  HandFiles m = f;
  m.bones = bone("root", -1, 0) + bone("tip", 1, 100);
  EXPECT_TRUE(hand_throws(
      m, in, {"fx::data::read_hand", "bones.txt", "line 2", "parent", "is 1", "outside [-1, 0]"}));
  m.bones = bone("root", -2, 0);
  EXPECT_TRUE(hand_throws(m, in, {"bones.txt", "line 1", "is -2"}));
  m.bones = bone("root", -1, 0) + "tip:0:1:2\n";
  EXPECT_TRUE(hand_throws(m, in, {"bones.txt", "line 2", "expected 34 fields", "got 4"}));
  m.bones = bone("root", -1, 0);
  m.bones.replace(m.bones.find(":5:"), 3, ":x5:");
  EXPECT_TRUE(hand_throws(m, in, {"bones.txt", "line 1, field 8", "base_relative", "'x5'"}));
  m.bones = "\n";
  EXPECT_TRUE(hand_throws(m, in, {"bones.txt", "no bones"}));

  // vertices.txt: bone index out of range, missing pair, negative count, non-finite.
  m = f;
  m.vertices = "0:0:0:0:0:1:0:0:1:2:1\n";
  EXPECT_TRUE(hand_throws(m, in, {"vertices.txt", "line 1", "bone index", "is 2"}));
  m.vertices = "0:0:0:0:0:1:0:0:2:0:1\n";
  EXPECT_TRUE(hand_throws(m, in, {"vertices.txt", "2 bone weights need 13 fields, got 11"}));
  m.vertices = "0:0:0:0:0:1:0:0:-1\n";
  EXPECT_TRUE(hand_throws(m, in, {"vertices.txt", "number of bone weights", "is -1"}));
  m.vertices = f.vertices + "inf:0:0:0:0:1:0:0:1:0:1\n";
  EXPECT_TRUE(hand_throws(m, in, {"vertices.txt", "line 5, field 1", "finite", "'inf'"}));

  // triangles.txt: a vertex index out of range, a short line.
  m = f;
  m.triangles = "0:1:3\n";
  EXPECT_TRUE(hand_throws(m, in, {"triangles.txt", "line 1", "vertex index", "is 3"}));
  m.triangles = "0:1\n";
  EXPECT_TRUE(hand_throws(m, in, {"triangles.txt", "expected 3 vertex indices, got 2"}));
}
