// Tuned CPU elementwise kernels: collapsed strided rows, unit-stride fast path, OpenMP.
#include "backend/backends.hpp"
#include "backend/cpu/loops.hpp"
#include "backend/cpu/thresholds.hpp"
#include "backend/cpu/vector_math.hpp"
#include "backend/math.hpp"
#include "ops/fused.hpp"

namespace fx::backend::cpu {
namespace {

// out (element type D) = f(x) (element type S): S differs from D only for conversions.
template <class D, class S, class F>
void map1(const Tensor& out, const Tensor& x, F f) {
  D* o = out.data<D>();
  const S* xp = x.data<S>();
  if (const int64_t n = flat_serial(out, x); n >= 0) {
    for (int64_t j = 0; j < n; ++j) o[j] = f(xp[j]);
    return;
  }
  run_rows<2>(layout_of<2>(out, {&x}), [&](const int64_t* off, int64_t n, const int64_t* st) {
    D* op = o + off[0];
    const S* ip = xp + off[1];
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t j = 0; j < n; ++j) op[j] = f(ip[j]);
    } else {
      for (int64_t j = 0; j < n; ++j) op[j * st[0]] = f(ip[j * st[1]]);
    }
  });
}

template <class R, class T, class F>
void map2(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  R* o = out.data<R>();
  const T* ap = a.data<T>();
  const T* bp = b.data<T>();
  if (const int64_t n = flat_serial(out, a, b); n >= 0) {
    for (int64_t j = 0; j < n; ++j) o[j] = f(ap[j], bp[j]);
    return;
  }
  Layout<3> L = layout_of<3>(out, {&a, &b});
  if (fold_short_rows(L, [&](const int64_t* off, int64_t rows, const int64_t* rs, int64_t w,
                             const int64_t* st) {
        // Rows of w < 16 elements with unit or zero inner strides (broadcasting over a short
        // last axis: (K, N, 10) * (K, N, 1)): one call runs a whole column of rows, so the row
        // call, stride tests and odometer step are paid once per column, not per row.
        R* op = o + off[0];
        const T* x = ap + off[1];
        const T* y = bp + off[2];
        if (st[1] == 1 && st[2] == 1 && rs[0] == w &&
            ((rs[1] == w && rs[2] == 0) || (rs[1] == 0 && rs[2] == w))) {
          // One operand's row repeats down the column (x - mu: (N, D) against (K, 1, D)), the
          // other and out run contiguously through it: the repeated row is laid out in a
          // buffer of whole periods once, and the column becomes flat runs of that length
          // (a loop of w < 16 per row vectorised poorly: 2x slower at w = 10).
          const int64_t per = std::min(rows, std::max<int64_t>(1, kRepeatedRowRun / w));
          T rep[kRepeatedRowRun];  // per * w <= kRepeatedRowRun, as w < 16
          const T* row = rs[1] == 0 ? x : y;
          for (int64_t i = 0; i < per; ++i)
            for (int64_t j = 0; j < w; ++j) rep[i * w + j] = row[j];
          const T* full = rs[1] == 0 ? y : x;
          for (int64_t i0 = 0; i0 < rows; i0 += per) {
            const int64_t n = std::min(per, rows - i0) * w;
            R* ob = op + i0 * w;
            const T* fb = full + i0 * w;
            if (rs[1] == 0)
              for (int64_t t = 0; t < n; ++t) ob[t] = f(rep[t], fb[t]);
            else
              for (int64_t t = 0; t < n; ++t) ob[t] = f(fb[t], rep[t]);
          }
        } else if (st[1] == 1 && st[2] == 1) {
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < w; ++j)
              op[i * rs[0] + j] = f(x[i * rs[1] + j], y[i * rs[2] + j]);
        } else if (st[1] == 1) {  // y broadcast along the row
          for (int64_t i = 0; i < rows; ++i) {
            const T c = y[i * rs[2]];
            for (int64_t j = 0; j < w; ++j) op[i * rs[0] + j] = f(x[i * rs[1] + j], c);
          }
        } else {  // x broadcast along the row
          for (int64_t i = 0; i < rows; ++i) {
            const T c = x[i * rs[1]];
            for (int64_t j = 0; j < w; ++j) op[i * rs[0] + j] = f(c, y[i * rs[2] + j]);
          }
        }
      }))
    return;
  run_rows<3>(L, [&](const int64_t* off, int64_t n, const int64_t* st) {
    R* op = o + off[0];
    const T* x = ap + off[1];
    const T* y = bp + off[2];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      for (int64_t j = 0; j < n; ++j) op[j] = f(x[j], y[j]);
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
      const T c = *y;
      for (int64_t j = 0; j < n; ++j) op[j] = f(x[j], c);
    } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
      const T c = *x;
      for (int64_t j = 0; j < n; ++j) op[j] = f(c, y[j]);
    } else {
      for (int64_t j = 0; j < n; ++j) op[j * st[0]] = f(x[j * st[1]], y[j * st[2]]);
    }
  });
}

// Runs fn.template operator()<T>() for the numeric dtypes the functor F accepts; declines bool.
template <class F, class Fn>
bool numeric(DType t, Fn&& fn) {
  if (t == f32) return fn.template operator()<float>(), true;
  if (t == f64) return fn.template operator()<double>(), true;
  if constexpr (!F::floating_only) {
    if (t == i64) return fn.template operator()<int64_t>(), true;
    if (t == i32) return fn.template operator()<int32_t>(), true;
  }
  if constexpr (F::complex_ok) {
    if (t == c64) return fn.template operator()<std::complex<float>>(), true;
    if (t == c128) return fn.template operator()<std::complex<double>>(), true;
  }
  return false;
}

// The vectorised version of a functor, where there is one (vector_math.hpp).
template <class F>
inline constexpr bool has_vector = false;
template <class F>
inline constexpr VecFn vector_of = VecFn::exp;
#define FX_VECTOR(Functor, fn)                      \
  template <>                                       \
  inline constexpr bool has_vector<Functor> = true; \
  template <>                                       \
  inline constexpr VecFn vector_of<Functor> = VecFn::fn;
FX_VECTOR(math::Value<elem::exp_op>, exp)
FX_VECTOR(math::Value<elem::log_op>, log)
FX_VECTOR(math::Value<elem::log1p_op>, log1p)
FX_VECTOR(math::Value<elem::sin_op>, sin)
FX_VECTOR(math::Value<elem::cos_op>, cos)
FX_VECTOR(math::Value<elem::tanh_op>, tanh)
FX_VECTOR(math::Value<elem::sigmoid_op>, sigmoid)
#undef FX_VECTOR

// y = f(x) on contiguous real arrays through the SIMD polynomials, split across threads.
template <class T>
void vector_unary(VecFn fn, const T* x, T* y, int64_t n) {
  const int threads = team_for(n);
  if (threads <= 1) return vector_map(fn, x, y, n);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
    vector_map(fn, x + lo, y + lo, hi - lo);
  }
}

template <class F>
bool unary(const KernelCall& c) {
  return numeric<F>(c.in[0].dtype(), [&]<class T>() {
    if constexpr (has_vector<F> && std::is_floating_point_v<T>) {
      if (c.in[0].is_contiguous()) {  // the output is always contiguous
        vector_unary(vector_of<F>, c.in[0].data<T>(), c.out.data<T>(), c.out.numel());
        return;
      }
    }
    F f{};
    if constexpr (requires { f.s; }) f.s = c.attrs.get<ScalarAttrs>().s;
    map1<T, T>(c.out, c.in[0], f);
  });
}

template <class F>
bool binary(const KernelCall& c) {
  return numeric<F>(c.in[0].dtype(), [&]<class T>() { map2<T, T>(c.out, c.in[0], c.in[1], F{}); });
}

// (dy, a, b) -> [dy * b | dy * a] (ops/fused.hpp): one pass over dy for both cotangents.
// The ops layer sends dense operands only; anything else goes to the reference kernel.
bool mul_backward(const KernelCall& c) {
  const Tensor &dy = c.in[0], &a = c.in[1], &b = c.in[2];
  const DType t = dy.dtype();
  if ((t != f32 && t != f64) || !dy.is_contiguous() || !a.is_contiguous() || !b.is_contiguous())
    return false;
  auto run = [&]<class T>() {
    const T *gp = dy.data<T>(), *ap = a.data<T>(), *bp = b.data<T>();
    const int64_t n = dy.numel();
    T* da = c.out.data<T>();
    T* db = da + n;
    split_range(n, team_for(n), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        da[i] = gp[i] * bp[i];
        db[i] = gp[i] * ap[i];
      }
    });
  };
  if (t == f32) run.template operator()<float>();
  else run.template operator()<double>();
  return true;
}

template <class F>
bool compare(const KernelCall& c) {
  return numeric<math::Maximum>(c.in[0].dtype(),  // every real dtype, no complex
                                [&]<class T>() { map2<bool, T>(c.out, c.in[0], c.in[1], F{}); });
}

// x -> bool for every dtype, complex and bool included (the finiteness tests).
template <class F>
bool predicate(const KernelCall& c) {
  visit_dtype_all(c.in[0].dtype(), [&]<class T>() { map1<bool, T>(c.out, c.in[0], F{}); });
  return true;
}

bool where(const KernelCall& c) {
  const Tensor &m = c.in[0], &a = c.in[1], &b = c.in[2];
  return numeric<math::Add>(a.dtype(), [&]<class T>() {
    T* o = c.out.data<T>();
    const bool* mp = m.data<bool>();
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    run_rows<4>(layout_of<4>(c.out, {&m, &a, &b}),
                [&](const int64_t* off, int64_t n, const int64_t* st) {
                  for (int64_t j = 0; j < n; ++j)
                    o[off[0] + j * st[0]] =
                        mp[off[1] + j * st[1]] ? ap[off[2] + j * st[2]] : bp[off[3] + j * st[3]];
                });
  });
}

// Any dtype to any dtype, except complex to real (the ops layer asks for real() or abs()).
bool convert(const KernelCall& c) {
  const Tensor& x = c.in[0];
  if (is_complex(x.dtype()) && !is_complex(c.out.dtype())) return false;
  visit_dtype_all(x.dtype(), [&]<class S>() {
    visit_dtype_all(c.out.dtype(), [&]<class D>() {
      if constexpr (is_complex_v<D> && !is_complex_v<S>)
        map1<D, S>(c.out, x, [](S v) { return D(typename D::value_type(v)); });
      else if constexpr (is_complex_v<D> || !is_complex_v<S>)
        map1<D, S>(c.out, x, [](S v) { return static_cast<D>(v); });
    });
  });
  return true;
}

}  // namespace

void register_elementwise() {
  constexpr Device dev = Device::cpu;
  constexpr int r = kCpuRank;
  register_kernel(neg_p, dev, r, unary<math::Neg>);
  register_kernel(relu_p, dev, r, unary<math::Relu>);
  // The math functions of the table, their fused pullbacks, and the binary ones.
#define FX_REGISTER_UNARY(name)                                           \
  register_kernel(name##_p, dev, r, unary<math::Value<elem::name##_op>>); \
  register_kernel(name##_backward_p, dev, r, binary<math::Backward<elem::name##_op>>);
#define FX_REGISTER_BINARY(name) \
  register_kernel(name##_p, dev, r, binary<math::BinaryValue<elem::name##_op>>);
  FX_ELEMENTWISE_UNARY(FX_REGISTER_UNARY)
  FX_ELEMENTWISE_BINARY(FX_REGISTER_BINARY)
#undef FX_REGISTER_UNARY
#undef FX_REGISTER_BINARY
  register_kernel(square_p, dev, r, unary<math::Square>);
  register_kernel(abs_p, dev, r, unary<math::Abs>);
  register_kernel(sign_p, dev, r, unary<math::Sign>);
  register_kernel(add_scalar_p, dev, r, unary<math::AddScalar>);
  register_kernel(mul_scalar_p, dev, r, unary<math::MulScalar>);
  register_kernel(pow_scalar_p, dev, r, unary<math::PowScalar>);
  register_kernel(add_p, dev, r, binary<math::Add>);
  register_kernel(sub_p, dev, r, binary<math::Sub>);
  register_kernel(mul_p, dev, r, binary<math::Mul>);
  register_kernel(div_p, dev, r, binary<math::Div>);
  register_kernel(pow_p, dev, r, binary<math::Pow>);
  register_kernel(maximum_p, dev, r, binary<math::Maximum>);
  register_kernel(minimum_p, dev, r, binary<math::Minimum>);
  register_kernel(eq_p, dev, r, compare<math::Eq>);
  register_kernel(ne_p, dev, r, compare<math::Ne>);
  register_kernel(lt_p, dev, r, compare<math::Lt>);
  register_kernel(le_p, dev, r, compare<math::Le>);
  register_kernel(gt_p, dev, r, compare<math::Gt>);
  register_kernel(ge_p, dev, r, compare<math::Ge>);
  register_kernel(isnan_p, dev, r, predicate<math::IsNan>);
  register_kernel(isinf_p, dev, r, predicate<math::IsInf>);
  register_kernel(isfinite_p, dev, r, predicate<math::IsFinite>);
  register_kernel(where_p, dev, r, where);
  register_kernel(astype_p, dev, r, convert);
  register_kernel(copy_p, dev, r, convert);
  register_kernel(mul_backward_p, dev, r, mul_backward);
  register_kernel(square_backward_p, dev, r, binary<math::SquareBackward>);
  register_kernel(relu_backward_p, dev, r, binary<math::ReluBackward>);
}

}  // namespace fx::backend::cpu
