#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include <fluxion/train/progress.hpp>

using Mode = fx::train::ProgressOptions::Mode;

namespace {
int count(const std::string& s, char c) { return int(std::count(s.begin(), s.end(), c)); }
bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}
}  // namespace

TEST(ProgressBar, ShowsStepBarRateEtaAndMetrics) {
  std::ostringstream os;
  fx::train::ProgressBar bar(4, {.label = "epoch 1", .width = 8, .out = &os, .mode = Mode::log});
  bar.update({{"loss", 2.5}, {"acc", 0.125}});
  bar.update({{"loss", 0.48213}});
  std::string l = bar.line();
  EXPECT_TRUE(has(l, "epoch 1 [====>   ] 2/4")) << l;
  EXPECT_TRUE(has(l, "it/s") || has(l, "s/it")) << l;
  EXPECT_TRUE(has(l, "ETA 0:")) << l;
  EXPECT_TRUE(has(l, "loss=0.4821  acc=0.125")) << l;  // updated in place, first-seen order
  bar.update({}, 2);
  bar.finish();
  EXPECT_TRUE(has(bar.line(), "[========] 4/4")) << bar.line();
  EXPECT_FALSE(has(bar.line(), "ETA")) << bar.line();
}

TEST(ProgressBar, LogModePrintsWholeLinesAtMostEveryInterval) {
  std::ostringstream os;
  {
    fx::train::ProgressBar bar(1000, {.log_interval_s = 3600, .out = &os, .mode = Mode::log});
    for (int i = 0; i < 1000; ++i) bar.update({{"loss", 1.0 / (i + 1)}});
    EXPECT_EQ(os.str(), "");  // a fast loop prints nothing until the interval or the end
  }                           // the destructor finishes
  EXPECT_EQ(count(os.str(), '\n'), 1);
  EXPECT_EQ(count(os.str(), '\r'), 0);
  EXPECT_TRUE(has(os.str(), "1000/1000")) << os.str();

  std::ostringstream every;
  fx::train::ProgressBar bar(3, {.log_interval_s = 0, .out = &every, .mode = Mode::log});
  for (int i = 0; i < 3; ++i) bar.update();
  bar.finish();
  bar.finish();
  EXPECT_EQ(count(every.str(), '\n'), 4);  // three updates and one final line
}

TEST(ProgressBar, TtyModeRedrawsInPlace) {
  std::ostringstream os;
  fx::train::ProgressBar bar(3, {.tty_interval_s = 0, .out = &os, .mode = Mode::tty});
  bar.update({{"loss", 123456.0}});
  bar.update({{"loss", 1.0}});
  EXPECT_EQ(count(os.str(), '\r'), 2);
  EXPECT_EQ(count(os.str(), '\n'), 0);
  // The second line is padded to cover the longer first one.
  auto second = os.str().substr(os.str().rfind('\r') + 1);
  auto first_len = os.str().rfind('\r') - 1;
  EXPECT_EQ(second.size(), first_len);
  bar.finish();
  EXPECT_EQ(os.str().back(), '\n');
  EXPECT_TRUE(bar.is_tty());
}

TEST(ProgressBar, UnknownTotalShowsCountOnly) {
  std::ostringstream os;
  fx::train::ProgressBar bar(0, {.out = &os, .mode = Mode::log});
  bar.update({}, 5);
  EXPECT_FALSE(has(bar.line(), "[")) << bar.line();
  EXPECT_TRUE(has(bar.line(), "5  ")) << bar.line();
  EXPECT_FALSE(bar.is_tty());
}

TEST(ProgressBar, FormatsDurations) {
  EXPECT_EQ(fx::train::format_duration(0), "0:00");
  EXPECT_EQ(fx::train::format_duration(65.4), "1:05");
  EXPECT_EQ(fx::train::format_duration(3 * 3600 + 7), "3:00:07");
  EXPECT_EQ(fx::train::format_duration(-1), "?");
}
