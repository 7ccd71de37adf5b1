// Reverse mode: pullback, gradient, withgradient.
//
//   fx::Tensor x = fx::randn({5});
//   auto f = [](const fx::Tensor& x) { return fx::sum(fx::tanh(x)); };
//   fx::Tensor g = fx::gradient(f, x);                       // same shape as x
//   auto [y, back] = fx::pullback(f, x);  fx::Tensor gx = back(fx::ones_like(y));
//   auto model = fx::nn::Chain(fx::nn::Dense(784, 32, fx::relu), fx::nn::Dense(32, 10));
//   fx::Tensor xb = fx::randn({64, 784}), yb = fx::zeros({64}, fx::i64);
//   auto [loss, grad] = fx::withgradient(
//       [&](const auto& m) { return fx::logitcrossentropy(m(xb), yb); }, model);  // grad: a model
//   fx::Tensor a = fx::randn({3, 4}), b = fx::randn({4});
//   auto g2 = [](const fx::Tensor& a, const fx::Tensor& b) { return fx::sum(fx::matmul(a, b)); };
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
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/ad/complex_scalar.hpp"
#include "fluxion/ad/scalar.hpp"
#include "fluxion/ad/scalar_derivatives.hpp"
#include "fluxion/ad/tape.hpp"
#include "fluxion/core/fields.hpp"
#include "fluxion/core/leaves.hpp"
#include "fluxion/ops/create.hpp"

namespace fx {
namespace ad::detail {

using fx::detail::is_map;
using fx::detail::is_optional;
using fx::detail::is_std_array;
using fx::detail::is_tuple_like;
using fx::detail::is_vector;

// ---- Numbers in tensor code. A generic f (`const auto&` parameters) sees the numbers of its
// arguments as 0-d tensors, so they are traced and get derivatives: a number becomes a Tensor,
// a std::vector / std::array of numbers a vector / array of Tensors, and a class template
// S<double> with FX_FIELDS becomes S<Tensor>. Anything else is passed as it is.
template <class T>
struct lifted_of {
  using type = T;
};
template <class T>
  requires std::is_floating_point_v<T>
struct lifted_of<T> {
  using type = Tensor;
};
template <class T, class A>
  requires std::is_floating_point_v<T>
struct lifted_of<std::vector<T, A>> {
  using type = std::vector<Tensor>;
};
template <class T, size_t N>
  requires std::is_floating_point_v<T>
struct lifted_of<std::array<T, N>> {
  using type = std::array<Tensor, N>;
};
template <template <class...> class S, class... Ts>
  requires(HasFields<S<Ts...>> && (std::is_floating_point_v<Ts> || ...))
struct lifted_of<S<Ts...>> {
  using type = S<std::conditional_t<std::is_floating_point_v<Ts>, Tensor, Ts>...>;
};
template <class T>
using lifted_t = typename lifted_of<T>::type;

// Whether f takes its arguments' numbers as tensors (all lifted) or as they are.
template <class F, class... Args>
constexpr bool lifts_numbers() {
  if constexpr ((std::is_same_v<lifted_t<Args>, Args> && ...)) return false;
  else return std::is_invocable_v<F&, lifted_t<Args>&...>;
}
template <bool Lift, class T>
using traced_as_t = std::conditional_t<Lift, lifted_t<T>, T>;

// Whether a floating-point number (or complex) sits in T outside any tensor.
template <class T>
struct holds_numbers;
template <class... Ts>
constexpr bool any_holds_numbers(std::tuple<Ts...>*) {
  return (holds_numbers<std::remove_cvref_t<Ts>>::value || ...);
}
template <class T>
struct holds_numbers {
  static constexpr bool value = [] {
    if constexpr (std::is_floating_point_v<T> || is_complex_v<T>) return true;
    else if constexpr (HasFields<T>)
      return any_holds_numbers(static_cast<decltype(std::declval<T&>().fx_fields())*>(nullptr));
    else if constexpr (is_vector<T>::value || is_std_array<T>::value || is_optional<T>::value)
      return holds_numbers<std::remove_cvref_t<typename T::value_type>>::value;
    else if constexpr (is_map<T>::value)
      return holds_numbers<std::remove_cvref_t<typename T::mapped_type>>::value;
    else if constexpr (is_tuple_like<T>::value) return any_holds_numbers(static_cast<T*>(nullptr));
    else return false;
  }();
};
template <class A, class B>
struct holds_numbers<std::pair<A, B>> {
  static constexpr bool value =
      holds_numbers<std::remove_cvref_t<A>>::value || holds_numbers<std::remove_cvref_t<B>>::value;
};

// Compile-time checks of a tensor-path argument T as f takes it (U): walkable, and no plain
// number f would take as a number (its derivative could not be traced).
template <class T, class U>
constexpr void check_traced_argument() {
  require_traversable<T, "fx::gradient">();
  static_assert(!holds_numbers<U>::value,
                "fx::gradient/pullback: an argument holds plain numbers (double, float, complex) "
                "that the function takes as numbers, so their derivative cannot be traced: take "
                "the argument as `const auto&` (numbers then arrive as 0-d tensors), make the "
                "fields fx::Tensor, make the struct a class template S<T>, or capture constants "
                "in the lambda instead of passing them");
}

template <class T>
lifted_t<T> lift(const T& x) {
  if constexpr (std::is_same_v<lifted_t<T>, T>) {
    return x;
  } else if constexpr (std::is_floating_point_v<T>) {
    return scalar(double(x), std::is_same_v<T, float> ? f32 : f64);
  } else if constexpr (requires { x.fx_fields(); }) {
    lifted_t<T> r{};
    zip_leaves(
        [](auto& out, const auto& in) {
          using O = std::remove_cvref_t<decltype(out)>;
          using I = std::remove_cvref_t<decltype(in)>;
          if constexpr (std::is_same_v<O, Tensor> && std::is_floating_point_v<I>)
            out = scalar(double(in), std::is_same_v<I, float> ? f32 : f64);
          else if constexpr (std::is_assignable_v<O&, const I&>) out = in;
        },
        r, x);
    return r;
  } else {
    lifted_t<T> r{};
    if constexpr (requires { r.resize(x.size()); }) r.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) r[i] = lift(x[i]);
    return r;
  }
}
// x as f takes it: lifted when f is generic over it.
template <class U, class T>
U trace_arg_as(const T& x) {
  if constexpr (std::is_same_v<U, T>) return x;
  else return lift(x);
}

// The gradient with x's type from the gradient g of its traced form: tensors and traced
// numbers take their derivatives; every other leaf (an int, a string) is zero or empty, never a
// copy of the argument's value.
template <class T, class G>
T untrace(const T& x, G& g) {
  T out = x;
  zip_leaves(
      [](auto& o, auto& d) {
        using O = std::remove_cvref_t<decltype(o)>;
        using D = std::remove_cvref_t<decltype(d)>;
        if constexpr (std::is_same_v<O, Tensor>) {
          o = std::move(d);
        } else if constexpr (std::is_same_v<D, Tensor> && std::is_arithmetic_v<O>) {
          o = d.defined() ? static_cast<O>(d.item()) : O(0);
        } else {
          o = O{};
        }
      },
      out, g);
  return out;
}

// ---- scalar code: numbers (and structures of them) passed to a generic function are
// instantiated with fx::Real for floating-point numbers (integers stay as they are) and
// differentiated on the scalar tape. real_t<T> is void where that does not apply (a tensor
// inside, a struct that is not a class template).
template <class T>
struct real_of {
  using type = void;
};
template <class T>
  requires std::is_floating_point_v<T>
struct real_of<T> {
  using type = Real;
};
template <class T>
  requires(std::is_integral_v<T> || std::is_enum_v<T> || std::is_same_v<T, std::string>)
struct real_of<T> {
  using type = T;
};
template <class T>
  requires std::is_floating_point_v<T>
struct real_of<std::complex<T>> {
  using type = std::complex<Real>;
};
template <class T>
using real_t = typename real_of<T>::type;
template <class... Ts>
constexpr bool all_real_v = (!std::is_void_v<real_t<Ts>> && ...);
template <class T, class A>
  requires all_real_v<T>
struct real_of<std::vector<T, A>> {
  using type = std::vector<real_t<T>>;
};
template <class T, size_t N>
  requires all_real_v<T>
struct real_of<std::array<T, N>> {
  using type = std::array<real_t<T>, N>;
};
template <class... Ts>
  requires all_real_v<Ts...>
struct real_of<std::tuple<Ts...>> {
  using type = std::tuple<real_t<Ts>...>;
};
template <class A, class B>
  requires all_real_v<A, B>
struct real_of<std::pair<A, B>> {
  using type = std::pair<real_t<A>, real_t<B>>;
};
template <class K, class V, class C, class A>
  requires all_real_v<V>
struct real_of<std::map<K, V, C, A>> {
  using type = std::map<K, real_t<V>, C>;
};
template <class T>
  requires all_real_v<T>
struct real_of<std::optional<T>> {
  using type = std::optional<real_t<T>>;
};
// A class template with FX_FIELDS, S<double> -> S<Real>: its floating-point template arguments
// are rebound (fields not listed in FX_FIELDS keep their default values in the rebound copy).
template <class Fields>
struct fields_real : std::false_type {};
template <class... Fs>
struct fields_real<std::tuple<Fs...>> : std::bool_constant<all_real_v<std::remove_cvref_t<Fs>...>> {
};
template <template <class...> class S, class... Ts>
  requires(HasFields<S<Ts...>> && (std::is_floating_point_v<Ts> || ...) &&
           fields_real<decltype(std::declval<S<Ts...>&>().fx_fields())>::value)
struct real_of<S<Ts...>> {
  using type = S<std::conditional_t<std::is_floating_point_v<Ts>, Real, Ts>...>;
};

// Whether T holds an fx::Real (then a gradient of it runs inside another scalar gradient).
template <class T>
constexpr bool holds_reals() {
  if constexpr (std::is_same_v<T, Real> || std::is_same_v<T, std::complex<Real>>) return true;
  else if constexpr (requires { typename T::value_type; } && !std::is_same_v<T, std::string>)
    return holds_reals<std::remove_cvref_t<typename T::value_type>>();
  else return false;
}

// Scalar AD applies when every argument is numeric and f can take Reals: a generic callable
// (template call operator) is assumed to; a non-generic one is asked.
template <class F, class... Args>
constexpr bool use_scalar_ad() {
  if constexpr (!all_real_v<Args...>) {
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
  if constexpr (std::is_floating_point_v<T>) {
    return rec.variable(double(x));
  } else if constexpr (std::is_same_v<real_t<T>, T>) {
    return x;  // integers, strings: not differentiated
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
  } else if constexpr (is_vector<T>::value || is_std_array<T>::value) {
    real_t<T> r{};
    if constexpr (requires { r.resize(x.size()); }) r.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) r[i] = to_real(x[i], rec);
    return r;
  } else if constexpr (is_tuple_like<T>::value) {
    return std::apply([&](const auto&... e) { return real_t<T>{to_real(e, rec)...}; }, x);
  } else if constexpr (is_optional<T>::value) {
    return x ? real_t<T>(to_real(*x, rec)) : real_t<T>();
  } else if constexpr (is_map<T>::value) {
    real_t<T> r;
    for (const auto& [k, v] : x) r.emplace(k, to_real(v, rec));
    return r;
  } else {  // a rebound class template: its listed fields, in order
    real_t<T> r{};
    zip_leaves([&](auto& out, const auto& in) { out = to_real(in, rec); }, r, x);
    return r;
  }
}

// Hands the vector buffers of to_real's result back for the next gradient.
template <class R>
void release_real(R& r) {
  if constexpr (std::is_same_v<R, std::vector<Real>>) {
    give_real_buffer(std::move(r));
  } else if constexpr (is_vector<R>::value || is_std_array<R>::value) {
    for (auto& e : r) release_real(e);
  }
}

template <class T>
T adjoint_of(const T& x, const real_t<T>& r, const std::vector<double>& adj) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(adj[r.index()]);
  } else if constexpr (std::is_same_v<real_t<T>, T>) {
    return T{};  // integers and strings have no derivative: zero, not a copy of the value
  } else if constexpr (is_complex_v<T>) {
    // Zygote's convention: ∂f/∂x + i ∂f/∂y.
    using V = typename T::value_type;
    return T(static_cast<V>(adj[r.real().index()]), static_cast<V>(adj[r.imag().index()]));
  } else if constexpr (is_vector<T>::value) {
    T g;  // written once (a copy of x then overwritten would pass over it twice)
    g.reserve(x.size());
    for (size_t i = 0; i < x.size(); ++i) g.push_back(adjoint_of(x[i], r[i], adj));
    return g;
  } else if constexpr (is_std_array<T>::value) {
    T g{};
    for (size_t i = 0; i < x.size(); ++i) g[i] = adjoint_of(x[i], r[i], adj);
    return g;
  } else if constexpr (is_tuple_like<T>::value) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return T{adjoint_of(std::get<I>(x), std::get<I>(r), adj)...};
    }
    (std::make_index_sequence<std::tuple_size_v<T>>{});
  } else if constexpr (is_optional<T>::value) {
    return x ? T(adjoint_of(*x, *r, adj)) : T();
  } else if constexpr (is_map<T>::value) {
    T g;
    for (const auto& [k, v] : x) g.emplace(k, adjoint_of(v, r.at(k), adj));
    return g;
  } else {  // a rebound class template: unlisted fields as in x, listed ones their adjoints
    T g = x;
    zip_leaves(
        [&](auto& out, const auto& in) {
          out = adjoint_of(std::remove_cvref_t<decltype(out)>(out), in, adj);
        },
        g, r);
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
  static_assert(std::is_same_v<R, Real> || std::is_arithmetic_v<R>,
                "fx::gradient: f must return one number (the scalar loss); for a function with "
                "several outputs use fx::jacobian (or fx::jacobian_forward)");
  Real y = std::apply(std::forward<F>(f), xs);
  const std::vector<double>& adj = rec.adjoints(y);
  auto grads = [&]<size_t... I>(std::index_sequence<I...>) {
    return std::tuple<Args...>{adjoint_of(args, std::get<I>(xs), adj)...};
  }
  (std::index_sequence_for<Args...>{});
  std::apply([](auto&... x) { (release_real(x), ...); }, xs);
  return std::pair{y.value(), std::move(grads)};
}

// A gradient inside another scalar gradient (its arguments hold the outer gradient's Reals):
// forward mode on fx::Dual<fx::Real>, whose value parts the outer tape records, so the inner
// gradient is itself differentiated (no perturbation confusion: the inner perturbation is a
// Dual level, the outer one the tape).
template <class F, class... Args>
auto nested_gradient(F&& f, const Args&... args) {
  if constexpr (sizeof...(Args) == 1 && (std::is_same_v<Args, Real> && ...)) {
    return derivative(std::forward<F>(f), args...);
  } else if constexpr (sizeof...(Args) == 1 && (std::is_same_v<Args, std::vector<Real>> && ...)) {
    return gradient_forward(std::forward<F>(f), args...);
  } else {
    static_assert(sizeof...(Args) == 0,
                  "fx::gradient inside a scalar gradient: the inner gradient's argument must be "
                  "one fx::Real or one std::vector<fx::Real> (pack several into a vector)");
  }
}

// The result a user gets: the single gradient, or a tuple of them for several arguments.
template <class... Args>
using grads_t =
    std::conditional_t<sizeof...(Args) == 1, std::tuple_element_t<0, std::tuple<Args..., void>>,
                       std::tuple<Args...>>;

template <class R>
const Tensor& primary(const R& r) {
  if constexpr (std::is_same_v<R, Tensor>) {
    return r;
  } else {
    if constexpr (requires { std::get<0>(r); }) {
      static_assert(std::is_same_v<std::remove_cvref_t<decltype(std::get<0>(r))>, Tensor>,
                    "fx::gradient/withgradient: f returns a tuple whose first element is not an "
                    "fx::Tensor; return (loss, aux...) with the one-element loss tensor first");
      return std::get<0>(r);
    } else {
      static_assert(std::is_same_v<R, Tensor>,
                    "fx::gradient/withgradient: f takes tensors but returns a plain number or "
                    "another non-differentiable type; return the loss as a one-element "
                    "fx::Tensor (fx::sum, fx::mean, ...), not a double from .item()");
      return *static_cast<const Tensor*>(nullptr);
    }
  }
}

// Runs f on tracked copies of the arguments (as f takes them, traced_as_t) on a fresh tape.
template <class F, class... Args>
auto record_call(F&& f, const Args&... args) {
  constexpr bool lift = lifts_numbers<F, Args...>();
  (check_traced_argument<Args, traced_as_t<lift, Args>>(), ...);
  Recording rec = Recording::begin();
  std::tuple<traced_as_t<lift, Args>...> xs{trace_arg_as<traced_as_t<lift, Args>>(args)...};
  std::apply([&](auto&... x) { (zip_tensors([&](Tensor& t) { t = rec.track(t); }, x), ...); }, xs);
  auto result = std::apply(std::forward<F>(f), xs);
  rec.end();
  return std::pair{std::move(result), std::make_shared<Recording>(std::move(rec))};
}

}  // namespace ad::detail

// The pullback returned by fx::pullback: maps a cotangent of the output to cotangents shaped like
// the arguments. It owns the tape; the tape is freed when the last copy is dropped. Traced holds
// the arguments as the function took them (numbers lifted to tensors, ad::detail::traced_t).
template <class Traced, class... Args>
class BasicBack {
 public:
  BasicBack(std::shared_ptr<ad::Recording> rec, Tensor y, std::tuple<Args...> args)
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
    auto grads = [&]<size_t... I>(std::index_sequence<I...>) {
      size_t k = 0;
      // Braced: the arguments' leaves are taken in order.
      return std::tuple<Args...>{
          fill<std::tuple_element_t<I, Traced>>(std::get<I>(args_), leaves, k)...};
    }
    (std::index_sequence_for<Args...>{});
    if constexpr (sizeof...(Args) == 1) return std::get<0>(std::move(grads));
    else return grads;
  }
  // x's gradient: its traced form's tensor leaves take the tape's leaves in order (a leaf nothing
  // flowed into gets an allocation-free zero), then every leaf goes back to x's type.
  template <class U, class T>
  static T fill(const T& x, std::vector<Tensor>& leaves, size_t& k) {
    U g = ad::detail::trace_arg_as<U>(x);
    zip_tensors(
        [&](Tensor& t) {
          Tensor& l = leaves[k++];
          if (l.defined()) t = std::move(l);
          else if (t.defined()) t = expanded_zeros_like(t);
        },
        g);
    return ad::detail::untrace(x, g);
  }
  std::shared_ptr<ad::Recording> rec_;
  Tensor y_;
  std::tuple<Args...> args_;
};
template <class... Args>
using Back = BasicBack<std::tuple<Args...>, Args...>;

namespace ad::detail {
template <class F, class... Args>
using back_t = BasicBack<std::tuple<traced_as_t<lifts_numbers<F, Args...>(), Args>...>, Args...>;
}  // namespace ad::detail

// Evaluates f(args...) recording a tape; returns (y, back) with back(dy) the vector-Jacobian
// product. f must return a Tensor.
template <class F, class... Args>
auto pullback(F&& f, const Args&... args) {
  auto [y, rec] = ad::detail::record_call(std::forward<F>(f), args...);
  static_assert(std::is_same_v<std::decay_t<decltype(y)>, Tensor>,
                "fx::pullback: the function must return fx::Tensor");
  using B = ad::detail::back_t<F, Args...>;
  Tensor out = y;
  return std::pair<Tensor, B>{std::move(y), B(rec, out, std::tuple<Args...>(args...))};
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
    else return WithGradient<double, std::tuple<Args...>>{y, std::move(grads)};
  } else {
    auto [result, rec] = ad::detail::record_call(std::forward<F>(f), args...);
    const Tensor& y = ad::detail::primary(result);
    ad::detail::check_scalar_output(y, "withgradient");
    auto grad = ad::detail::back_t<F, Args...>(std::move(rec), y,
                                               std::tuple<Args...>(args...))(ones_like(y));
    return WithGradient<std::decay_t<decltype(result)>, decltype(grad)>{std::move(result),
                                                                        std::move(grad)};
  }
}

// The gradient of a function returning a one-element tensor, shaped like the arguments.
template <class F, class... Args>
auto gradient(F&& f, const Args&... args) {
  if constexpr ((ad::detail::holds_reals<Args>() || ...)) {
    return ad::detail::nested_gradient(std::forward<F>(f), args...);
  } else if constexpr (ad::detail::use_scalar_ad<F, Args...>()) {
    auto grads = ad::detail::scalar_value_and_gradient(std::forward<F>(f), args...).second;
    if constexpr (sizeof...(Args) == 1) return std::get<0>(std::move(grads));
    else return grads;
  } else {
    auto [result, rec] = ad::detail::record_call(std::forward<F>(f), args...);
    const Tensor& y = ad::detail::primary(result);
    ad::detail::check_scalar_output(y, "gradient");
    return ad::detail::back_t<F, Args...>(std::move(rec), y,
                                          std::tuple<Args...>(args...))(ones_like(y));
  }
}

}  // namespace fx
