// Making tensors: constants, ranges, copies of C++ data, and seeded random numbers.
//
//   fx::Generator gen(42);
//   auto z = fx::zeros({2, 3});                      // f32 zeros
//   auto x = fx::tensor({1.0, 2.0, 3.0}, fx::f64);   // from a list
//   auto w = fx::randn({256, 784}, gen);             // reproducible: the same gen seed, the same w
//   auto i = fx::arange(10, fx::i64);
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "fluxion/core/tensor.hpp"

namespace fx {

// On Device::meta these allocate nothing (shape and dtype only); on another device the values
// are made on the host and moved there (fx::to).
Tensor empty(const Shape& shape, DType dtype = f32, Device device = Device::cpu);
Tensor full(const Shape& shape, double value, DType dtype = f32, Device device = Device::cpu);
Tensor zeros(const Shape& shape, DType dtype = f32, Device device = Device::cpu);
Tensor ones(const Shape& shape, DType dtype = f32, Device device = Device::cpu);
Tensor scalar(double value, DType dtype = f32, Device device = Device::cpu);  // 0-d
// On x's device.
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
Tensor full_like(const Tensor& x, double value);
// A zero of x's shape that allocates nothing: a 0-d zero expanded with stride 0 (read-only).
Tensor expanded_zeros_like(const Tensor& x);
Tensor arange(int64_t n, DType dtype = i64);
Tensor arange(double start, double stop, double step = 1, DType dtype = f32);

// Copies `values` into a new tensor of the given shape (default: 1-d).
Tensor tensor(std::initializer_list<double> values, DType dtype = f32);
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape);
template <class T>
Tensor from_vector(const std::vector<T>& values) {
  return from_vector(values, Shape{int64_t(values.size())});
}
// The elements of x in row-major order, converted to T.
template <class T>
std::vector<T> to_vector(const Tensor& x);

// A seeded random stream (xoshiro256**). Every random function takes one; the overloads without
// use the thread's default generator, which fx::manual_seed resets.
class Generator {
 public:
  explicit Generator(uint64_t seed = 0x5eed) { reseed(seed); }
  void reseed(uint64_t seed);
  uint64_t next();             // 64 random bits
  double uniform();            // [0, 1)
  double normal();             // standard normal
  uint64_t below(uint64_t n);  // uniform integer in [0, n)

  // The stream's whole position (xoshiro words, then the Box-Muller spare flag and its bits), so
  // a checkpoint can resume it: after set_state(g.state()) both draw the same numbers.
  using State = std::array<uint64_t, 6>;
  State state() const;
  void set_state(const State& state);  // fx::Error for a state no generator can be in

 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0;
};
Generator& default_generator();
void manual_seed(uint64_t seed);

Tensor rand(const Shape& shape, Generator& gen, DType dtype = f32);   // uniform [0, 1)
Tensor randn(const Shape& shape, Generator& gen, DType dtype = f32);  // standard normal
Tensor uniform(const Shape& shape, double lo, double hi, Generator& gen, DType dtype = f32);
Tensor rand(const Shape& shape, DType dtype = f32);
Tensor randn(const Shape& shape, DType dtype = f32);
// A random permutation of 0..n-1 (i64).
Tensor randperm(int64_t n, Generator& gen);

}  // namespace fx
