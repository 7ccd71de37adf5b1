// Reference kernels for elementwise primitives: one plain loop over every element, computing
// each operand's offset from its strides. Slow on purpose: this is the oracle the tuned backends
// are compared with, and the fallback that makes every op run on the CPU.
#include "backend/backends.hpp"
#include "backend/math.hpp"
#include "ops/fused.hpp"

namespace fx::backend {
namespace {

// Runs run.template operator()<T>() for the dtypes functor F is defined for; declines complex
// dtypes F does not take (dispatch then names the op), rejects bool and, for floating-only F,
// integers.
template <class F, class Run>
bool run_for(DType t, const char* op, Run& run) {
  if (is_complex(t)) {
    if constexpr (F::complex_ok) {
      visit_dtype_all(t, [&]<class T>() {
        if constexpr (is_complex_v<T>) run.template operator()<T>();
      });
      return true;
    }
    return false;
  }
  if constexpr (F::floating_only) {
    visit_floating(t, op, run);
  } else {
    visit_dtype(t, [&]<class T>() {
      if constexpr (std::is_same_v<T, bool>) detail::fail("fx::", op, ": not defined for bool");
      else run.template operator()<T>();
    });
  }
  return true;
}

template <class F>
bool unary(const KernelCall& c) {
  const Tensor& x = c.in[0];
  auto run = [&]<class T>() {
    const T* xp = x.data<T>();
    T* op = c.out.data<T>();
    F f{};
    if constexpr (requires { f.s; }) f.s = c.attrs.get<ScalarAttrs>().s;
    for (int64_t i = 0, n = x.numel(); i < n; ++i) op[i] = f(xp[offset_of(i, x)]);
  };
  return run_for<F>(x.dtype(), c.prim.name, run);
}

// (dy, a, b) -> [dy * b | dy * a] (ops/fused.hpp).
bool mul_backward(const KernelCall& c) {
  const Tensor &dy = c.in[0], &a = c.in[1], &b = c.in[2];
  auto run = [&]<class T>() {
    const T *gp = dy.data<T>(), *ap = a.data<T>(), *bp = b.data<T>();
    const int64_t n = dy.numel();
    T* da = c.out.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      const T g = gp[offset_of(i, dy)];
      da[i] = g * bp[offset_of(i, b)];
      da[n + i] = g * ap[offset_of(i, a)];
    }
  };
  return run_for<math::Mul>(dy.dtype(), c.prim.name, run);
}

template <class F>
bool binary(const KernelCall& c) {
  const Tensor &a = c.in[0], &b = c.in[1];
  auto run = [&]<class T>() {
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    T* op = c.out.data<T>();
    for (int64_t i = 0, n = c.out.numel(); i < n; ++i)
      op[i] = F{}(ap[offset_of(i, a)], bp[offset_of(i, b)]);
  };
  return run_for<F>(a.dtype(), c.prim.name, run);
}

template <class F>
bool compare(const KernelCall& c) {
  const Tensor &a = c.in[0], &b = c.in[1];
  if (is_complex(a.dtype())) return false;  // complex numbers are not ordered
  visit_dtype(a.dtype(), [&]<class T>() {
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    bool* op = c.out.data<bool>();
    for (int64_t i = 0, n = c.out.numel(); i < n; ++i)
      op[i] = F{}(ap[offset_of(i, a)], bp[offset_of(i, b)]);
  });
  return true;
}

// x -> bool for every dtype, complex and bool included (the finiteness tests).
template <class F>
bool predicate(const KernelCall& c) {
  const Tensor& x = c.in[0];
  visit_dtype_all(x.dtype(), [&]<class T>() {
    const T* xp = x.data<T>();
    bool* op = c.out.data<bool>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) op[i] = F{}(xp[offset_of(i, x)]);
  });
  return true;
}

bool where(const KernelCall& c) {
  const Tensor &m = c.in[0], &a = c.in[1], &b = c.in[2];
  visit_dtype_all(a.dtype(), [&]<class T>() {
    const bool* mp = m.data<bool>();
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    T* op = c.out.data<T>();
    for (int64_t i = 0, n = c.out.numel(); i < n; ++i)
      op[i] = mp[offset_of(i, m)] ? ap[offset_of(i, a)] : bp[offset_of(i, b)];
  });
  return true;
}

// copy and astype: out (contiguous, out's dtype) = x converted.
// Complex to real is refused (the ops layer asks for real() or abs() instead).
bool convert(const KernelCall& c) {
  const Tensor& x = c.in[0];
  if (is_complex(x.dtype()) && !is_complex(c.out.dtype())) return false;
  visit_dtype_all(x.dtype(), [&]<class S>() {
    visit_dtype_all(c.out.dtype(), [&]<class D>() {
      const S* xp = x.data<S>();
      D* op = c.out.data<D>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) {
        if constexpr (is_complex_v<D> && !is_complex_v<S>)
          op[i] = D(typename D::value_type(xp[offset_of(i, x)]));
        else if constexpr (is_complex_v<D> || !is_complex_v<S>)
          op[i] = static_cast<D>(xp[offset_of(i, x)]);
      }
    });
  });
  return true;
}

}  // namespace

void register_reference_elementwise() {
  constexpr Device cpu = Device::cpu;
  constexpr int r = kReferenceRank;
  register_kernel(neg_p, cpu, r, unary<math::Neg>);
  register_kernel(relu_p, cpu, r, unary<math::Relu>);
  // The math functions of the table, their fused pullbacks, and the binary ones.
#define FX_REGISTER_UNARY(name)                                           \
  register_kernel(name##_p, cpu, r, unary<math::Value<elem::name##_op>>); \
  register_kernel(name##_backward_p, cpu, r, binary<math::Backward<elem::name##_op>>);
#define FX_REGISTER_BINARY(name) \
  register_kernel(name##_p, cpu, r, binary<math::BinaryValue<elem::name##_op>>);
  FX_ELEMENTWISE_UNARY(FX_REGISTER_UNARY)
  FX_ELEMENTWISE_BINARY(FX_REGISTER_BINARY)
#undef FX_REGISTER_UNARY
#undef FX_REGISTER_BINARY
  register_kernel(square_p, cpu, r, unary<math::Square>);
  register_kernel(abs_p, cpu, r, unary<math::Abs>);
  register_kernel(sign_p, cpu, r, unary<math::Sign>);
  register_kernel(add_scalar_p, cpu, r, unary<math::AddScalar>);
  register_kernel(mul_scalar_p, cpu, r, unary<math::MulScalar>);
  register_kernel(pow_scalar_p, cpu, r, unary<math::PowScalar>);
  register_kernel(add_p, cpu, r, binary<math::Add>);
  register_kernel(sub_p, cpu, r, binary<math::Sub>);
  register_kernel(mul_p, cpu, r, binary<math::Mul>);
  register_kernel(div_p, cpu, r, binary<math::Div>);
  register_kernel(pow_p, cpu, r, binary<math::Pow>);
  register_kernel(maximum_p, cpu, r, binary<math::Maximum>);
  register_kernel(minimum_p, cpu, r, binary<math::Minimum>);
  register_kernel(eq_p, cpu, r, compare<math::Eq>);
  register_kernel(ne_p, cpu, r, compare<math::Ne>);
  register_kernel(lt_p, cpu, r, compare<math::Lt>);
  register_kernel(le_p, cpu, r, compare<math::Le>);
  register_kernel(gt_p, cpu, r, compare<math::Gt>);
  register_kernel(ge_p, cpu, r, compare<math::Ge>);
  register_kernel(isnan_p, cpu, r, predicate<math::IsNan>);
  register_kernel(isinf_p, cpu, r, predicate<math::IsInf>);
  register_kernel(isfinite_p, cpu, r, predicate<math::IsFinite>);
  register_kernel(where_p, cpu, r, where);
  register_kernel(astype_p, cpu, r, convert);
  register_kernel(copy_p, cpu, r, convert);
  register_kernel(mul_backward_p, cpu, r, mul_backward);
  register_kernel(square_backward_p, cpu, r, binary<math::SquareBackward>);
  register_kernel(relu_backward_p, cpu, r, binary<math::ReluBackward>);
}

}  // namespace fx::backend
