// ADBench input files (GMM, BA, hand): a whitespace tokenizer that knows its line, a reader of
// ':'-separated records (the hand model), and strict number parsing.
#include "fluxion/data/adbench.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "fluxion/core/error.hpp"

namespace fx::data {
namespace {

// Strict parses: the whole token, and (for reals) a finite value.
bool parse(std::string_view t, double& v) {
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return ec == std::errc() && end == t.data() + t.size() && std::isfinite(v);
}
bool parse(std::string_view t, long long& v) {
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return ec == std::errc() && end == t.data() + t.size();
}

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
    if (!parse(t, v))
      fail("line ", line_, ": expected ", what, " (a finite number), got '", t, "'");
    return v;
  }

  long long integer(const std::string& what, long long lo, long long hi) {
    std::string_view t = next(what);
    long long v = 0;
    if (!parse(t, v)) fail("line ", line_, ": expected ", what, " (an integer), got '", t, "'");
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

  // How many tokens are left, without consuming them.
  size_t left() const {
    size_t n = 0;
    for (size_t i = pos_; i < text_.size(); ++i)
      n += !is_space(text_[i]) && (i == pos_ || is_space(text_[i - 1]));
    return n;
  }

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

// A line-based file of ':'-separated fields (the hand model): next() splits the next non-empty
// line into trimmed fields; real() and integer() parse one of them as strictly as Tokens does.
class Records {
 public:
  Records(std::string path, const char* reader)
      : text_(slurp(path, reader)), path_(std::move(path)), reader_(reader) {}

  bool next() {
    fields_.clear();
    while (fields_.empty() && pos_ < text_.size()) {
      size_t end = std::min(text_.find('\n', pos_), text_.size());
      std::string_view line = std::string_view(text_).substr(pos_, end - pos_);
      pos_ = end + 1;
      ++line_;
      if (trim(line).empty()) continue;
      for (size_t b = 0, e = 0; e != line.npos; b = e + 1) {
        e = line.find(':', b);
        fields_.push_back(trim(line.substr(b, e == line.npos ? e : e - b)));
      }
    }
    return !fields_.empty();
  }
  size_t size() const { return fields_.size(); }
  std::string_view field(size_t i) const { return fields_[i]; }
  size_t line() const { return line_; }

  double real(size_t i, const char* what) const {
    double v = 0;
    if (!parse(fields_[i], v)) bad(i, what, "a finite number");
    return v;
  }
  long long integer(size_t i, const char* what, long long lo, long long hi) const {
    long long v = 0;
    if (!parse(fields_[i], v)) bad(i, what, "an integer");
    if (v < lo || v > hi)
      fail("line ", line_, ", field ", i + 1, ": ", what, " is ", v, ", outside [", lo, ", ", hi,
           "]");
    return v;
  }

  template <class... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    detail::fail(reader_, ": ", path_, ": ", parts...);
  }

 private:
  static std::string_view trim(std::string_view s) {
    const char* space = " \t\r\v\f";
    size_t b = s.find_first_not_of(space);
    return b == s.npos ? std::string_view() : s.substr(b, s.find_last_not_of(space) - b + 1);
  }
  [[noreturn]] void bad(size_t i, const char* what, const char* kind) const {
    fail("line ", line_, ", field ", i + 1, ": expected ", what, " (", kind, "), got '", fields_[i],
         "'");
  }
  std::string text_, path_;
  const char* reader_;
  size_t pos_ = 0, line_ = 0;
  std::vector<std::string_view> fields_;
};

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

HandInput read_hand(const std::string& model_dir, const std::string& instance_path) {
  const char* reader = "fx::data::read_hand";
  const std::filesystem::path dir(model_dir);
  HandInput h;

  // bones.txt: name : parent : 16 base_relative values : 16 inverse_base_absolute values.
  Records b((dir / "bones.txt").string(), reader);
  while (b.next()) {
    const long long i = h.bones();
    if (b.size() != 34)
      b.fail("line ", b.line(), ": expected 34 fields (name, parent, 16 + 16 matrix values), got ",
             b.size());
    h.bone_names.emplace_back(b.field(0));
    h.parents.push_back(int(b.integer(1, "the parent (-1, or an earlier bone)", -1, i - 1)));
    for (size_t j = 2; j < 18; ++j) h.base_relatives.push_back(b.real(j, "a base_relative value"));
    for (size_t j = 18; j < 34; ++j)
      h.inverse_base_absolutes.push_back(b.real(j, "an inverse_base_absolute value"));
  }
  if (h.bones() == 0) b.fail("no bones");
  const size_t nb = size_t(h.bones());

  // vertices.txt: x : y : z : 5 values (normal, uv) : n : n pairs bone : weight.
  Records v((dir / "vertices.txt").string(), reader);
  while (v.next()) {
    if (v.size() < 9) v.fail("line ", v.line(), ": expected at least 9 fields, got ", v.size());
    for (size_t j = 0; j < 8; ++j) {
      const double x = v.real(j, "a coordinate, normal or uv value");
      if (j < 3) h.base_positions.push_back(x);
    }
    const long long n = v.integer(8, "the number of bone weights", 0, (long long)nb);
    if (v.size() != size_t(9 + 2 * n))
      v.fail("line ", v.line(), ": ", n, " bone weights need ", 9 + 2 * n, " fields, got ",
             v.size());
    h.weights.resize(h.weights.size() + nb);
    double* row = h.weights.data() + h.weights.size() - nb;
    for (size_t j = 9; j < v.size(); j += 2) {
      const long long bone = v.integer(j, "a bone index", 0, (long long)nb - 1);
      row[bone] = v.real(j + 1, "a bone weight");
    }
  }
  if (h.vertices() == 0) v.fail("no vertices");

  // triangles.txt: a : b : c.
  Records t((dir / "triangles.txt").string(), reader);
  while (t.next()) {
    if (t.size() != 3) t.fail("line ", t.line(), ": expected 3 vertex indices, got ", t.size());
    for (size_t j = 0; j < 3; ++j)
      h.triangles.push_back(int(t.integer(j, "a vertex index", 0, h.vertices() - 1)));
  }
  const long long ntri = (long long)h.triangles.size() / 3;
  if (ntri == 0) t.fail("no triangles");

  // The instance: n_pts n_theta; n_pts × (correspondence x y z); [2·n_pts us]; n_theta theta.
  Tokens tok(slurp(instance_path, reader), instance_path, reader);
  const long long n = tok.integer("the number of points", 1, 1 << 26);
  const long long nt = tok.integer("the number of pose parameters", 1, 1 << 16);
  const size_t left = tok.left(), simple = size_t(4 * n + nt);
  if (left != simple && left != simple + size_t(2 * n))
    tok.fail("the header 'n_pts n_theta' = '", n, " ", nt, "' needs ", simple,
             " more values (simple) or ", simple + size_t(2 * n), " (complicated, with us), got ",
             left);
  const bool complicated = left != simple;
  const long long hi = complicated ? ntri - 1 : h.vertices() - 1;
  const char* target =
      complicated ? "triangle correspondence of point" : "vertex correspondence of point";
  for (long long i = 0; i < n; ++i) {
    h.correspondences.push_back(int(tok.integer(what(target, i, n), 0, hi)));
    for (int j = 0; j < 3; ++j) h.points.push_back(tok.real(what("point", i, n, j)));
  }
  for (long long i = 0; complicated && i < n; ++i)
    for (int j = 0; j < 2; ++j) h.us.push_back(tok.real(what("us of point", i, n, j)));
  for (long long k = 0; k < nt; ++k) h.theta.push_back(tok.real(what("theta", k, nt)));
  return h;
}

}  // namespace fx::data
