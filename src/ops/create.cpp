// Tensor creation: constants, ranges, copies from C++ containers, seeded random numbers.
#include "fluxion/ops/create.hpp"

#include <bit>
#include <cmath>
#include <cstring>

#include "fluxion/ops/device.hpp"
#include "fluxion/ops/primitive.hpp"
#include "fluxion/ops/view.hpp"

namespace fx {

Tensor empty(const Shape& shape, DType dtype, Device device) {
  return Tensor::empty(shape, dtype, device);
}

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  if (device != Device::cpu) {
    if (!device.has_data()) {
      Tensor t = Tensor::empty(shape, dtype, device);
      if (detail::tracing_depth != 0) detail::trace_fill(t, value);
      return t;
    }
    return to(full(shape, value, dtype), device);
  }
  Tensor t = Tensor::empty(shape, dtype);
  visit_dtype_all(dtype, [&]<class T>() {
    T* p = t.data<T>();
    T v = static_cast<T>(value);
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = v;
  });
  return t;
}

Tensor zeros(const Shape& shape, DType dtype, Device device) {
  if (device != Device::cpu) return full(shape, 0, dtype, device);
  Tensor t = Tensor::empty(shape, dtype);
  std::memset(t.raw_data(), 0, size_t(t.numel()) * itemsize(dtype));
  return t;
}
Tensor ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1, dtype, device);
}
Tensor scalar(double value, DType dtype, Device device) {
  return full(Shape{}, value, dtype, device);
}
Tensor zeros_like(const Tensor& x) { return zeros(x.shape(), x.dtype(), x.device()); }
Tensor ones_like(const Tensor& x) { return ones(x.shape(), x.dtype(), x.device()); }
Tensor full_like(const Tensor& x, double value) {
  return full(x.shape(), value, x.dtype(), x.device());
}
Tensor expanded_zeros_like(const Tensor& x) {
  return expand(scalar(0, x.dtype(), x.device()), x.shape());
}

Tensor arange(int64_t n, DType dtype) { return arange(0, double(n), 1, dtype); }

Tensor arange(double start, double stop, double step, DType dtype) {
  FX_CHECK(step != 0, "fx::arange: step is zero");
  int64_t n = std::max<int64_t>(0, int64_t(std::ceil((stop - start) / step)));
  Tensor t = Tensor::empty(Shape{n}, dtype);
  visit_dtype(dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + double(i) * step);
  });
  return t;
}

Tensor tensor(std::initializer_list<double> values, DType dtype) {
  Tensor t = Tensor::empty(Shape{int64_t(values.size())}, dtype);
  visit_dtype_all(dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (double v : values) *p++ = static_cast<T>(v);
  });
  return t;
}

template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
  FX_CHECK(int64_t(values.size()) == shape.numel(), "fx::from_vector: ", values.size(),
           " values for shape ", shape);
  Tensor t = Tensor::empty(shape, dtype_of<T>);
  T* p = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}

template <class T>
std::vector<T> to_vector(const Tensor& x) {
  FX_CHECK(x.defined(), "fx::to_vector: undefined tensor");
  x.check_has_data("fx::to_vector");
  FX_CHECK(is_complex_v<T> || !is_complex(x.dtype()), "fx::to_vector: tensor is ",
           dtype_name(x.dtype()), " ", x.shape(),
           "; read it as std::complex<double>, or take fx::real / fx::imag first");
  std::vector<T> out(size_t(x.numel()));
  visit_dtype_all(x.dtype(), [&]<class S>() {
    if constexpr (is_complex_v<S> && !is_complex_v<T>) {
      return;  // rejected above
    } else {
      const S* base = static_cast<const S*>(x.storage()->data) + x.offset();
      const Shape& s = x.shape();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) {
        int64_t rem = i, off = 0;
        for (int d = s.size() - 1; d >= 0; --d) {
          off += (rem % s[d]) * x.stride(d);
          rem /= s[d];
        }
        if constexpr (is_complex_v<T> && !is_complex_v<S>)
          out[size_t(i)] = T(static_cast<typename T::value_type>(base[off]));
        else out[size_t(i)] = static_cast<T>(base[off]);
      }
    }
  });
  return out;
}

#define FX_INSTANTIATE(T)                                              \
  template Tensor from_vector<T>(const std::vector<T>&, const Shape&); \
  template std::vector<T> to_vector<T>(const Tensor&);
FX_INSTANTIATE(float)
FX_INSTANTIATE(double)
FX_INSTANTIATE(int32_t)
FX_INSTANTIATE(int64_t)
FX_INSTANTIATE(bool)
FX_INSTANTIATE(std::complex<float>)
FX_INSTANTIATE(std::complex<double>)
#undef FX_INSTANTIATE

// ---- random numbers: xoshiro256** seeded through splitmix64.
namespace {
uint64_t splitmix(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

void Generator::reseed(uint64_t seed) {
  for (auto& s : s_) s = splitmix(seed);
  has_spare_ = false;
}

Generator::State Generator::state() const {
  return {s_[0], s_[1], s_[2], s_[3], uint64_t(has_spare_), std::bit_cast<uint64_t>(spare_)};
}

void Generator::set_state(const State& st) {
  FX_CHECK(st[0] | st[1] | st[2] | st[3], "fx::Generator::set_state: the all-zero xoshiro state ",
           "never leaves zero");
  FX_CHECK(st[4] <= 1, "fx::Generator::set_state: spare flag ", st[4], " is neither 0 nor 1");
  for (int i = 0; i < 4; ++i) s_[i] = st[size_t(i)];
  has_spare_ = st[4] == 1;
  spare_ = std::bit_cast<double>(st[5]);
}

uint64_t Generator::next() {
  uint64_t r = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return r;
}

double Generator::uniform() { return double(next() >> 11) * 0x1.0p-53; }

double Generator::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  // Box-Muller; 1 - u keeps the log argument in (0, 1].
  double u = 1.0 - uniform(), v = uniform();
  double r = std::sqrt(-2.0 * std::log(u)), a = 2.0 * M_PI * v;
  spare_ = r * std::sin(a);
  has_spare_ = true;
  return r * std::cos(a);
}

uint64_t Generator::below(uint64_t n) {
  FX_CHECK(n > 0, "fx::Generator::below: n is zero");
  // Rejection sampling removes modulo bias.
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t r;
  do r = next();
  while (r >= limit);
  return r % n;
}

Generator& default_generator() {
  thread_local Generator g(0x5eed);
  return g;
}
void manual_seed(uint64_t seed) { default_generator().reseed(seed); }

namespace {
// Complex dtypes draw the real and imaginary parts independently, each scaled by complex_scale.
template <class Draw>
Tensor random_fill(const Shape& shape, DType dtype, const char* op, Draw&& draw,
                   double complex_scale = 1.0) {
  Tensor t = Tensor::empty(shape, dtype);
  if (is_complex(dtype)) {
    const double scale = complex_scale;
    visit_dtype_all(dtype, [&]<class T>() {
      if constexpr (is_complex_v<T>) {
        T* p = t.data<T>();
        for (int64_t i = 0, n = t.numel(); i < n; ++i) {
          double re = draw(), im = draw();
          p[i] = T(typename T::value_type(scale * re), typename T::value_type(scale * im));
        }
      }
    });
    return t;
  }
  visit_floating(dtype, op, [&]<class T>() {
    T* p = t.data<T>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = static_cast<T>(draw());
  });
  return t;
}
}  // namespace

Tensor rand(const Shape& shape, Generator& gen, DType dtype) {
  return random_fill(shape, dtype, "fx::rand", [&] { return gen.uniform(); });
}
Tensor randn(const Shape& shape, Generator& gen, DType dtype) {
  // A standard complex normal has E|z|^2 = 1: each part has variance 1/2.
  return random_fill(
      shape, dtype, "fx::randn", [&] { return gen.normal(); }, M_SQRT1_2);
}
Tensor uniform(const Shape& shape, double lo, double hi, Generator& gen, DType dtype) {
  return random_fill(shape, dtype, "fx::uniform", [&] { return lo + (hi - lo) * gen.uniform(); });
}
Tensor rand(const Shape& shape, DType dtype) { return rand(shape, default_generator(), dtype); }
Tensor randn(const Shape& shape, DType dtype) { return randn(shape, default_generator(), dtype); }

Tensor randperm(int64_t n, Generator& gen) {
  Tensor t = arange(n, i64);
  int64_t* p = t.data<int64_t>();
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[gen.below(uint64_t(i + 1))]);
  return t;
}

}  // namespace fx
