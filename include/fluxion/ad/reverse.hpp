// Reverse mode: pullback, gradient, withgradient.
//
//   auto f = [](const fx::Tensor& x) { return fx::sum(fx::tanh(x)); };
//   fx::Tensor g = fx::gradient(f, x);                       // same shape as x
//   auto [y, back] = fx::pullback(f, x);  fx::Tensor gx = back(fx::ones_like(y));
//   auto [loss, grad] = fx::withgradient(
//       [&](const auto& m) { return fx::logitcrossentropy(m(xb), yb); }, model);  // grad: a model
//   auto [ga, gb] = fx::gradient(g2, a, b);                  // several arguments: a tuple
//
// Scalar code: when every argument is a number (or a std::vector/std::array of numbers) and f is
// generic, f runs with fx::Real (scalar.hpp) instead of tensors:
//   double d = fx::gradient([](auto x) { return x * sin(x); }, 1.0);
// Complex numbers run as std::complex<fx::Real> (complex_scalar.hpp); a real-valued f of
// z = x + iy has the gradient ∂f/∂x + i ∂f/∂y, as in Zygote:
//   std::complex<double> g = fx::gradient([](auto z) { return std::norm(z); }, std::complex<double>(1, 2));  // 2+4i
//
// Arguments may be tensors, numbers (the gradient is a number) or any structure of them:
// structs declaring FX_FIELDS, std::vector, std::array, std::tuple, std::pair, std::optional and
// map values. The gradient has the argument's type and shape; a leaf nothing flowed into holds
// an allocation-free zero (fx::expanded_zeros_like). `f` may use loops, branches, recursion and
// closures freely: only operations on values derived from the arguments are recorded. Calling
// gradient inside a differentiated function differentiates again (higher order).
#pragma once
#include <array>
#include <complex>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/ad/complex_scalar.hpp"
#include "fluxion/ad/scalar.hpp"
#include "fluxion/ad/tape.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/ops/create.hpp"

namespace fx {
namespace ad::detail {

template <class T>
using lifted_t = std::conditional_t<std::is_arithmetic_v<T>, Tensor, T>;

template <class T>
lifted_t<T> lift(const T& x) {
  if constexpr (std::is_arithmetic_v<T>) return scalar(double(x), std::is_same_v<T, float> ? f32 : f64);
  else return x;
}

// ---- scalar code: numbers (and vectors/arrays of them) passed to a generic function are
// instantiated as fx::Real and differentiated on the scalar tape.
template <class T>
struct real_of {
  using type = void;
};
template <class T>
  requires std::is_arithmetic_v<T>
struct real_of<T> {
  using type = Real;
};
template <class T>
  requires std::is_floating_point_v<T>
struct real_of<std::complex<T>> {
  using type = std::complex<Real>;
};
template <class T, class A>
  requires(!std::is_void_v<typename real_of<T>::type>)
struct real_of<std::vector<T, A>> {
  using type = std::vector<typename real_of<T>::type>;
};
template <class T, size_t N>
  requires(!std::is_void_v<typename real_of<T>::type>)
struct real_of<std::array<T, N>> {
  using type = std::array<typename real_of<T>::type, N>;
};
template <class T>
using real_t = typename real_of<T>::type;

// Scalar AD applies when every argument is numeric and f can take Reals: a generic callable
// (template call operator) is assumed to; a non-generic one is asked.
template <class F, class... Args>
constexpr bool use_scalar_ad() {
  if constexpr (!(!std::is_void_v<real_t<Args>> && ...)) {
    return false;
  } else if constexpr (requires { &std::decay_t<F>::operator(); } ||
                       std::is_pointer_v<std::decay_t<F>> || std::is_function_v<F>) {
    return std::is_invocable_v<F&, real_t<Args>&...>;
  } else {
    return true;
  }
}

template <class T>
real_t<T> to_real(const T& x, ScalarRecording& rec) {
  if constexpr (std::is_arithmetic_v<T>) {
    return rec.variable(double(x));
  } else if constexpr (is_complex_v<T>) {
    Real re = rec.variable(double(x.real()));
    return std::complex<Real>(re, rec.variable(double(x.imag())));
  } else if constexpr (std::is_same_v<real_t<T>, std::vector<Real>>) {
    // A vector of numbers: its Reals go into a buffer kept from an earlier gradient (see
    // take_real_buffer), written once.
    std::vector<Real> r = take_real_buffer();
    if constexpr (std::is_same_v<T, std::vector<double>>) {
      r.resize(x.size());  // a buffer that held more is not written twice
      rec.variables(x.data(), x.size(), r.data());
    } else {
      r.clear();
      r.reserve(x.size());
      for (size_t i = 0; i < x.size(); ++i) r.push_back(rec.variable(double(x[i])));
    }
    return r;
  } else {
    real_t<T> r{};
    if constexpr (requires { r.resize(x.size()); }) r.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) r[i] = to_real(x[i], rec);
    return r;
  }
}

// Hands the vector buffers of to_real's result back for the next gradient.
template <class R>
void release_real(R& r) {
  if constexpr (std::is_same_v<R, std::vector<Real>>) {
    give_real_buffer(std::move(r));
  } else if constexpr (requires { r.size(); r[0]; } && !std::is_same_v<R, std::complex<Real>>) {
    for (auto& e : r) release_real(e);
  }
}

template <class T>
T adjoint_of(const T& x, const real_t<T>& r, const std::vector<double>& adj) {
  if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<T>(adj[r.index()]);
  } else if constexpr (is_complex_v<T>) {
    // Zygote's convention: ∂f/∂x + i ∂f/∂y.
    using V = typename T::value_type;
    return T(static_cast<V>(adj[r.real().index()]), static_cast<V>(adj[r.imag().index()]));
  } else if constexpr (requires(T& v) { v.push_back(x[0]); v.reserve(size_t(0)); }) {
    T g;  // written once (a copy of x then overwritten would pass over it twice)
    g.reserve(x.size());
    for (size_t i = 0; i < x.size(); ++i) g.push_back(adjoint_of(x[i], r[i], adj));
    return g;
  } else {
    T g = x;
    for (size_t i = 0; i < x.size(); ++i) g[i] = adjoint_of(x[i], r[i], adj);
    return g;
  }
}

// Runs f on Real copies of args; returns (value, gradients shaped like args).
template <class F, class... Args>
auto scalar_value_and_gradient(F&& f, const Args&... args) {
  ScalarRecording rec;
  std::tuple<real_t<Args>...> xs{to_real(args, rec)...};
  using R = std::remove_cvref_t<decltype(std::apply(std::forward<F>(f), xs))>;
  static_assert(!is_complex_v<R>,
                "fx::gradient: f returns a complex number, so it has no gradient; return a real "
                "number (std::real, std::abs, std::norm of it), or use fx::derivative_holomorphic "
                "or fx::wirtinger (fluxion/ad/complex_scalar.hpp)");
  Real y = std::apply(std::forward<F>(f), xs);
  const std::vector<double>& adj = rec.adjoints(y);
  auto grads = [&]<size_t... I>(std::index_sequence<I...>) {
    return std::tuple<Args...>{adjoint_of(args, std::get<I>(xs), adj)...};
  }(std::index_sequence_for<Args...>{});
  std::apply([](auto&... x) { (release_real(x), ...); }, xs);
  return std::pair{y.value(), std::move(grads)};
}

// The result a user gets: the single gradient, or a tuple of them for several arguments.
template <class... Args>
using grads_t = std::conditional_t<sizeof...(Args) == 1,
                                   std::tuple_element_t<0, std::tuple<Args..., void>>,
                                   std::tuple<Args...>>;

template <class R>
const Tensor& primary(const R& r) {
  if constexpr (std::is_same_v<R, Tensor>) return r;
  else return std::get<0>(r);
}

// Runs f on tracked copies of the arguments on a fresh tape.
template <class F, class... Args>
auto record_call(F&& f, const Args&... args) {
  Recording rec = Recording::begin();
  std::tuple<lifted_t<Args>...> xs{lift(args)...};
  std::apply([&](auto&... x) { (zip_tensors([&](Tensor& t) { t = rec.track(t); }, x), ...); }, xs);
  auto result = std::apply(std::forward<F>(f), xs);
  rec.end();
  return std::pair{std::move(result), std::make_shared<Recording>(std::move(rec))};
}

}  // namespace ad::detail

// The pullback returned by fx::pullback: maps a cotangent of the output to cotangents shaped like
// the arguments. It owns the tape; the tape is freed when the last copy is dropped.
template <class... Args>
class Back {
 public:
  Back(std::shared_ptr<ad::Recording> rec, Tensor y, std::tuple<Args...> args)
      : rec_(std::move(rec)), y_(std::move(y)), args_(std::move(args)) {}

  ad::detail::grads_t<Args...> operator()(const Tensor& dy) const& {
    FX_CHECK(dy.defined(), "fx::pullback: undefined cotangent");
    return assemble(rec_->backward(y_, dy));
  }
  // The last use of a pullback (std::move(back)(dy), or fx::gradient's temporary): when no other
  // copy shares the tape, the sweep drops saved tensors as it goes (Recording::backward_once).
  ad::detail::grads_t<Args...> operator()(const Tensor& dy) && {
    FX_CHECK(dy.defined(), "fx::pullback: undefined cotangent");
    if (rec_.use_count() != 1) return assemble(rec_->backward(y_, dy));
    std::shared_ptr<ad::Recording> rec = std::move(rec_);
    return assemble(rec->backward_once(y_, dy));
  }
  const ad::Recording& recording() const { return *rec_; }

 private:
  ad::detail::grads_t<Args...> assemble(std::vector<Tensor> leaves) const {
    std::tuple<Args...> grads = args_;
    size_t k = 0;
    std::apply([&](auto&... g) { (fill(g, leaves, k), ...); }, grads);
    if constexpr (sizeof...(Args) == 1) return std::get<0>(std::move(grads));
    else return grads;
  }
  template <class T>
  static void fill(T& g, std::vector<Tensor>& leaves, size_t& k) {
    if constexpr (std::is_arithmetic_v<T>) {
      Tensor& l = leaves[k++];
      g = l.defined() ? static_cast<T>(l.item()) : T(0);
    } else {
      zip_tensors([&](Tensor& t) {
        Tensor& l = leaves[k++];
        if (l.defined()) t = std::move(l);
        else if (t.defined()) t = expanded_zeros_like(t);
      }, g);
    }
  }
  std::shared_ptr<ad::Recording> rec_;
  Tensor y_;
  std::tuple<Args...> args_;
};

// Evaluates f(args...) recording a tape; returns (y, back) with back(dy) the vector-Jacobian
// product. f must return a Tensor.
template <class F, class... Args>
auto pullback(F&& f, const Args&... args) {
  auto [y, rec] = ad::detail::record_call(std::forward<F>(f), args...);
  static_assert(std::is_same_v<std::decay_t<decltype(y)>, Tensor>,
                "fx::pullback: the function must return fx::Tensor");
  Tensor out = y;
  return std::pair<Tensor, Back<Args...>>{std::move(y),
                                          Back<Args...>(rec, out, std::tuple<Args...>(args...))};
}

template <class V, class G>
struct WithGradient {
  V val;
  G grad;
};

namespace ad::detail {
inline void check_scalar_output(const Tensor& y, const char* op) {
  FX_CHECK(y.defined() && y.numel() == 1 && is_floating(y.dtype()), "fx::", op,
           ": the function must return a one-element floating tensor, got ",
           y.defined() ? std::string(dtype_name(y.dtype())) + " " + y.shape().to_string()
                       : std::string("undefined"));
}
}  // namespace ad::detail

// The value of f and its gradient. f may return a Tensor, or a tuple/pair whose first element is
// the one-element loss and the rest auxiliary outputs (returned unchanged in .val).
template <class F, class... Args>
auto withgradient(F&& f, const Args&... args) {
  if constexpr (ad::detail::use_scalar_ad<F, Args...>()) {
    auto [y, grads] = ad::detail::scalar_value_and_gradient(std::forward<F>(f), args...);
    if constexpr (sizeof...(Args) == 1)
      return WithGradient<double, Args...>{y, std::get<0>(std::move(grads))};
    else
      return WithGradient<double, std::tuple<Args...>>{y, std::move(grads)};
  } else {
  auto [result, rec] = ad::detail::record_call(std::forward<F>(f), args...);
  const Tensor& y = ad::detail::primary(result);
  ad::detail::check_scalar_output(y, "withgradient");
  auto grad = Back<Args...>(std::move(rec), y, std::tuple<Args...>(args...))(ones_like(y));
  return WithGradient<std::decay_t<decltype(result)>, decltype(grad)>{std::move(result),
                                                                      std::move(grad)};
  }
}

// The gradient of a function returning a one-element tensor, shaped like the arguments.
template <class F, class... Args>
auto gradient(F&& f, const Args&... args) {
  if constexpr (ad::detail::use_scalar_ad<F, Args...>()) {
    auto grads = ad::detail::scalar_value_and_gradient(std::forward<F>(f), args...).second;
    if constexpr (sizeof...(Args) == 1) return std::get<0>(std::move(grads));
    else return grads;
  } else {
    auto [result, rec] = ad::detail::record_call(std::forward<F>(f), args...);
    const Tensor& y = ad::detail::primary(result);
    ad::detail::check_scalar_output(y, "gradient");
    return Back<Args...>(std::move(rec), y, std::tuple<Args...>(args...))(ones_like(y));
  }
}

}  // namespace fx
