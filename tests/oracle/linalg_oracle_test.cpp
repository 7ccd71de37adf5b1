// fx::linalg against torch::linalg: values in f64 and f32, and the gradient of sum(f(x) * u) for a
// random cotangent u in f64, on random batched inputs. Tolerances relative to the largest
// element: 1e-10 (f64), 1e-4 (f32, whose LAPACK paths differ in rounding).
//
// eigh and cholesky are fed a symmetric x + x^T (torch reads one triangle, fluxion the symmetric
// part: equal on symmetric inputs, and so are the gradients through the sum). Eigen- and
// singular vectors are compared up to LAPACK's choice of signs: columns are flipped so their
// first entry is positive, a gauge-invariant function of them (sign() has no derivative).
//
// Complex rows (c128 values and gradients, c64 values) repeat the cases on complex inputs with
// torch's complex linalg: Hermitian inputs x + x^H, phases fixed so that each vector's (pair's)
// first entry is real and positive (a differentiable, phase-invariant function, the same on both
// sides), and the gradient of the real loss Re sum(conj(u) f(x)) for a complex cotangent u:
// torch.autograd's complex gradient and fluxion's (dL/dx + i dL/dy) must agree.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/linalg.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/ops/primitives.hpp>
#include <fluxion/testing.hpp>

#include "oracle_coverage.hpp"

namespace {

// The built-in linalg primitives this file compares with libtorch (instead of rows of
// torch_oracle_test.cpp); LinalgOracleCoverage checks that the cases below apply each one.
const char* const kLinalgPrimitives[] = {"linalg_solve",
                                         "linalg_triangular_solve",
                                         "linalg_logabsdet",
                                         "linalg_det_sign",
                                         "linalg_complex_logdet",
                                         "linalg_cholesky",
                                         "linalg_qr",
                                         "linalg_eigh",
                                         "linalg_svd"};
const fx::oracle::CoveredElsewhere kCovered{
    kLinalgPrimitives[0], kLinalgPrimitives[1], kLinalgPrimitives[2],
    kLinalgPrimitives[3], kLinalgPrimitives[4], kLinalgPrimitives[5],
    kLinalgPrimitives[6], kLinalgPrimitives[7], kLinalgPrimitives[8]};

using fx::Tensor;
namespace la = fx::linalg;
using FxArgs = std::vector<Tensor>;
using TArgs = std::vector<torch::Tensor>;

torch::Tensor to_torch(const Tensor& t) {
  if (fx::is_complex(t.dtype())) {
    auto v = fx::to_vector<std::complex<double>>(t);
    std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
    auto d = torch::from_blob(v.data(), dims, torch::kComplexDouble).clone();
    return t.dtype() == fx::c64 ? d.to(torch::kComplexFloat) : d;
  }
  std::vector<double> v = fx::to_vector<double>(fx::astype(t, fx::f64));
  std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
  auto d = torch::from_blob(v.data(), dims, torch::kDouble).clone();
  return t.dtype() == fx::f32 ? d.to(torch::kFloat) : d;
}

// Values as doubles; complex elements give their real and imaginary parts.
std::vector<double> values_of(const torch::Tensor& t) {
  torch::Tensor d = t.detach();
  if (d.is_complex())
    d = torch::view_as_real(d.resolve_conj().to(torch::kComplexDouble).contiguous());
  d = d.to(torch::kDouble).contiguous();
  return {d.data_ptr<double>(), d.data_ptr<double>() + d.numel()};
}

std::vector<double> values_of(const Tensor& t) {
  if (!fx::is_complex(t.dtype())) return fx::to_vector<double>(fx::astype(t, fx::f64));
  std::vector<double> out;
  for (std::complex<double> z : fx::to_vector<std::complex<double>>(t)) {
    out.push_back(z.real());
    out.push_back(z.imag());
  }
  return out;
}

// max |a - b| / max(1, max |b|).
double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, scale = 1;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return diff / scale;
}

// Columns with a positive first entry (the signs taken from `by`, of the same columns).
Tensor fix_signs(const Tensor& v, const Tensor& by) {
  return v * fx::sign(fx::slice(by, -2, 0, 1));
}
torch::Tensor fix_signs(const torch::Tensor& v, const torch::Tensor& by) {
  return v * torch::sign(by.narrow(-2, 0, 1)).detach();
}
Tensor flat(const Tensor& x) { return fx::reshape(x, {-1}); }

// Columns times the phase that makes the first entry of the same column of `by` real and
// positive (complex matrices; by = u for both singular vectors of a pair).
Tensor fix_phases(const Tensor& v, const Tensor& by) {
  Tensor first = fx::slice(by, -2, 0, 1);
  return v * fx::conj(first) / fx::astype(fx::abs(first), v.dtype());
}
torch::Tensor fix_phases(const torch::Tensor& v, const torch::Tensor& by) {
  torch::Tensor first = by.narrow(-2, 0, 1);
  return v * first.conj() / first.abs();
}
Tensor mH(const Tensor& x) { return fx::conj(fx::transpose(x, -2, -1)); }
Tensor as_complex(const Tensor& x) { return fx::astype(x, fx::complex_dtype(x.dtype())); }

struct Input {
  fx::Shape shape;
  double shift = 0;  // plus shift * I: away from singular
};

struct Case {
  std::string name;
  std::vector<Input> inputs;
  std::function<Tensor(const FxArgs&)> fx;
  std::function<torch::Tensor(const TArgs&)> torch;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  const fx::Shape sq{2, 4, 4}, rhs{2, 4, 3};
  return {
      {"solve",
       {{sq, 3}, {rhs}},
       [](const FxArgs& a) { return la::solve(a[0], a[1]); },
       [](const TArgs& a) { return torch::linalg::solve(a[0], a[1], true); }},
      {"solve_vector",
       {{sq, 3}, {{4}}},
       [](const FxArgs& a) { return la::solve(a[0], a[1]); },
       [](const TArgs& a) { return torch::linalg::solve(a[0], a[1], true); }},
      {"triangular_solve_lower",
       {{sq, 3}, {rhs}},
       [](const FxArgs& a) { return la::triangular_solve(a[0], a[1], false); },
       [](const TArgs& a) {
         return torch::linalg::solve_triangular(a[0], a[1], false, true, false);
       }},
      {"triangular_solve_upper",
       {{sq, 3}, {rhs}},
       [](const FxArgs& a) { return la::triangular_solve(a[0], a[1], true); },
       [](const TArgs& a) {
         return torch::linalg::solve_triangular(a[0], a[1], true, true, false);
       }},
      {"inv",
       {{sq, 3}},
       [](const FxArgs& a) { return la::inv(a[0]); },
       [](const TArgs& a) { return torch::linalg::inv(a[0]); }},
      {"det",
       {{sq, 1}},
       [](const FxArgs& a) { return la::det(a[0]); },
       [](const TArgs& a) { return torch::linalg::det(a[0]); }},
      {"slogdet",
       {{sq}},
       [](const FxArgs& a) {
         auto [s, l] = la::slogdet(a[0]);
         return fx::concat({s, l});
       },
       [](const TArgs& a) {
         auto [s, l] = torch::linalg::slogdet(a[0]);
         return torch::cat({s, l});
       }},
      {"logdet",
       {{sq}},
       [](const FxArgs& a) { return la::logdet(fx::matmul(a[0], fx::transpose(a[0]))); },
       [](const TArgs& a) { return torch::logdet(torch::matmul(a[0], a[0].mT())); }},
      {"trace",
       {{sq}},
       [](const FxArgs& a) { return la::trace(a[0]); },
       [](const TArgs& a) { return torch::diagonal(a[0], 0, -2, -1).sum(-1); }},
      {"cholesky",
       {{sq, 4}},
       [](const FxArgs& a) { return la::cholesky(a[0] + fx::transpose(a[0])); },
       [](const TArgs& a) { return torch::linalg::cholesky(a[0] + a[0].mT()); }},
      {"qr_tall",
       {{{2, 6, 3}}},
       [](const FxArgs& a) {
         auto [q, r] = la::qr(a[0]);
         return fx::concat({flat(q), flat(r)});
       },
       [](const TArgs& a) {
         auto [q, r] = torch::linalg::qr(a[0], "reduced");
         return torch::cat({q.reshape(-1), r.reshape(-1)});
       }},
      {"eigh",
       {{sq}},
       [](const FxArgs& a) {
         auto [w, v] = la::eigh(a[0] + fx::transpose(a[0]));
         return fx::concat({flat(w), flat(fix_signs(v, v))});
       },
       [](const TArgs& a) {
         auto [w, v] = torch::linalg::eigh(a[0] + a[0].mT(), "L");
         return torch::cat({w.reshape(-1), fix_signs(v, v).reshape(-1)});
       }},
      {"svd_tall",
       {{{2, 5, 3}}},
       [](const FxArgs& a) {
         auto [u, s, vh] = la::svd(a[0]);
         return fx::concat({flat(fix_signs(u, u)), flat(s), flat(fix_signs(fx::transpose(vh), u))});
       },
       [](const TArgs& a) {
         auto [u, s, vh] = torch::linalg::svd(a[0], false, c10::nullopt);
         return torch::cat(
             {fix_signs(u, u).reshape(-1), s.reshape(-1), fix_signs(vh.mT(), u).reshape(-1)});
       }},
      {"svd_wide",
       {{{3, 5}}},
       [](const FxArgs& a) {
         auto [u, s, vh] = la::svd(a[0]);
         return fx::concat({flat(fix_signs(u, u)), flat(s), flat(fix_signs(fx::transpose(vh), u))});
       },
       [](const TArgs& a) {
         auto [u, s, vh] = torch::linalg::svd(a[0], false, c10::nullopt);
         return torch::cat(
             {fix_signs(u, u).reshape(-1), s.reshape(-1), fix_signs(vh.mT(), u).reshape(-1)});
       }},
      {"lstsq",
       {{{2, 6, 3}}, {{2, 6, 2}}},
       [](const FxArgs& a) { return la::lstsq(a[0], a[1]); },
       // torch 1.13 has no derivative for lstsq; the pseudo-inverse gives the same solution.
       [](const TArgs& a) { return torch::matmul(torch::linalg::pinv(a[0], 1e-15, false), a[1]); }},
      {"pinv_wide",
       {{{2, 3, 5}}},
       [](const FxArgs& a) { return la::pinv(a[0]); },
       [](const TArgs& a) { return torch::linalg::pinv(a[0], 1e-15, false); }},
      {"matrix_exp",
       {{sq}},
       [](const FxArgs& a) { return la::matrix_exp(a[0]); },
       [](const TArgs& a) { return torch::linalg::matrix_exp(a[0]); }},
  };
}

std::vector<Case> complex_cases() {
  const fx::Shape sq{2, 4, 4}, rhs{2, 4, 3};
  return {
      {"solve",
       {{sq, 3}, {rhs}},
       [](const FxArgs& a) { return la::solve(a[0], a[1]); },
       [](const TArgs& a) { return torch::linalg::solve(a[0], a[1], true); }},
      {"solve_vector",
       {{sq, 3}, {{4}}},
       [](const FxArgs& a) { return la::solve(a[0], a[1]); },
       [](const TArgs& a) { return torch::linalg::solve(a[0], a[1], true); }},
      {"triangular_solve_lower",
       {{sq, 3}, {rhs}},
       [](const FxArgs& a) { return la::triangular_solve(a[0], a[1], false); },
       [](const TArgs& a) {
         return torch::linalg::solve_triangular(a[0], a[1], false, true, false);
       }},
      {"triangular_solve_upper",
       {{sq, 3}, {rhs}},
       [](const FxArgs& a) { return la::triangular_solve(a[0], a[1], true); },
       [](const TArgs& a) {
         return torch::linalg::solve_triangular(a[0], a[1], true, true, false);
       }},
      {"inv",
       {{sq, 3}},
       [](const FxArgs& a) { return la::inv(a[0]); },
       [](const TArgs& a) { return torch::linalg::inv(a[0]); }},
      {"det",
       {{sq, 1}},
       [](const FxArgs& a) { return la::det(a[0]); },
       [](const TArgs& a) { return torch::linalg::det(a[0]); }},
      {"slogdet",
       {{sq}},
       [](const FxArgs& a) {
         auto [s, l] = la::slogdet(a[0]);
         return fx::concat({s, as_complex(l)});
       },
       [](const TArgs& a) {
         auto [s, l] = torch::linalg::slogdet(a[0]);
         return torch::cat({s, l.to(s.scalar_type())});
       }},
      {"logdet",
       {{sq, 1}},
       [](const FxArgs& a) { return la::logdet(a[0]); },
       [](const TArgs& a) { return torch::logdet(a[0]); }},
      {"trace",
       {{sq}},
       [](const FxArgs& a) { return la::trace(a[0]); },
       [](const TArgs& a) { return torch::diagonal(a[0], 0, -2, -1).sum(-1); }},
      {"cholesky",
       {{sq, 4}},
       [](const FxArgs& a) { return la::cholesky(a[0] + mH(a[0])); },
       [](const TArgs& a) { return torch::linalg::cholesky(a[0] + a[0].mH()); }},
      {"qr_tall",
       {{{2, 6, 3}}},
       [](const FxArgs& a) {
         auto [q, r] = la::qr(a[0]);
         return fx::concat({flat(q), flat(r)});
       },
       [](const TArgs& a) {
         auto [q, r] = torch::linalg::qr(a[0], "reduced");
         return torch::cat({q.reshape(-1), r.reshape(-1)});
       }},
      {"eigh",
       {{sq}},
       [](const FxArgs& a) {
         auto [w, v] = la::eigh(a[0] + mH(a[0]));
         return fx::concat({flat(as_complex(w)), flat(fix_phases(v, v))});
       },
       [](const TArgs& a) {
         auto [w, v] = torch::linalg::eigh(a[0] + a[0].mH(), "L");
         return torch::cat({w.to(v.scalar_type()).reshape(-1), fix_phases(v, v).reshape(-1)});
       }},
      {"svd_tall",
       {{{2, 5, 3}}},
       [](const FxArgs& a) {
         auto [u, s, vh] = la::svd(a[0]);
         return fx::concat(
             {flat(fix_phases(u, u)), flat(as_complex(s)), flat(fix_phases(mH(vh), u))});
       },
       [](const TArgs& a) {
         auto [u, s, vh] = torch::linalg::svd(a[0], false, c10::nullopt);
         return torch::cat({fix_phases(u, u).reshape(-1), s.to(u.scalar_type()).reshape(-1),
                            fix_phases(vh.mH(), u).reshape(-1)});
       }},
      {"svd_wide",
       {{{3, 5}}},
       [](const FxArgs& a) {
         auto [u, s, vh] = la::svd(a[0]);
         return fx::concat(
             {flat(fix_phases(u, u)), flat(as_complex(s)), flat(fix_phases(mH(vh), u))});
       },
       [](const TArgs& a) {
         auto [u, s, vh] = torch::linalg::svd(a[0], false, c10::nullopt);
         return torch::cat({fix_phases(u, u).reshape(-1), s.to(u.scalar_type()).reshape(-1),
                            fix_phases(vh.mH(), u).reshape(-1)});
       }},
      {"lstsq",
       {{{2, 6, 3}}, {{2, 6, 2}}},
       [](const FxArgs& a) { return la::lstsq(a[0], a[1]); },
       [](const TArgs& a) { return torch::matmul(torch::linalg::pinv(a[0], 1e-15, false), a[1]); }},
      {"pinv_wide",
       {{{2, 3, 5}}},
       [](const FxArgs& a) { return la::pinv(a[0]); },
       [](const TArgs& a) { return torch::linalg::pinv(a[0], 1e-15, false); }},
      {"matrix_exp",
       {{sq}},
       [](const FxArgs& a) { return la::matrix_exp(a[0]); },
       [](const TArgs& a) { return torch::linalg::matrix_exp(a[0]); }},
  };
}

class LinalgOracle : public ::testing::TestWithParam<Case> {};
class LinalgOracleComplex : public ::testing::TestWithParam<Case> {};

// Normal inputs of `dtype` (complex: both parts drawn), plus shift times the identity.
FxArgs random_inputs(const Case& c, fx::DType dtype) {
  fx::Generator gen(17);
  FxArgs xs;
  const fx::DType draw = fx::is_complex(dtype) ? fx::c128 : fx::f64;
  for (const Input& in : c.inputs) {
    Tensor x = fx::randn(in.shape, gen, draw);
    if (in.shift != 0) x = x + in.shift * la::eye(in.shape[in.shape.size() - 1], draw);
    xs.push_back(fx::astype(x, dtype));
  }
  return xs;
}

TEST_P(LinalgOracle, ValuesMatchInF64AndF32) {
  const Case& c = GetParam();
  for (fx::DType t : {fx::f64, fx::f32}) {
    FxArgs xs = random_inputs(c, t);
    TArgs ts;
    for (const Tensor& x : xs) ts.push_back(to_torch(x));
    Tensor y = c.fx(xs);
    EXPECT_EQ(y.dtype(), t);
    EXPECT_LT(relative_error(fx::to_vector<double>(fx::astype(y, fx::f64)), values_of(c.torch(ts))),
              t == fx::f64 ? 1e-10 : 1e-4)
        << fx::dtype_name(t);
  }
}

TEST_P(LinalgOracle, GradientsMatchInF64) {
  const Case& c = GetParam();
  FxArgs xs = random_inputs(c, fx::f64);
  TArgs ts;
  for (const Tensor& x : xs) ts.push_back(to_torch(x).requires_grad_(true));
  fx::Generator gen(99);
  Tensor u = fx::randn(c.fx(xs).shape(), gen, fx::f64);
  for (size_t i = 0; i < xs.size(); ++i) {
    Tensor g = fx::gradient(
        [&](const Tensor& xi) {
          FxArgs ys = xs;
          ys[i] = xi;
          return fx::sum(c.fx(ys) * u);
        },
        xs[i]);
    for (auto& t : ts) t.mutable_grad() = torch::Tensor();
    (c.torch(ts) * to_torch(u)).sum().backward();
    EXPECT_LT(relative_error(fx::to_vector<double>(g), values_of(ts[i].grad())), 1e-10)
        << "input " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Linalg, LinalgOracle, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

TEST_P(LinalgOracleComplex, ValuesMatchInC128AndC64) {
  const Case& c = GetParam();
  for (fx::DType t : {fx::c128, fx::c64}) {
    FxArgs xs = random_inputs(c, t);
    TArgs ts;
    for (const Tensor& x : xs) ts.push_back(to_torch(x));
    Tensor y = c.fx(xs);
    EXPECT_EQ(y.dtype(), t);
    EXPECT_LT(relative_error(values_of(y), values_of(c.torch(ts))), t == fx::c128 ? 1e-10 : 1e-4)
        << fx::dtype_name(t);
  }
}

TEST_P(LinalgOracleComplex, GradientsMatchInC128) {
  const Case& c = GetParam();
  FxArgs xs = random_inputs(c, fx::c128);
  TArgs ts;
  for (const Tensor& x : xs) ts.push_back(to_torch(x).requires_grad_(true));
  fx::Generator gen(99);
  Tensor u = fx::randn(c.fx(xs).shape(), gen, fx::c128);
  for (size_t i = 0; i < xs.size(); ++i) {
    Tensor g = fx::gradient(
        [&](const Tensor& xi) {
          FxArgs ys = xs;
          ys[i] = xi;
          return fx::real(fx::sum(fx::conj(u) * c.fx(ys)));
        },
        xs[i]);
    for (auto& t : ts) t.mutable_grad() = torch::Tensor();
    torch::real((c.torch(ts) * to_torch(u).conj()).sum()).backward();
    EXPECT_LT(relative_error(values_of(g), values_of(ts[i].grad())), 1e-10) << "input " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Linalg, LinalgOracleComplex, ::testing::ValuesIn(complex_cases()),
                         [](const auto& info) { return info.param.name; });

// What OracleTable's coverage test takes on trust (oracle_coverage.hpp): every primitive this
// file claims is a built-in one that some case above applies.
TEST(LinalgOracleCoverage, EveryClaimedPrimitiveIsAppliedByACase) {
  std::set<std::string> applied;
  {
    fx::testing::BackendScope scope;
    for (const Case& c : cases()) (void)c.fx(random_inputs(c, fx::f64));
    for (const Case& c : complex_cases()) (void)c.fx(random_inputs(c, fx::c128));
    for (const fx::Primitive* p : fx::builtin_primitives())
      if (scope.forward_calls(*p) > 0) applied.insert(p->name);
  }
  for (const char* name : kLinalgPrimitives)
    EXPECT_TRUE(applied.count(name)) << "no case applies '" << name << "'";
}

}  // namespace
