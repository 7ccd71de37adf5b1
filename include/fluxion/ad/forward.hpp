// Forward mode and the derivative operators built from both modes.
//
//   using fx::Tensor;
//   auto f = [](const Tensor& x) { return fx::tanh(fx::matmul(fx::ones({2, 3}, fx::f64), x)); };
//   auto loss = [](const Tensor& x) { return fx::sum(fx::exp(x) * x); };
//   Tensor x = fx::randn({3}, fx::f64), v = fx::randn({3}, fx::f64), v2 = fx::ones({3}, fx::f64);
//   auto [y, dy] = fx::jvp(f, x, v);                  // y = f(x), dy = J v
//   auto push = fx::pushforward(f, x);  Tensor dy2 = push(v2);
//   Tensor J = fx::jacobian(f, x);                    // reverse mode: vmap of the pullback
//   Tensor Jf = fx::jacobian_forward(f, x);           // forward mode: vmap of the jvp
//   Tensor H = fx::hessian(loss, x);                  // forward over reverse: (3, 3)
//   Tensor Hr = fx::hessian_reverse(loss, x);         // reverse over reverse
//   Tensor Hv = fx::hvp(loss, x, v);                  // Hessian-vector product, no Hessian built
//
// Forward mode reads each primitive's pushforward from the table (an fx::Error names a primitive
// without one). Tangents flow alongside values, so any nesting with reverse mode is allowed; every
// level has its own tag, so nested derivatives never confuse their perturbations. Jacobians are
// shaped output.shape + input.shape.
#pragma once
#include <tuple>
#include <utility>

#include "fluxion/ad/reverse.hpp"
#include "fluxion/ad/vmap.hpp"
#include "fluxion/ops.hpp"

namespace fx {

// (f(xs...), J·vs) for a tuple of arguments and a tuple of tangents of the same structure.
template <class F, class... Args>
std::pair<Tensor, Tensor> jvp(F&& f, const std::tuple<Args...>& xs, const std::tuple<Args...>& vs) {
  auto rec = ad::Recording::begin(ad::Recording::Mode::forward);
  std::tuple<ad::detail::lifted_t<Args>...> txs =
      std::apply([](const auto&... x) { return std::tuple{ad::detail::lift(x)...}; }, xs);
  std::tuple<ad::detail::lifted_t<Args>...> tvs =
      std::apply([](const auto&... v) { return std::tuple{ad::detail::lift(v)...}; }, vs);
  zip_tensors([&](Tensor& t, const Tensor& v) { t = rec.track(t, v); }, txs, tvs);
  Tensor y = std::apply(std::forward<F>(f), txs);
  rec.end();
  FX_CHECK(y.defined(), "fx::jvp: the function returned an undefined tensor");
  Tensor dy = rec.tangent(y);
  if (!dy.defined()) dy = zeros_like(y);
  return {std::move(y), std::move(dy)};
}

// Single-argument form: jvp(f, x, v).
template <class F, class X>
std::pair<Tensor, Tensor> jvp(F&& f, const X& x, const X& v) {
  return jvp(std::forward<F>(f), std::tuple<X>(x), std::tuple<X>(v));
}

// A function v -> J v at x (each call re-evaluates f: forward mode needs the tangent up front).
template <class F, class X>
auto pushforward(F f, const X& x) {
  return [f = std::move(f), x](const X& v) { return jvp(f, x, v).second; };
}

namespace ad::detail {
inline Tensor basis(const Shape& s, int64_t i, DType t) {
  Tensor e = zeros(Shape{s.numel()}, t);
  visit_floating(t, "fx::jacobian", [&]<class T>() { e.data<T>()[i] = T(1); });
  return reshape(e, s);
}
// The n x n identity, each row one basis vector.
inline Tensor identity(int64_t n, DType t) {
  Tensor i = arange(n, i64);
  return astype(eq(unsqueeze(i, 1), i), t);
}
inline Shape concat_shapes(const Shape& a, const Shape& b) {
  Shape s = a;
  for (int64_t d : b) s.push_back(d);
  return s;
}
}  // namespace ad::detail

// Reverse mode: the pullback of y = f(x), vmapped over the basis of y's cotangents (one
// batched backward pass; complex outputs take one pullback per element).
template <class F>
Tensor jacobian(F f, const Tensor& x) {
  auto [y, back] = pullback(f, x);
  Shape js = ad::detail::concat_shapes(y.shape(), x.shape());
  if (y.numel() == 0) return zeros(js, x.dtype());
  if (!is_complex(y.dtype())) {
    Tensor basis = reshape(ad::detail::identity(y.numel(), y.dtype()),
                           ad::detail::concat_shapes({y.numel()}, y.shape()));
    return reshape(vmap([&](const Tensor& e) { return back(e); })(basis), js);
  }
  std::vector<Tensor> rows;
  for (int64_t i = 0; i < y.numel(); ++i)
    rows.push_back(reshape(back(ad::detail::basis(y.shape(), i, y.dtype())), {-1}));
  return reshape(stack(rows, 0), js);
}

// Forward mode: the jvp of f at x, vmapped over the basis of x's tangents (f's primal runs once).
template <class F>
Tensor jacobian_forward(F f, const Tensor& x) {
  if (x.numel() == 0) return zeros(ad::detail::concat_shapes(f(x).shape(), x.shape()), x.dtype());
  if (!is_complex(x.dtype())) {
    Tensor basis = reshape(ad::detail::identity(x.numel(), x.dtype()),
                           ad::detail::concat_shapes({x.numel()}, x.shape()));
    Tensor cols = vmap([&](const Tensor& v) { return jvp(f, x, v).second; }, {0}, {-1})(basis);
    Shape ys(std::span<const int64_t>(cols.shape().data(), cols.ndim() - 1));
    return reshape(cols, ad::detail::concat_shapes(ys, x.shape()));
  }
  std::vector<Tensor> cols;
  Shape ys;
  for (int64_t j = 0; j < x.numel(); ++j) {
    auto [y, dy] = jvp(f, x, ad::detail::basis(x.shape(), j, x.dtype()));
    ys = y.shape();
    cols.push_back(reshape(dy, {-1}));
  }
  return reshape(stack(cols, 1), ad::detail::concat_shapes(ys, x.shape()));
}

// The gradient of a one-element-valued f, as a function of x (differentiable again).
template <class F>
auto gradient_of(F f) {
  return [f = std::move(f)](const Tensor& x) { return gradient(f, x); };
}

template <class F>
Tensor hessian(F f, const Tensor& x) {  // forward over reverse
  return jacobian_forward(gradient_of(std::move(f)), x);
}
template <class F>
Tensor hessian_reverse(F f, const Tensor& x) {  // reverse over reverse
  return jacobian(gradient_of(std::move(f)), x);
}
template <class F>
Tensor hvp(F f, const Tensor& x, const Tensor& v) {  // H v by forward over reverse
  return jvp(gradient_of(std::move(f)), x, v).second;
}
// The Hessian's diagonal, shaped like x.
template <class F>
Tensor diaghessian(F f, const Tensor& x) {
  int64_t n = x.numel();
  Tensor h = reshape(hessian(std::move(f), x), {n * n});
  return reshape(slice(h, 0, 0, n * n, n + 1), x.shape());
}

}  // namespace fx
