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
