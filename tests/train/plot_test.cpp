#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <vector>

#include <fluxion/train/plot.hpp>

#include "../io/io_test_helpers.hpp"

namespace {

struct Image {
  int w = 0, h = 0;
  std::vector<uint8_t> rgb;
  int count(fx::train::Rgb c) const {
    int n = 0;
    for (size_t i = 0; i + 2 < rgb.size(); i += 3)
      n += rgb[i] == c[0] && rgb[i + 1] == c[1] && rgb[i + 2] == c[2];
    return n;
  }
};

Image read_png(const std::string& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  EXPECT_TRUE(png_image_begin_read_from_file(&image, path.c_str())) << image.message;
  image.format = PNG_FORMAT_RGB;
  Image out{int(image.width), int(image.height), std::vector<uint8_t>(PNG_IMAGE_SIZE(image))};
  EXPECT_TRUE(png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr)) << image.message;
  return out;
}

}  // namespace

TEST(PlotHistory, WritesAPngWithBothCurvesInTheirColours) {
  fx::train::History h;
  for (int s = 1; s <= 50; ++s)
    h.add({.step = s * 10, .epoch = 1 + s / 10, .name = "loss", .value = 2.0 / s});
  for (int e = 1; e <= 5; ++e)
    h.add({.step = e * 100, .epoch = e, .name = "val_loss", .value = 0.5 + 0.3 / e});
  h.add({.step = 500, .epoch = 5, .name = "val_accuracy", .value = 0.9});  // not a loss: not drawn
  fx::testing_io::TempDir dir;
  fx::train::plot_history(h, dir.file("c.png"), {.width = 640, .height = 400, .title = "mlp"});
  Image img = read_png(dir.file("c.png"));
  EXPECT_EQ(img.w, 640);
  EXPECT_EQ(img.h, 400);
  EXPECT_GT(img.count(fx::train::plot_colour(0)), 400);  // a curve across the plot, 2 px wide
  EXPECT_GT(img.count(fx::train::plot_colour(1)), 300);
  EXPECT_EQ(img.count(fx::train::plot_colour(2)), 0);  // only two series
  EXPECT_GT(img.count({0, 0, 0}), 500);                // axes, ticks, labels

  fx::train::plot_history(h, dir.file("a.png"), {.series = {"val_accuracy"}});
  Image acc = read_png(dir.file("a.png"));
  EXPECT_EQ(acc.w, 800);
  EXPECT_GT(acc.count(fx::train::plot_colour(0)), 0);
  EXPECT_THROW(fx::train::plot_history(h, dir.file("x.png"), {.series = {"nope"}}), fx::Error);
  EXPECT_THROW(fx::train::plot_history(fx::train::History{}, dir.file("x.png")), fx::Error);
}
