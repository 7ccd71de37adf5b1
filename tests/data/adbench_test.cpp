// ADBench GMM reader: the shipped d=10, K=25, 1k-point file, and malformed files that must throw.
#include <gtest/gtest.h>

#include <filesystem>
#include <fluxion/data/adbench.hpp>
#include <fluxion/testing/helpers.hpp>
#include <fstream>
#include <string>

namespace {

const char* kShipped = FLUXION_ADBENCH_DIR "/gmm/1k/gmm_d10_K25.txt";

// d=2, k=2, n=3: 2 alphas, 2×2 means, 2×3 icf, 3×2 points, gamma m.
const std::string kSmall =
    "2 2 3\n0.5\n-1\n1 2\n3 4\n0.1 0.2 0.3\n0.4 0.5 0.6\n1 1\n2 2\n3 3\n1.5 2\n";

std::string write_temp(const std::string& name, const std::string& text) {
  std::filesystem::path p = std::filesystem::temp_directory_path() / ("fx_adbench_" + name);
  std::ofstream(p) << text;
  return p.string();
}

::testing::AssertionResult read_throws(const std::string& text,
                                       const std::vector<std::string>& parts) {
  std::string path = write_temp("bad.txt", text), message;
  bool ok = fx::testing::throws_mentioning([&] { (void)fx::data::read_gmm(path); }, parts,
                                           &message);
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
const std::string kBa =
    "2 3 5\n0.1 0.2 0.3 1 2 3 400 5 6 0.01 0.02\n7 8 9\n0.5\n10 -20\n";

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
