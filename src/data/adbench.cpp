// ADBench input files (GMM, BA): a whitespace tokenizer that knows its line, and strict number
// parsing.
#include "fluxion/data/adbench.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string_view>

#include "fluxion/core/error.hpp"

namespace fx::data {
namespace {

class Tokens {
 public:
  // `reader` names the public function in every message ("fx::data::read_gmm").
  Tokens(std::string text, std::string path, const char* reader)
      : text_(std::move(text)), path_(std::move(path)), reader_(reader) {}

  // The next token, or an error saying what was expected when the file has ended.
  std::string_view next(const std::string& what) {
    skip_space();
    if (pos_ >= text_.size())
      fail("the file ends at line ", line_, " after ", count_, " values; expected ", what);
    size_t begin = pos_;
    while (pos_ < text_.size() && !is_space(text_[pos_])) ++pos_;
    ++count_;
    return std::string_view(text_).substr(begin, pos_ - begin);
  }

  double real(const std::string& what) {
    std::string_view t = next(what);
    double v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v))
      fail("line ", line_, ": expected ", what, " (a finite number), got '", t, "'");
    return v;
  }

  long long integer(const std::string& what, long long lo, long long hi) {
    std::string_view t = next(what);
    long long v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size())
      fail("line ", line_, ": expected ", what, " (an integer), got '", t, "'");
    if (v < lo || v > hi)
      fail("line ", line_, ": ", what, " is ", v, ", outside [", lo, ", ", hi, "]");
    return v;
  }

  // `after` names the last thing the format has ("the Wishart parameters").
  void expect_end(const char* after) {
    skip_space();
    if (pos_ < text_.size()) {
      size_t end = pos_;
      while (end < text_.size() && !is_space(text_[end]) && end - pos_ < 32) ++end;
      fail("line ", line_, ": unexpected data after ", after, ": '", text_.substr(pos_, end - pos_),
           "'");
    }
  }

  size_t bytes() const { return text_.size(); }

  template <class... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    detail::fail(reader_, ": ", path_, ": ", parts...);
  }

 private:
  static bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
  }
  void skip_space() {
    while (pos_ < text_.size() && is_space(text_[pos_])) {
      if (text_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }
  std::string text_;
  std::string path_;
  const char* reader_;
  size_t pos_ = 0;
  size_t line_ = 1;
  size_t count_ = 0;
};

std::string what(const char* name, long long item, long long of, long long entry = -1) {
  std::ostringstream os;
  os << name << ' ' << item << " of " << of;
  if (entry >= 0) os << ", value " << entry;
  return os.str();
}

// The whole file as text; a missing or unreadable file throws naming `reader` and the path.
std::string slurp(const std::string& path, const char* reader) {
  std::ifstream in(path, std::ios::binary);
  FX_CHECK(in, reader, ": cannot open '", path, "'");
  std::ostringstream buf;
  buf << in.rdbuf();
  FX_CHECK(!in.bad(), reader, ": error reading '", path, "'");
  return buf.str();
}

}  // namespace

GmmInput read_gmm(const std::string& path) {
  Tokens tok(slurp(path, "fx::data::read_gmm"), path, "fx::data::read_gmm");

  GmmInput g;
  g.d = int(tok.integer("the dimension d", 1, 1 << 16));
  g.k = int(tok.integer("the number of components k", 1, 1 << 24));
  g.n = int(tok.integer("the number of points n", 1, 1 << 30));
  // Every value takes at least two bytes (a digit and a separator): a header promising more
  // than the file can hold is corrupt, and is caught before allocating for it.
  long long d = g.d, k = g.k, n = g.n, icf = d * (d + 1) / 2;
  long long values = k + k * d + k * icf + n * d + 2;
  if (values > (long long)(tok.bytes() / 2 + 1))
    tok.fail("the header 'd k n' = '", d, " ", k, " ", n, "' promises ", values,
             " values but the file has only ", tok.bytes(), " bytes");

  g.alphas.resize(k);
  for (long long c = 0; c < k; ++c) g.alphas[c] = tok.real(what("alpha", c, k));
  g.means.resize(k * d);
  for (long long c = 0; c < k; ++c)
    for (long long j = 0; j < d; ++j) g.means[c * d + j] = tok.real(what("mean", c, k, j));
  g.icf.resize(k * icf);
  for (long long c = 0; c < k; ++c)
    for (long long j = 0; j < icf; ++j) g.icf[c * icf + j] = tok.real(what("icf", c, k, j));
  g.x.resize(n * d);
  for (long long i = 0; i < n; ++i)
    for (long long j = 0; j < d; ++j) g.x[i * d + j] = tok.real(what("point", i, n, j));
  g.gamma = tok.real("the Wishart gamma");
  if (!(g.gamma > 0)) tok.fail("the Wishart gamma must be positive, got ", g.gamma);
  g.m = int(tok.integer("the Wishart m", 0, 1 << 20));
  tok.expect_end("the Wishart parameters");
  return g;
}

BaInput read_ba(const std::string& path) {
  Tokens tok(slurp(path, "fx::data::read_ba"), path, "fx::data::read_ba");
  BaInput b;
  // Limits keep every derived count (11n, 3m, 2p, 15 nonzeros per reprojection row) inside int,
  // the index type of ADBench's CSR Jacobian.
  b.n = int(tok.integer("the number of cameras n", 1, 1 << 26));
  b.m = int(tok.integer("the number of points m", 1, 1 << 26));
  b.p = int(tok.integer("the number of observations p", 1, 1 << 26));
  double cam[BaInput::kCamParams], pt[3], w, feat[2];
  for (int j = 0; j < BaInput::kCamParams; ++j)
    cam[j] = tok.real(what("camera value", j, BaInput::kCamParams));
  for (int j = 0; j < 3; ++j) pt[j] = tok.real(what("point coordinate", j, 3));
  w = tok.real("the weight");
  for (int j = 0; j < 2; ++j) feat[j] = tok.real(what("feature coordinate", j, 2));
  tok.expect_end("the feature");

  // ADBench replicates the one camera, point, weight and feature; observation i sees camera
  // i mod n and point i mod m.
  const size_t n = size_t(b.n), m = size_t(b.m), p = size_t(b.p);
  b.cams.resize(n * BaInput::kCamParams);
  for (size_t i = 0; i < n; ++i)
    std::copy(cam, cam + BaInput::kCamParams,
              b.cams.begin() + std::ptrdiff_t(i * BaInput::kCamParams));
  b.X.resize(m * 3);
  for (size_t i = 0; i < m; ++i) std::copy(pt, pt + 3, b.X.begin() + std::ptrdiff_t(i * 3));
  b.w.assign(p, w);
  b.feats.resize(p * 2);
  b.obs.resize(p * 2);
  for (size_t i = 0; i < p; ++i) {
    b.feats[2 * i] = feat[0];
    b.feats[2 * i + 1] = feat[1];
    b.obs[2 * i] = int(i % n);
    b.obs[2 * i + 1] = int(i % m);
  }
  return b;
}

}  // namespace fx::data
