// Curves into an RGB buffer, then libpng's simplified writer into a PNG in memory.
#include "fluxion/train/plot.hpp"

#include <png.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

#include "fluxion/core/error.hpp"
#include "fluxion/io/atomic_file.hpp"

namespace fx::train {
namespace {

constexpr Rgb kBlack{0, 0, 0}, kWhite{255, 255, 255}, kGrid{225, 225, 225};
constexpr Rgb kPalette[] = {{31, 119, 180}, {255, 127, 14},  {44, 160, 44},
                            {214, 39, 40},  {148, 103, 189}, {140, 86, 75}};

// A 3x5 pixel font: five rows of three bits (left pixel = 4), drawn at kScale.
struct Glyph {
  char c;
  uint8_t rows[5];
};
constexpr Glyph kFont[] = {
    {'0', {7, 5, 5, 5, 7}}, {'1', {2, 6, 2, 2, 7}}, {'2', {7, 1, 7, 4, 7}}, {'3', {7, 1, 7, 1, 7}},
    {'4', {5, 5, 7, 1, 1}}, {'5', {7, 4, 7, 1, 7}}, {'6', {7, 4, 7, 5, 7}}, {'7', {7, 1, 1, 1, 1}},
    {'8', {7, 5, 7, 5, 7}}, {'9', {7, 5, 7, 1, 7}}, {'.', {0, 0, 0, 0, 2}}, {'-', {0, 0, 7, 0, 0}},
    {'+', {0, 2, 7, 2, 0}}, {'_', {0, 0, 0, 0, 7}}, {'=', {0, 7, 0, 7, 0}}, {'A', {2, 5, 7, 5, 5}},
    {'B', {6, 5, 6, 5, 6}}, {'C', {3, 4, 4, 4, 3}}, {'D', {6, 5, 5, 5, 6}}, {'E', {7, 4, 6, 4, 7}},
    {'F', {7, 4, 6, 4, 4}}, {'G', {3, 4, 5, 5, 3}}, {'H', {5, 5, 7, 5, 5}}, {'I', {7, 2, 2, 2, 7}},
    {'J', {1, 1, 1, 5, 2}}, {'K', {5, 5, 6, 5, 5}}, {'L', {4, 4, 4, 4, 7}}, {'M', {5, 7, 7, 5, 5}},
    {'N', {6, 5, 5, 5, 5}}, {'O', {2, 5, 5, 5, 2}}, {'P', {6, 5, 6, 4, 4}}, {'Q', {2, 5, 5, 6, 3}},
    {'R', {6, 5, 6, 5, 5}}, {'S', {3, 4, 2, 1, 6}}, {'T', {7, 2, 2, 2, 2}}, {'U', {5, 5, 5, 5, 7}},
    {'V', {5, 5, 5, 5, 2}}, {'W', {5, 5, 7, 7, 5}}, {'X', {5, 5, 2, 5, 5}}, {'Y', {5, 5, 2, 2, 2}},
    {'Z', {7, 1, 2, 4, 7}},
};
constexpr int kScale = 2;
constexpr int kCharW = 4 * kScale;  // 3 pixels and a gap
constexpr int kCharH = 5 * kScale;

class Canvas {
 public:
  Canvas(int w, int h) : w_(w), h_(h), px_(size_t(w) * size_t(h) * 3, 255) {}
  void set(int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= w_ || y >= h_) return;
    uint8_t* p = &px_[(size_t(y) * size_t(w_) + size_t(x)) * 3];
    p[0] = c[0], p[1] = c[1], p[2] = c[2];
  }
  void hline(int x0, int x1, int y, Rgb c) {
    for (int x = std::min(x0, x1); x <= std::max(x0, x1); ++x) set(x, y, c);
  }
  void vline(int x, int y0, int y1, Rgb c) {
    for (int y = std::min(y0, y1); y <= std::max(y0, y1); ++y) set(x, y, c);
  }
  // Bresenham with a 2x2 brush: a curve stays visible, and every pixel has exactly colour c.
  void line(int x0, int y0, int x1, int y1, Rgb c) {
    int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
    int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, err = dx + dy;
    for (;;) {
      set(x0, y0, c), set(x0 + 1, y0, c), set(x0, y0 + 1, c), set(x0 + 1, y0 + 1, c);
      if (x0 == x1 && y0 == y1) break;
      int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
    }
  }
  void text(int x, int y, const std::string& s, Rgb c) {  // (x, y): top left
    for (char ch : s) {
      char u = char(std::toupper(static_cast<unsigned char>(ch)));
      for (const Glyph& g : kFont) {
        if (g.c != u) continue;
        for (int r = 0; r < 5; ++r)
          for (int b = 0; b < 3; ++b)
            if (g.rows[r] & (4 >> b))
              for (int k = 0; k < kScale * kScale; ++k)
                set(x + b * kScale + k % kScale, y + r * kScale + k / kScale, c);
      }
      x += kCharW;  // unknown characters (spaces) leave a gap
    }
  }
  const std::vector<uint8_t>& pixels() const { return px_; }

 private:
  int w_, h_;
  std::vector<uint8_t> px_;
};

// Tick values at 1, 2 or 5 x 10^k covering [lo, hi] with about `want` intervals.
std::vector<double> nice_ticks(double lo, double hi, int want) {
  double raw = (hi - lo) / want, mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag * (raw / mag < 1.5 ? 1 : raw / mag < 3.5 ? 2 : raw / mag < 7.5 ? 5 : 10);
  std::vector<double> out;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return out;
}

std::string label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string encode_png(const Canvas& c, int w, int h, const std::string& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(w);
  image.height = png_uint_32(h);
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  const void* rows = c.pixels().data();
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, rows, 0, nullptr))
    fx::detail::fail("fx::train::plot_history: libpng cannot encode '", path, "': ", image.message);
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&image, out.data(), &size, 0, rows, 0, nullptr))
    fx::detail::fail("fx::train::plot_history: libpng cannot encode '", path, "': ", image.message);
  out.resize(size);
  return out;
}

}  // namespace

Rgb plot_colour(size_t i) { return kPalette[i % std::size(kPalette)]; }

void plot_history(const History& history, const std::string& path, const PlotOptions& options) {
  const int w = options.width, h = options.height;
  FX_CHECK(w >= 200 && h >= 150 && w <= 10000 && h <= 10000, "fx::train::plot_history: size ", w,
           "x", h, " is outside 200x150 .. 10000x10000");
  std::vector<std::string> names = options.series;
  if (names.empty()) {
    for (const std::string& n : history.names())
      if (n.find("loss") != std::string::npos) names.push_back(n);
    if (names.empty()) names = history.names();
  }
  std::vector<std::vector<std::pair<int64_t, double>>> series;
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const std::string& n : names) {
    series.push_back(history.series(n));
    FX_CHECK(!series.back().empty(), "fx::train::plot_history: no metric named '", n, "'");
    for (auto [s, v] : series.back()) {
      if (!std::isfinite(v)) continue;
      x0 = std::min(x0, double(s)), x1 = std::max(x1, double(s));
      y0 = std::min(y0, v), y1 = std::max(y1, v);
    }
  }
  FX_CHECK(x0 <= x1, "fx::train::plot_history: the series hold no finite values to plot");
  if (x1 == x0) x0 -= 1, x1 += 1;
  if (y1 == y0) y0 -= 0.5, y1 += 0.5;
  const double pad = (y1 - y0) * 0.05;
  y0 -= pad, y1 += pad;

  Canvas c(w, h);
  const int left = 80, right = w - 20, top = options.title.empty() ? 20 : 40, bottom = h - 45;
  auto px = [&](double s) {
    return left + int(std::lround((s - x0) / (x1 - x0) * (right - left)));
  };
  auto py = [&](double v) {
    return bottom - int(std::lround((v - y0) / (y1 - y0) * (bottom - top)));
  };

  for (double t : nice_ticks(y0, y1, 6)) {
    int y = py(t);
    c.hline(left + 1, right, y, kGrid);
    c.hline(left - 6, left, y, kBlack);
    std::string s = label(t);
    c.text(left - 10 - int(s.size()) * kCharW, y - kCharH / 2, s, kBlack);
  }
  for (double t : nice_ticks(x0, x1, 8)) {
    int x = px(t);
    c.vline(x, top, bottom - 1, kGrid);
    c.vline(x, bottom, bottom + 6, kBlack);
    std::string s = label(t);
    c.text(x - int(s.size()) * kCharW / 2, bottom + 10, s, kBlack);
  }
  c.hline(left, right, bottom, kBlack);
  c.vline(left, top, bottom, kBlack);
  c.text((left + right) / 2 - 2 * kCharW, h - 14, "step", kBlack);
  if (!options.title.empty())
    c.text((w - int(options.title.size()) * kCharW) / 2, 12, options.title, kBlack);

  for (size_t i = 0; i < series.size(); ++i) {
    const Rgb col = plot_colour(i);
    bool have_prev = false;
    int xp = 0, yp = 0;
    for (auto [s, v] : series[i]) {
      if (!std::isfinite(v)) {  // a gap in the curve
        have_prev = false;
        continue;
      }
      int x = px(double(s)), y = py(v);
      if (have_prev) c.line(xp, yp, x, y, col);
      // Sparse series (one value per epoch) get markers, so a single point is visible.
      if (series[i].size() <= 30)
        for (int k = -3; k <= 3; ++k) c.hline(x - 3, x + 3, y + k, col);
      else if (!have_prev) c.line(x, y, x, y, col);
      xp = x, yp = y, have_prev = true;
    }
    // Legend: a swatch and the name, top right.
    int ly = top + 8 + int(i) * (kCharH + 8), lx = right - 20 - 30 * kCharW;
    for (int k = 0; k < 4; ++k) c.hline(lx, lx + 24, ly + 3 + k, col);
    c.text(lx + 32, ly, names[i], kBlack);
  }
  io::write_file_atomically(path, encode_png(c, w, h, path));
}

}  // namespace fx::train
