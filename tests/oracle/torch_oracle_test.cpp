// libtorch as an independent oracle: every differentiable primitive (and the key composites) on
// random inputs in f64 and f32, comparing the forward value and the gradient of sum(f(x) * u)
// for a random cotangent u with torch autograd. Tolerances: 1e-10 (f64), 1e-5 (f32), relative
// to the larger of each element and the largest element.
//
// The rows reuse the input specs of tests/ops/op_rows.hpp; a coverage test fails for any
// built-in primitive without an oracle row named like it (and checks the row applies it).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include <fluxion/nn/losses.hpp>

#include "../ops/op_rows.hpp"
#include "oracle_coverage.hpp"

namespace {

using fx::Tensor;
using fx::rows::Args;
using fx::rows::bin;
using fx::rows::Case;
using fx::rows::In;
using fx::rows::Kind;
using fx::rows::Opts;
using fx::rows::pairs;
using fx::rows::shapes;
using fx::rows::un;
using TArgs = std::vector<torch::Tensor>;

struct OracleRow {
  std::string name;
  fx::rows::OpFn fx;
  std::function<torch::Tensor(const TArgs&)> torch;
  Opts o;                   // cases, ranges; order 0 = compare the forward only
  double f32_rtol = 1e-5;   // wider only where the inputs themselves carry less precision
  double f64_rtol = 1e-10;  // wider only where libtorch's own f64 is less accurate
};
void PrintTo(const OracleRow& r, std::ostream* os) { *os << r.name; }

// ---- conversions (through double, which holds every f32/i32/i64 value used here exactly)

std::vector<int64_t> dims(const fx::Shape& s) { return {s.begin(), s.end()}; }

torch::Tensor to_torch(const Tensor& t) {
  if (fx::is_complex(t.dtype())) {
    auto v = fx::to_vector<std::complex<double>>(t);
    auto d = torch::from_blob(v.data(), dims(t.shape()), torch::kComplexDouble).clone();
    return t.dtype() == fx::c64 ? d.to(torch::kComplexFloat) : d;
  }
  auto v = fx::to_vector<double>(t);
  auto d = torch::from_blob(v.data(), dims(t.shape()), torch::kDouble).clone();
  switch (t.dtype()) {
    case fx::f32: return d.to(torch::kFloat);
    case fx::f64: return d;
    case fx::i32:
    case fx::i64: return d.to(torch::kLong);  // torch indexes with i64
    case fx::boolean: return d.to(torch::kBool);
    default: break;
  }
  return d;
}

fx::DType dtype_of(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat: return fx::f32;
    case torch::kDouble: return fx::f64;
    case torch::kInt: return fx::i32;
    case torch::kLong: return fx::i64;
    case torch::kBool: return fx::boolean;
    case torch::kComplexFloat: return fx::c64;
    case torch::kComplexDouble: return fx::c128;
    default: throw std::runtime_error("unexpected torch dtype");
  }
}

// A tensor's values as doubles; complex elements give their real and imaginary parts.
std::vector<double> values_of(const torch::Tensor& t) {
  torch::Tensor d = t.detach();
  if (d.is_complex())
    d = torch::view_as_real(d.resolve_conj().to(torch::kComplexDouble).contiguous());
  d = d.to(torch::kDouble).contiguous();
  return {d.data_ptr<double>(), d.data_ptr<double>() + d.numel()};
}

double tolerance(fx::DType t, double f32_rtol, double f64_rtol) {
  t = fx::real_dtype(t);
  return t == fx::f64 ? f64_rtol : t == fx::f32 ? f32_rtol : 0;
}

std::vector<double> values_of(const Tensor& t) {
  if (!fx::is_complex(t.dtype())) return fx::to_vector<double>(t);
  std::vector<double> out;
  for (std::complex<double> z : fx::to_vector<std::complex<double>>(t)) {
    out.push_back(z.real());
    out.push_back(z.imag());
  }
  return out;
}

// Empty when equal within tolerance `rtol` of each element and of the largest element.
std::string mismatch(const Tensor& got, const torch::Tensor& want, double rtol) {
  std::ostringstream os;
  std::vector<int64_t> ws(want.sizes().begin(), want.sizes().end());
  if (dims(got.shape()) != ws) {
    os << "shape " << got.shape() << " vs torch " << want.sizes();
    return os.str();
  }
  auto g = values_of(got), w = values_of(want);
  double scale = 0;
  for (double x : w)
    if (std::isfinite(x)) scale = std::max(scale, std::abs(x));
  for (size_t i = 0; i < g.size(); ++i) {
    bool same = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i] ||
                std::abs(g[i] - w[i]) <= rtol * (std::abs(w[i]) + scale);
    if (!same) {
      os << "element " << i << ": fluxion " << g[i] << ", torch " << w[i] << " (|diff| "
         << std::abs(g[i] - w[i]) << ", shape " << got.shape() << ")";
      return os.str();
    }
  }
  return "";
}

// ---- rows

torch::Tensor t_pad_slice(const torch::Tensor& dy, int64_t axis, int64_t start, int64_t step,
                          int64_t extra) {
  auto s = dy.sizes().vec();
  int64_t len = s[size_t(axis)];
  s[size_t(axis)] = start + (len - 1) * step + 1 + extra;
  return torch::slice_scatter(torch::zeros(s, dy.options()), dy, axis, start,
                              start + (len - 1) * step + 1, step);
}

fx::rows::OpFn fx_pad_slice(int axis, int64_t start, int64_t step, int64_t extra) {
  return [=](const Args& a) {
    const Tensor& dy = a[0];
    fx::Shape s = dy.shape();
    s[axis] = start + (s[axis] - 1) * step + 1 + extra;
    const fx::SliceAttrs p{
        .axis = axis, .start = start, .length = dy.shape()[axis], .step = step, .shape = s};
    return fx::bind(fx::pad_slice_p, {dy}, p);
  };
}

template <class F>
std::function<torch::Tensor(const TArgs&)> tun(F f) {
  return [f](const TArgs& a) { return f(a[0]); };
}
template <class F>
std::function<torch::Tensor(const TArgs&)> tbin(F f) {
  return [f](const TArgs& a) { return f(a[0], a[1]); };
}
#define T1(expr) tun([](const torch::Tensor& x) { return expr; })
#define T2(expr) tbin([](const torch::Tensor& a, const torch::Tensor& b) { return expr; })

// NaN wherever x > 1.2 (about a fifth of uniform(-2, 2) inputs).
Tensor with_nans(const Tensor& x) { return fx::where(x > 1.2, fx::scalar(NAN, x.dtype()), x); }
torch::Tensor with_nans(const torch::Tensor& x) {
  return torch::where(x > 1.2, torch::full_like(x, NAN), x);
}

// fx::rows::with_nonfinite in torch: NaN above 1.2, +Inf in (0.9, 1.2], -Inf below -1.5.
torch::Tensor with_nonfinite(const torch::Tensor& x) {
  if (x.is_complex())
    return torch::complex(with_nonfinite(torch::real(x)), with_nonfinite(torch::imag(x)));
  const torch::Tensor inf = torch::full_like(x, INFINITY);
  return torch::where(x > 1.2, torch::full_like(x, NAN),
                      torch::where(x > 0.9, inf, torch::where(x < -1.5, -inf, x)));
}

In idx(fx::Shape s, int64_t bound, fx::DType t = fx::i64) { return In{s, Kind::index, bound, t}; }

// A row for a math function of the table (fluxion/ops/elementwise_defs.hpp), on its test range.
template <class Op>
OracleRow table(const char* name, fx::rows::OpFn f, std::function<torch::Tensor(const TArgs&)> t,
                std::vector<Case> cases, double f64_rtol = 1e-10) {
  // Gradients compared where the op differentiates on tensors (elem::tensor_order).
  const int order = std::min(1, fx::elem::tensor_order<Op>);
  return {name,         std::move(f),
          std::move(t), {.cases = std::move(cases), .range = {Op::lo, Op::hi}, .order = order},
          1e-5,         f64_rtol};
}

std::vector<OracleRow> oracle_rows() {
  auto us = shapes({{45, 65}, {}, {5, 7, 11}, {1, 3, 1}});
  auto bs = pairs({{{45, 65}, {45, 65}},
                   {{}, {}},
                   {{4, 1}, {3}},
                   {{5, 1, 7}, {1, 6, 1}},
                   {{}, {3, 4}},
                   {{2, 3}, {}}});
  auto nonscalar = shapes({{45, 65}, {5, 7, 11}, {1, 3, 1}});
  const Opts compare = {.cases = bs, .range = {-1, 1}, .order = 0, .grid = 0.5};
  return {
      {"neg", un(fx::neg), T1(-x), {.cases = us}},
      {"exp", un(fx::exp), T1(torch::exp(x)), {.cases = us, .range = {-3, 3}}},
      {"log", un(fx::log), T1(torch::log(x)), {.cases = us, .range = {0.1, 4}}},
      {"log1p", un(fx::log1p), T1(torch::log1p(x)), {.cases = us, .range = {-0.9, 3}}},
      {"sin", un(fx::sin), T1(torch::sin(x)), {.cases = us, .range = {-4, 4}}},
      {"cos", un(fx::cos), T1(torch::cos(x)), {.cases = us, .range = {-4, 4}}},
      {"tanh", un(fx::tanh), T1(torch::tanh(x)), {.cases = us, .range = {-3, 3}}},
      // ---- the math functions added with the table: one row each
      table<fx::elem::expm1_op>("expm1", un(fx::expm1), T1(torch::expm1(x)), us),
      table<fx::elem::exp2_op>("exp2", un(fx::exp2), T1(torch::exp2(x)), us),
      table<fx::elem::log2_op>("log2", un(fx::log2), T1(torch::log2(x)), us),
      table<fx::elem::log10_op>("log10", un(fx::log10), T1(torch::log10(x)), us),
      table<fx::elem::tan_op>("tan", un(fx::tan), T1(torch::tan(x)), us),
      table<fx::elem::asin_op>("asin", un(fx::asin), T1(torch::asin(x)), us),
      table<fx::elem::acos_op>("acos", un(fx::acos), T1(torch::acos(x)), us),
      table<fx::elem::atan_op>("atan", un(fx::atan), T1(torch::atan(x)), us),
      table<fx::elem::sinh_op>("sinh", un(fx::sinh), T1(torch::sinh(x)), us),
      table<fx::elem::cosh_op>("cosh", un(fx::cosh), T1(torch::cosh(x)), us),
      table<fx::elem::asinh_op>("asinh", un(fx::asinh), T1(torch::asinh(x)), us),
      table<fx::elem::acosh_op>("acosh", un(fx::acosh), T1(torch::acosh(x)), us),
      table<fx::elem::atanh_op>("atanh", un(fx::atanh), T1(torch::atanh(x)), us),
      table<fx::elem::erf_op>("erf", un(fx::erf), T1(torch::erf(x)), us),
      table<fx::elem::erfc_op>("erfc", un(fx::erfc), T1(torch::erfc(x)), us),
      table<fx::elem::erfinv_op>("erfinv", un(fx::erfinv), T1(torch::erfinv(x)), us),
      table<fx::elem::lgamma_op>("lgamma", un(fx::lgamma), T1(torch::lgamma(x)), us),
      // libtorch's trigamma (ATen's calc_trigamma, also digamma's derivative) stops its
      // asymptotic series early: ~1e-10 off in f64 where fluxion's is within 1e-12 of known
      // values and identities (tests/ops/elementwise_table_test.cpp).
      table<fx::elem::digamma_op>("digamma", un(fx::digamma), T1(torch::digamma(x)), us, 1e-8),
      table<fx::elem::trigamma_op>("trigamma", un(fx::trigamma), T1(torch::polygamma(1, x)), us,
                                   1e-8),
      table<fx::elem::tetragamma_op>("tetragamma", un(fx::tetragamma), T1(torch::polygamma(2, x)),
                                     us),
      table<fx::elem::atan2_op>("atan2", bin(fx::atan2), T2(torch::atan2(a, b)), bs),
      table<fx::elem::hypot_op>("hypot", bin(fx::hypot), T2(torch::hypot(a, b)), bs),
      // torch's copysign passes no gradient to b either; sign(a) sign(y) to a.
      table<fx::elem::copysign_op>("copysign", bin(fx::copysign), T2(torch::copysign(a, b)), bs),
      {"tanh_extreme",
       un(fx::tanh),
       T1(torch::tanh(x)),
       {.cases = shapes({{64}}), .range = {-303, 303}}},
      {"sigmoid", un(fx::sigmoid), T1(torch::sigmoid(x)), {.cases = us, .range = {-5, 5}}},
      {"sigmoid_extreme",
       un(fx::sigmoid),
       T1(torch::sigmoid(x)),
       {.cases = shapes({{64}}), .range = {-800, 800}}},
      {"relu", un(fx::relu), T1(torch::relu(x)), {.cases = us}},
      {"sqrt", un(fx::sqrt), T1(torch::sqrt(x)), {.cases = us, .range = {0.1, 4}}},
      {"abs", un(fx::abs), T1(torch::abs(x)), {.cases = us}},
      {"sign", un(fx::sign), T1(torch::sign(x)), {.cases = us}},
      {"add_scalar", un([](const Tensor& x) { return x + 0.75; }), T1(x + 0.75), {.cases = us}},
      {"mul_scalar", un([](const Tensor& x) { return x * -1.5; }), T1(x * -1.5), {.cases = us}},
      {"pow_scalar",
       un([](const Tensor& x) { return fx::pow(x, 2.5); }),
       T1(torch::pow(x, 2.5)),
       {.cases = us, .range = {0.2, 3}}},
      {"add", bin(fx::add), T2(a + b), {.cases = bs}},
      {"sub", bin(fx::sub), T2(a - b), {.cases = bs}},
      {"mul", bin(fx::mul), T2(a * b), {.cases = bs}},
      {"div", bin(fx::div), T2(a / b), {.cases = bs, .ranges = {{-2, 2}, {0.5, 2}}}},
      {"pow",
       bin([](const Tensor& a, const Tensor& b) { return fx::pow(a, b); }),
       T2(torch::pow(a, b)),
       {.cases = bs, .ranges = {{0.3, 2}, {-2, 2}}}},
      {"maximum", bin(fx::maximum), T2(torch::maximum(a, b)), {.cases = bs}},
      {"minimum", bin(fx::minimum), T2(torch::minimum(a, b)), {.cases = bs}},
      {"eq", bin(fx::eq), T2(torch::eq(a, b)), compare},
      {"ne", bin(fx::ne), T2(torch::ne(a, b)), compare},
      {"lt", bin(fx::lt), T2(torch::lt(a, b)), compare},
      {"le", bin(fx::le), T2(torch::le(a, b)), compare},
      {"gt", bin(fx::gt), T2(torch::gt(a, b)), compare},
      {"ge", bin(fx::ge), T2(torch::ge(a, b)), compare},
      {"where",
       [](const Args& a) { return fx::where(a[0], a[1], a[2]); },
       [](const TArgs& a) { return torch::where(a[0], a[1], a[2]); },
       {.cases = {{In{{45, 65}, Kind::mask}, In{{45, 65}}, In{{45, 65}}},
                  {In{{4, 1}, Kind::mask}, In{{3}}, In{{4, 3}}}}}},
      {"astype",
       un([](const Tensor& x) { return fx::astype(x, x.dtype() == fx::f32 ? fx::f64 : fx::f32); }),
       T1(x.to(x.scalar_type() == torch::kFloat ? torch::kDouble : torch::kFloat)),
       {.cases = us}},
      {"copy", un([](const Tensor& x) { return x.clone(); }), T1(x.clone()), {.cases = us}},
      {"sum", un([](const Tensor& x) { return fx::sum(x); }), T1(x.sum()), {.cases = us}},
      {"sum_axes",
       un([](const Tensor& x) {
         return fx::sum(x, {0, -1}, true);
       }),
       T1(x.sum(std::vector<int64_t>{0, x.dim() - 1}, true)),
       {.cases = nonscalar}},
      {"max", un([](const Tensor& x) { return fx::max(x); }), T1(torch::max(x)), {.cases = us}},
      {"max_axis",
       un([](const Tensor& x) { return fx::max(x, 1); }),
       T1(torch::amax(x, {1})),
       {.cases = nonscalar}},
      // Ties share the cotangent equally, as torch.amax/amin do.
      {"max_ties",
       un([](const Tensor& x) { return fx::max(x, 0, true); }),
       T1(torch::amax(x, {0}, true)),
       {.cases = shapes({{6, 9}}), .grid = 1}},
      {"min", un([](const Tensor& x) { return fx::min(x); }), T1(torch::min(x)), {.cases = us}},
      {"min_ties",
       un([](const Tensor& x) {
         return fx::min(x, {0, 1});
       }),
       T1(torch::amin(x, {0, 1})),
       {.cases = shapes({{5, 4}}), .grid = 1}},
      {"argmax",
       un([](const Tensor& x) { return fx::argmax(x, -1); }),
       T1(torch::argmax(x, -1)),
       {.cases = nonscalar, .order = 0}},
      {"isnan",
       un([](const Tensor& x) { return fx::isnan(fx::rows::with_nonfinite(x)); }),
       T1(torch::isnan(with_nonfinite(x))),
       {.cases = us, .order = 0}},
      {"isinf",
       un([](const Tensor& x) { return fx::isinf(fx::rows::with_nonfinite(x)); }),
       T1(torch::isinf(with_nonfinite(x))),
       {.cases = us, .order = 0}},
      {"isfinite",
       un([](const Tensor& x) { return fx::isfinite(fx::rows::with_nonfinite(x)); }),
       T1(torch::isfinite(with_nonfinite(x))),
       {.cases = us, .order = 0}},
      {"finiteness_complex",
       un([](const Tensor& x) {
         Tensor y = fx::rows::with_nonfinite(x);
         return fx::stack({fx::isnan(y), fx::isinf(y), fx::isfinite(y)});
       }),
       T1(torch::stack({torch::isnan(with_nonfinite(x)), torch::isinf(with_nonfinite(x)),
                        torch::isfinite(with_nonfinite(x))})),
       {.cases = us, .order = 0, .complex = true}},
      // A grid puts 0, 1 and 2 in the input, so rows are sometimes all non-zero; NaN is true.
      {"any",
       un([](const Tensor& x) { return fx::any(x, -1); }),
       T1(torch::any(x, -1)),
       {.cases = shapes({{45, 3}, {5, 7, 2}}), .range = {0, 1.9}, .order = 0, .grid = 1}},
      {"all",
       un([](const Tensor& x) { return fx::all(x, 1, true); }),
       T1(torch::all(x, 1, true)),
       {.cases = shapes({{45, 3}, {5, 2, 7}}), .range = {0, 1.9}, .order = 0, .grid = 1}},
      {"any_all_of_nan",
       un([](const Tensor& x) {
         Tensor y = fx::rows::with_nonfinite(x);
         return fx::stack({fx::any(y), fx::all(y), fx::all(fx::isfinite(y))});
       }),
       T1(torch::stack({torch::any(with_nonfinite(x)), torch::all(with_nonfinite(x)),
                        torch::all(torch::isfinite(with_nonfinite(x)))})),
       {.cases = shapes({{3}, {45, 65}, {2, 2}}), .order = 0}},
      {"argmin",
       un([](const Tensor& x) { return fx::argmin(x, 0, true); }),
       T1(torch::argmin(x, 0, true)),
       {.cases = nonscalar, .order = 0}},
      {"reshape",
       un([](const Tensor& x) {
         return x.reshape({-1, 5});
       }),
       T1(x.reshape({-1, 5})),
       {.cases = shapes({{45, 65}, {5, 7, 11}})}},
      {"permute",
       un([](const Tensor& x) {
         return fx::permute(x, {2, 0, 1});
       }),
       T1(x.permute({2, 0, 1})),
       {.cases = shapes({{5, 7, 11}, {1, 3, 1}})}},
      {"slice",
       un([](const Tensor& x) { return fx::slice(x, -1, 1, -1, 2); }),
       T1(x.slice(-1, 1, x.size(-1) - 1, 2)),
       {.cases = nonscalar}},
      {"pad_slice",
       fx_pad_slice(1, 2, 3, 2),
       T1(t_pad_slice(x, 1, 2, 3, 2)),
       {.cases = shapes({{45, 21}, {5, 3, 11}})}},
      {"slice_set",
       [](const Args& a) { return fx::slice_set(a[0], 1, 1, 6, 2, a[1]); },
       T2(torch::slice_scatter(a, b, 1, 1, 6, 2)),
       {.cases = pairs({{{4, 7}, {4, 3}}, {{2, 7, 3}, {2, 3, 3}}})}},
      {"expand",
       un([](const Tensor& x) {
         return fx::expand(x, {2, 4, 3});
       }),
       T1(x.expand({2, 4, 3})),
       {.cases = shapes({{4, 1}, {}, {3}})}},
      {"concat",
       [](const Args& a) {
         return fx::concat({a[0], a[1], a[0]}, -1);
       },
       [](const TArgs& a) {
         return torch::cat({a[0], a[1], a[0]}, -1);
       },
       {.cases = pairs({{{3, 5}, {3, 2}}, {{2, 3, 1}, {2, 3, 4}}})}},
      {"matmul",
       bin(fx::matmul),
       T2(torch::matmul(a, b)),
       {.cases = pairs({{{45, 65}, {65, 33}},
                        {{65}, {65, 33}},
                        {{45, 65}, {65}},
                        {{9}, {9}},
                        {{2, 3, 4, 5}, {5, 6}},
                        {{3, 1, 4, 5}, {2, 5, 6}},
                        {{6}, {2, 6, 3}},
                        {{2, 4, 6}, {6}}})}},
      {"index_select",
       [](const Args& a) { return fx::index_select(a[0], 1, a[1]); },
       [](const TArgs& a) { return torch::index_select(a[0], 1, a[1]); },
       {.cases = {{In{{45, 65}}, idx({90}, 65)}, {In{{5, 7, 11}}, idx({9}, 7, fx::i32)}}}},
      {"index_add",
       [](const Args& a) { return fx::index_add(a[0], 0, a[1], a[2]); },
       [](const TArgs& a) { return torch::index_add(a[0], 0, a[1], a[2]); },
       {.cases = {{In{{6, 4}}, idx({9}, 6), In{{9, 4}}}}}},
      {"gather",
       [](const Args& a) { return fx::gather(a[0], 1, a[1]); },
       [](const TArgs& a) { return torch::gather(a[0], 1, a[1]); },
       {.cases = {{In{{5, 7}}, idx({5, 3}, 7)}, {In{{45, 65}}, idx({40, 90}, 65)}}}},
      {"scatter_add",
       [](const Args& a) { return fx::scatter_add(a[0], 1, a[1], a[2]); },
       [](const TArgs& a) { return torch::scatter_add(a[0], 1, a[1], a[2]); },
       {.cases = {{In{{5, 7}}, idx({5, 3}, 7), In{{5, 3}}},
                  {In{{4, 6}}, idx({4, 20}, 6), In{{4, 20}}}}}},
      {"logitcrossentropy",
       [](const Args& a) { return fx::logitcrossentropy(a[0], a[1]); },
       [](const TArgs& a) { return torch::nn::functional::cross_entropy(a[0], a[1]); },
       {.cases = {{In{{37, 10}}, idx({37}, 10)}, {In{{300, 130}}, idx({300}, 130)}},
        .range = {-4, 4}}},
      // composites
      {"softplus", un(fx::softplus), T1(torch::softplus(x)), {.cases = us, .range = {-5, 5}}},
      {"softplus_extreme",
       un(fx::softplus),
       T1(torch::softplus(x)),
       {.cases = shapes({{40}}), .range = {-60, 60}}},
      {"logsumexp",
       un([](const Tensor& x) { return fx::logsumexp(x, -1); }),
       T1(torch::logsumexp(x, {-1})),
       {.cases = nonscalar, .range = {-3, 3}}},
      // f32 inputs near 600 are only known to ~3e-5, and softmax's gradient inherits that.
      {"logsumexp_extreme",
       un([](const Tensor& x) { return fx::logsumexp(x, 0, true); }),
       T1(torch::logsumexp(x, {0}, true)),
       {.cases = shapes({{7, 3}}), .range = {500, 600}},
       1e-4},
      {"mean",
       un([](const Tensor& x) { return fx::mean(x, 0); }),
       T1(torch::mean(x, {0})),
       {.cases = nonscalar}},
      {"clamp",
       un([](const Tensor& x) { return fx::clamp(x, -0.5, 0.7); }),
       T1(torch::clamp(x, -0.5, 0.7)),
       {.cases = us}},
      {"square", un(fx::square), T1(torch::square(x)), {.cases = us}},
      {"sum_squares",
       un([](const Tensor& x) { return fx::sum_squares(x, -1); }),
       T1(torch::square(x).sum({-1})),
       {.cases = nonscalar}},
      {"sum_squares_all",
       un([](const Tensor& x) { return fx::sum_squares(x); }),
       T1(torch::square(x).sum()),
       {.cases = us}},
      {"rsqrt", un(fx::rsqrt), T1(torch::rsqrt(x)), {.cases = us, .range = {0.2, 3}}},
      {"stack",
       [](const Args& a) {
         return fx::stack({a[0], a[1]}, 1);
       },
       [](const TArgs& a) {
         return torch::stack({a[0], a[1]}, 1);
       },
       {.cases = pairs({{{4, 5}, {4, 5}}, {{3}, {3}}})}},
      {"select",
       un([](const Tensor& x) { return fx::select(x, 1, -2); }),
       T1(x.select(1, -2)),
       {.cases = nonscalar}},
      {"flatten",
       un([](const Tensor& x) { return fx::flatten(x); }),
       T1(torch::flatten(x, 1)),
       {.cases = shapes({{5, 7, 11}, {2, 3, 4, 5}})}},
      {"squeeze_unsqueeze",
       un([](const Tensor& x) { return fx::unsqueeze(fx::squeeze(x, 1), 0); }),
       T1(x.squeeze(1).unsqueeze(0)),
       {.cases = shapes({{3, 1, 4}})}},
      {"transpose",
       un([](const Tensor& x) { return fx::transpose(x); }),
       T1(x.transpose(-2, -1)),
       {.cases = nonscalar}},
      {"dot", bin(fx::dot), T2(torch::dot(a, b)), {.cases = pairs({{{17}, {17}}})}},
      // NaN propagates through maximum/minimum (either operand), relu, max/min, and argmax/argmin
      // point at it.
      {"nan_elementwise",
       [](const Args& a) {
         Tensor x = with_nans(a[0]);
         return fx::stack({fx::maximum(x, a[1]), fx::maximum(a[1], x), fx::minimum(x, a[1]),
                           fx::minimum(a[1], x), fx::relu(x)});
       },
       [](const TArgs& a) {
         torch::Tensor x = with_nans(a[0]);
         return torch::stack({torch::maximum(x, a[1]), torch::maximum(a[1], x),
                              torch::minimum(x, a[1]), torch::minimum(a[1], x), torch::relu(x)});
       },
       {.cases = pairs({{{9, 13}, {9, 13}}}), .order = 0}},
      {"nan_reductions",
       [](const Args& a) {
         Tensor x = with_nans(a[0]);
         return fx::stack({fx::max(x, -1), fx::min(x, -1), fx::astype(fx::argmax(x, -1), x.dtype()),
                           fx::astype(fx::argmin(x, -1), x.dtype())});
       },
       [](const TArgs& a) {
         torch::Tensor x = with_nans(a[0]);
         return torch::stack({torch::amax(x, {-1}), torch::amin(x, {-1}),
                              torch::argmax(x, -1).to(x.scalar_type()),
                              torch::argmin(x, -1).to(x.scalar_type())});
       },
       {.cases = shapes({{9, 13}}), .order = 0}},
      // ---- complex numbers: inputs drawn with both parts in the range (c128, then c64)
      {"complex", bin(fx::complex), T2(torch::complex(a, b)), {.cases = bs}},
      {"real", un(fx::real), T1(torch::real(x)), {.cases = us, .complex = true}},
      {"imag", un(fx::imag), T1(torch::imag(x)), {.cases = us, .complex = true}},
      {"conj", un(fx::conj), T1(torch::conj(x)), {.cases = us, .complex = true}},
      {"angle",
       un(fx::angle),
       T1(torch::angle(x)),
       {.cases = us, .range = {0.3, 2}, .complex = true}},
      {"complex_abs",
       un(fx::abs),
       T1(torch::abs(x)),
       {.cases = us, .range = {0.3, 2}, .complex = true}},
      {"fft",
       un([](const Tensor& x) { return fx::fft(x); }),
       T1(torch::fft::fft(x)),
       {.cases = shapes({{16}, {5, 12}, {3, 7, 9}}), .complex = true}},
      {"ifft_axis0",
       un([](const Tensor& x) { return fx::ifft(x, 0); }),
       T1(torch::fft::ifft(x, c10::nullopt, 0)),
       {.cases = shapes({{6, 5}}), .complex = true}},
      {"exp_complex", un(fx::exp), T1(torch::exp(x)), {.cases = us, .complex = true}},
      {"log_complex",
       un(fx::log),
       T1(torch::log(x)),
       {.cases = us, .range = {0.3, 2}, .complex = true}},
      {"sqrt_complex",
       un(fx::sqrt),
       T1(torch::sqrt(x)),
       {.cases = us, .range = {0.3, 2}, .complex = true}},
      {"mul_complex", bin(fx::mul), T2(a * b), {.cases = bs, .complex = true}},
      {"div_complex", bin(fx::div), T2(a / b), {.cases = bs, .range = {0.3, 2}, .complex = true}},
      {"matmul_complex",
       bin(fx::matmul),
       T2(torch::matmul(a, b)),
       {.cases = pairs({{{45, 65}, {65, 33}}, {{2, 3, 4}, {4, 5}}}), .complex = true}},
      {"sum_complex",
       un([](const Tensor& x) { return fx::sum(x, {0}); }),
       T1(torch::sum(x, {0})),
       {.cases = nonscalar, .complex = true}},
      {"abs_fft_of_real",
       un([](const Tensor& x) { return fx::abs(fx::fft(x)); }),
       T1(torch::abs(torch::fft::fft(x))),
       {.cases = shapes({{16}, {3, 10}})}},
      {"linear",
       [](const Args& a) { return fx::linear(a[0], a[1], a[2], fx::Epilogue::relu); },
       [](const TArgs& a) { return torch::relu(torch::linear(a[0], a[1], a[2])); },
       {.cases = {{In{{8, 5}}, In{{3, 5}}, In{{3}}}, {In{{2, 4, 5}}, In{{3, 5}}, In{{3}}}}}},
      {"linear_tanh",
       [](const Args& a) { return fx::linear(a[0], a[1], a[2], fx::Epilogue::tanh); },
       [](const TArgs& a) { return torch::tanh(torch::linear(a[0], a[1], a[2])); },
       {.cases = {{In{{8, 5}}, In{{3, 5}}, In{{3}}}}}},
      {"linear_sigmoid_without_bias",
       [](const Args& a) { return fx::linear(a[0], a[1], Tensor(), fx::Epilogue::sigmoid); },
       [](const TArgs& a) { return torch::sigmoid(torch::linear(a[0], a[1])); },
       {.cases = pairs({{{8, 5}, {3, 5}}})}},
      {"mlp_layer",
       [](const Args& a) { return fx::tanh(fx::matmul(a[0], fx::transpose(a[1])) + a[2]); },
       [](const TArgs& a) { return torch::tanh(torch::matmul(a[0], a[1].t()) + a[2]); },
       {.cases = {{In{{8, 5}}, In{{3, 5}}, In{{3}}}}}},
      // The convolution family's primitives (more cases: conv_oracle_test.cpp). The adjoints
      // are libtorch's own gradients, taken with create_graph so they differentiate again.
      {"conv",
       [](const Args& a) {
         return fx::conv(a[0], a[1], a[2], {.stride = {2}, .padding = {1}, .groups = 2});
       },
       [](const TArgs& a) { return torch::conv2d(a[0], a[1], a[2], 2, 1, 1, 2); },
       {.cases = {{In{{2, 4, 7, 6}}, In{{6, 2, 3, 3}}, In{{6}}}}}},
      {"conv_backward_data",
       [](const Args& a) {
         return fx::conv_backward_data(a[0], a[1], fx::Shape{2, 4, 7, 6},
                                       {.stride = {2}, .padding = {1}, .groups = 2});
       },
       [](const TArgs& a) {
         auto x = torch::zeros({2, 4, 7, 6}, a[0].options().requires_grad(true));
         auto y = torch::conv2d(x, a[1], {}, 2, 1, 1, 2);
         return torch::autograd::grad({y}, {x}, {a[0]}, true, true)[0];
       },
       {.cases = pairs({{{2, 6, 4, 3}, {6, 2, 3, 3}}})}},
      {"conv_backward_weights",
       [](const Args& a) {
         return fx::conv_backward_weights(a[0], a[1], fx::Shape{6, 2, 3, 3},
                                          {.stride = {2}, .padding = {1}, .groups = 2});
       },
       [](const TArgs& a) {
         auto w = torch::zeros({6, 2, 3, 3}, a[0].options().requires_grad(true));
         auto y = torch::conv2d(a[0], w, {}, 2, 1, 1, 2);
         return torch::autograd::grad({y}, {w}, {a[1]}, true, true)[0];
       },
       {.cases = pairs({{{2, 4, 7, 6}, {2, 6, 4, 3}}})}},
      {"max_pool",
       [](const Args& a) {
         return fx::max_pool(a[0], {.kernel = {3, 2}, .stride = {2, 1}});
       },
       [](const TArgs& a) {
         return torch::max_pool2d(a[0], {3, 2}, {2, 1});
       },
       {.cases = shapes({{2, 3, 7, 5}})}},
      {"max_pool_backward",
       [](const Args& a) {
         return fx::max_pool_backward(a[0], a[1], {.kernel = {3, 2}, .stride = {2, 1}});
       },
       [](const TArgs& a) {
         auto x = a[0].detach().requires_grad_(true);
         auto y = torch::max_pool2d(x, {3, 2}, {2, 1});
         return torch::autograd::grad({y}, {x}, {a[1]}, true, true)[0];
       },
       {.cases = pairs({{{2, 3, 7, 5}, {2, 3, 3, 4}}})}},
      {"avg_pool",
       [](const Args& a) {
         return fx::avg_pool(a[0], {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}});
       },
       [](const TArgs& a) {
         return torch::avg_pool2d(a[0], {3, 2}, {2, 1}, {1, 0});
       },
       {.cases = shapes({{2, 3, 7, 5}})}},
      {"avg_pool_backward",
       [](const Args& a) {
         return fx::avg_pool_backward(a[0], fx::Shape{2, 3, 7, 5},
                                      {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}});
       },
       [](const TArgs& a) {
         auto x = torch::zeros({2, 3, 7, 5}, a[0].options().requires_grad(true));
         auto y = torch::avg_pool2d(x, {3, 2}, {2, 1}, {1, 0});
         return torch::autograd::grad({y}, {x}, {a[0]}, true, true)[0];
       },
       {.cases = shapes({{2, 3, 4, 4}})}},
  };
}

class Oracle : public ::testing::TestWithParam<OracleRow> {};

TEST_P(Oracle, ForwardAndGradientMatchLibtorch) {
  const OracleRow& row = GetParam();
  for (size_t ci = 0; ci < row.o.cases.size(); ++ci) {
    for (fx::DType dtype :
         row.o.complex ? std::vector{fx::c128, fx::c64} : std::vector{fx::f64, fx::f32}) {
      SCOPED_TRACE(::testing::Message() << "case " << ci << ", " << fx::dtype_name(dtype));
      const Case& c = row.o.cases[ci];
      fx::Generator gen(1000 + ci);
      Args args;
      for (size_t i = 0; i < c.size(); ++i)
        args.push_back(fx::rows::make_values(row.o, c[i], i, c[i].shape, dtype, gen));
      TArgs targs;
      for (const Tensor& a : args) {
        torch::Tensor t = to_torch(a);
        if (fx::is_inexact(a.dtype()) && row.o.order > 0) t.set_requires_grad(true);
        targs.push_back(t);
      }
      // forward
      auto [y, back] = fx::pullback(row.fx, args);
      torch::Tensor ty = row.torch(targs);
      ASSERT_EQ(y.dtype(), dtype_of(ty)) << "output dtype";
      double rtol = std::max(tolerance(y.dtype(), row.f32_rtol, row.f64_rtol),
                             tolerance(dtype, row.f32_rtol, row.f64_rtol));
      std::string m = mismatch(y, ty, rtol);
      EXPECT_TRUE(m.empty()) << "forward: " << m;
      if (row.o.order == 0) continue;
      // gradient of sum(f(x) * u)
      // For complex outputs both libraries read the cotangent as dL/dRe + i dL/dIm.
      Tensor u = fx::astype(
          fx::randn(y.shape(), gen, fx::is_complex(y.dtype()) ? fx::c128 : fx::f64), y.dtype());
      std::vector<Tensor> grads = back(u);
      if (ty.requires_grad()) ty.backward(to_torch(u));
      for (size_t i = 0; i < args.size(); ++i) {
        if (!fx::is_inexact(args[i].dtype())) continue;
        torch::Tensor tg = targs[i].grad();
        if (!tg.defined()) tg = torch::zeros_like(targs[i]);
        ASSERT_EQ(grads[i].dtype(), dtype_of(tg)) << "gradient dtype of input " << i;
        std::string gm = mismatch(grads[i], tg, rtol);
        EXPECT_TRUE(gm.empty()) << "gradient of input " << i << ": " << gm;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, Oracle, ::testing::ValuesIn(oracle_rows()),
                         [](const ::testing::TestParamInfo<OracleRow>& i) { return i.param.name; });

TEST(OracleTable, EveryBuiltinPrimitiveHasAnOracleRowThatAppliesIt) {
  auto rows = oracle_rows();
  std::set<std::string> names;
  for (const OracleRow& r : rows) EXPECT_TRUE(names.insert(r.name).second) << r.name;
  for (const fx::Primitive* p : fx::builtin_primitives()) {
    auto it = std::find_if(rows.begin(), rows.end(),
                           [&](const OracleRow& r) { return r.name == p->name; });
    if (it == rows.end()) {
      if (fx::oracle::covered_elsewhere().count(p->name)) continue;  // see oracle_coverage.hpp
      ADD_FAILURE() << "primitive '" << p->name << "' has no oracle row";
      continue;
    }
    fx::Generator gen(7);
    Args args;
    const Case& c = it->o.cases[0];
    for (size_t i = 0; i < c.size(); ++i)
      args.push_back(fx::rows::make_values(it->o, c[i], i, c[i].shape,
                                           it->o.complex ? fx::c128 : fx::f64, gen));
    fx::testing::BackendScope scope;
    (void)it->fx(args);
    int64_t calls = scope.forward_calls(*p);
    for (int r = 0; r < fx::kMaxBackends; ++r) calls += scope.kernel_calls(*p, r);
    EXPECT_GT(calls, 0) << "the oracle row '" << p->name << "' never applies its primitive";
    if (p->pullback && it->o.order == 0) {
      // Allowed only for a pullback that is an fx::Error by design (tetragamma's derivative has
      // no tensor form): differentiating must raise it.
      bool raised = false;
      try {
        (void)fx::gradient(
            [&](const Tensor& x) {
              Args a = args;
              a[0] = x;
              return fx::sum(it->fx(a));
            },
            args[0]);
      } catch (const fx::Error&) {
        raised = true;
      }
      EXPECT_TRUE(raised) << "'" << p->name << "' is differentiable: compare its gradient";
    }
  }
}

}  // namespace
