// Gradient checking: compares reverse-mode derivatives with central finite differences in f64,
// along random directions, up to second order.
//
//   #include <gtest/gtest.h>
//   fx::Tensor x = fx::randn({4, 3}), w = fx::randn({3, 2});
//   auto f = [](const fx::Tensor& x, const fx::Tensor& w) { return fx::tanh(fx::matmul(x, w)); };
//   auto r = fx::testing::gradcheck(f, x, w);          // every tensor leaf promoted to f64
//   EXPECT_TRUE(r) << r;                                // prints analytic vs numeric on failure
//
// For a function y = f(x) it draws a cotangent u and a direction v and checks
//   <u, J v>  (reverse:  <back(u), v>)   against   <u, f(x + eps v) - f(x - eps v)> / (2 eps).
// Unless options.forward is false, forward mode must agree too: <u, jvp(f, x, v)> = <back(u), v>.
// With order 2 it then checks h(x) = <back_x(u), w> the same way, which differentiates the
// pullback itself (gradient of gradient). Arguments may be tensors, numbers or FX_FIELDS
// structs; only floating and complex tensor leaves are perturbed. Complex leaves and outputs use
// the real inner product <a, b> = Re sum(conj(a) b), under which fluxion's cotangent convention
// (dL/dx + i dL/dy) makes every pullback the adjoint of its pushforward.
#pragma once
#include <cmath>
#include <ostream>
#include <sstream>
#include <string>

#include "fluxion/ad/forward.hpp"
#include "fluxion/ad/reverse.hpp"
#include "fluxion/ops.hpp"

namespace fx::testing {

struct GradcheckOptions {
  int order = 2;
  double eps = 1e-6;
  double rtol = 1e-6;
  double atol = 1e-9;
  uint64_t seed = 0x9c;
  bool forward = true;  // also check forward mode: <u, jvp(v)> must equal <back(u), v>
};

struct GradcheckResult {
  bool ok = true;
  std::string message;
  explicit operator bool() const { return ok; }
  friend std::ostream& operator<<(std::ostream& os, const GradcheckResult& r) {
    return os << r.message;
  }
};

namespace detail {

// f64, or c128 for complex tensors: the dtype checks run in.
inline DType check_dtype(DType t) { return is_complex(t) ? c128 : f64; }

// A copy of x with every floating (complex) tensor leaf converted to f64 (c128).
template <class T>
T promote_f64(const T& x) {
  T y = x;
  zip_tensors(
      [](Tensor& t) {
        if (t.defined() && is_inexact(t.dtype())) t = astype(t, check_dtype(t.dtype())).clone();
      },
      y);
  return y;
}

// A random structure like x (floating leaves only; others untouched).
template <class T>
T random_like(const T& x, Generator& gen) {
  T y = x;
  zip_tensors(
      [&](Tensor& t) {
        if (t.defined() && is_inexact(t.dtype())) t = randn(t.shape(), gen, check_dtype(t.dtype()));
      },
      y);
  return y;
}

// x + s * v over floating leaves.
template <class T>
T axpy(const T& x, double s, const T& v) {
  T y = x;
  zip_tensors(
      [&](Tensor& t, const Tensor& d) {
        if (t.defined() && is_inexact(t.dtype())) t = t + d * s;
      },
      y, v);
  return y;
}

// Re sum(conj(a) b) of two tensors (sum(a b) for real ones), as a 0-d real tensor.
inline Tensor real_inner(const Tensor& a, const Tensor& b) { return real(sum(conj(a) * b)); }

// The sum over floating and complex leaves of real_inner, as a 0-d tensor (differentiable).
template <class T>
Tensor inner(const T& a, const T& b) {
  Tensor acc = scalar(0, f64);
  zip_tensors(
      [&](const Tensor& x, const Tensor& y) {
        if (x.defined() && y.defined() && is_inexact(x.dtype())) acc = acc + real_inner(x, y);
      },
      a, b);
  return acc;
}

template <class F, class... Args>
GradcheckResult check_first_order(F& f, const GradcheckOptions& o, Generator& gen,
                                  const Args&... xs) {
  auto [y, back] = pullback(f, xs...);
  FX_CHECK(y.defined() && is_inexact(y.dtype()),
           "fx::testing::gradcheck: f must return a "
           "floating or complex tensor");
  Tensor u = randn(y.shape(), gen, check_dtype(y.dtype()));
  auto vs = std::make_tuple(random_like(xs, gen)...);
  auto gs = back(u);
  std::tuple<Args...> gt;
  if constexpr (sizeof...(Args) == 1) std::get<0>(gt) = gs;
  else gt = gs;
  double analytic = 0;
  [&]<size_t... I>(std::index_sequence<I...>) {
    ((analytic += inner(std::get<I>(gt), std::get<I>(vs)).item()), ...);
  }
  (std::index_sequence_for<Args...>{});
  auto eval = [&](double s) {
    return std::apply([&](const auto&... v) { return real_inner(u, f(axpy(xs, s, v)...)).item(); },
                      vs);
  };
  double numeric = (eval(o.eps) - eval(-o.eps)) / (2 * o.eps);
  GradcheckResult r;
  double tol = o.atol + o.rtol * std::max(std::abs(analytic), std::abs(numeric)) +
               1e-7 * std::max(1.0, std::abs(eval(0)));
  r.ok = std::isfinite(analytic) && std::abs(analytic - numeric) <= tol;
  std::ostringstream os;
  os << "gradcheck: <u, J v> analytic " << analytic << " vs numeric " << numeric << " (|diff| "
     << std::abs(analytic - numeric) << ", tolerance " << tol << ")";
  if (o.forward) {
    Tensor dy = jvp(f, std::tuple<Args...>(xs...), vs).second;
    double forward = real_inner(u, dy).item();
    double ftol = o.atol + 1e-9 * std::max({1.0, std::abs(analytic), std::abs(forward)});
    bool fok = std::abs(forward - analytic) <= ftol;
    r.ok = r.ok && fok;
    os << "; forward mode <u, jvp(v)> " << forward << (fok ? " agrees" : " DISAGREES");
  }
  r.message = os.str();
  return r;
}

}  // namespace detail

template <class F, class... Args>
GradcheckResult gradcheck(F f, const GradcheckOptions& o, const Args&... args) {
  Generator gen(o.seed);
  auto run = [&](const auto&... xs) {
    GradcheckResult r = detail::check_first_order(f, o, gen, xs...);
    if (!r.ok || o.order < 2) return r;
    // Second order: h(x) = <d/dx <u, f(x)>, w> differentiated again.
    Tensor u;
    {
      Tensor y0 = f(xs...);
      u = randn(y0.shape(), gen, detail::check_dtype(y0.dtype()));
    }
    auto ws = std::make_tuple(detail::random_like(xs, gen)...);
    auto h = [&](const auto&... zs) {
      auto [y, back] = pullback(f, zs...);
      auto gs = back(u);
      std::tuple<std::decay_t<decltype(zs)>...> gt;
      if constexpr (sizeof...(zs) == 1) std::get<0>(gt) = gs;
      else gt = gs;
      Tensor acc = scalar(0, f64);
      [&]<size_t... I>(std::index_sequence<I...>) {
        ((acc = acc + detail::inner(std::get<I>(gt), std::get<I>(ws))), ...);
      }
      (std::index_sequence_for<Args...>{});
      return acc;
    };
    GradcheckOptions o1 = o;
    o1.order = 1;
    GradcheckResult r2 = detail::check_first_order(h, o1, gen, xs...);
    r2.message = "second order: " + r2.message + "; first order: " + r.message;
    return r2;
  };
  return run(detail::promote_f64(args)...);
}

template <class F, class... Args>
GradcheckResult gradcheck(F f, const Args&... args) {
  return gradcheck(std::move(f), GradcheckOptions{}, args...);
}

}  // namespace fx::testing
