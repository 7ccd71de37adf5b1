// One flat vector for a structure of tensors, and back: the solvers integrate a single vector,
// whatever the user's state or parameters look like (a tensor, an FX_FIELDS struct, a model).
//
//   struct Pendulum { fx::Tensor angle, speed; FX_FIELDS(angle, speed) };
//   Pendulum s{fx::zeros({3}, fx::f64), fx::ones({3}, fx::f64)};
//   fx::sci::Flattener<Pendulum> layout(s);     // remembers the leaves' shapes
//   fx::Tensor v = layout.flatten(s);           // (6,) f64: angle then speed (differentiable)
//   Pendulum back = layout.unflatten(v * 2.0);  // views of the vector, reshaped
//
// Leaves are visited in fx::for_each_tensor order; undefined leaves (a Dense without bias) are
// skipped and stay undefined. Every leaf must have the dtype of the first: a flat vector has one.
// Both directions are ordinary ops (reshape, concat, slice), so gradients pass through them and a
// leaf a computation does not read gets an exactly zero gradient.
#pragma once
#include <cstdint>
#include <vector>

#include "fluxion/core/fields.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::sci {

template <class T>
class Flattener {
 public:
  // The layout of x, and the dtype an empty structure (no tensor leaves) flattens to.
  explicit Flattener(const T& x, DType empty_dtype = f64) : skeleton_(x), dtype_(empty_dtype) {
    bool first = true;
    zip_tensors(
        [&](Tensor& t) {
          defined_.push_back(t.defined());
          if (t.defined()) {
            if (first) dtype_ = t.dtype();
            first = false;
            FX_CHECK(t.dtype() == dtype_, "fx::sci::flatten: leaves of dtypes ", dtype_name(dtype_),
                     " and ", dtype_name(t.dtype()), " cannot share one vector");
            shapes_.push_back(t.shape());
            size_ += t.numel();
          }
          t = Tensor();  // the skeleton holds no data: unflatten fills every leaf
        },
        skeleton_);
  }

  int64_t size() const { return size_; }
  DType dtype() const { return dtype_; }

  // The leaves of x (laid out like the constructor's argument) as one 1-d vector.
  template <class U>
  Tensor flatten(const U& x) const {
    std::vector<Tensor> parts;
    size_t k = 0;
    zip_tensors(
        [&](const Tensor& t) {
          if (!t.defined()) return;
          FX_CHECK(k < shapes_.size() && t.shape() == shapes_[k], "fx::sci::flatten: leaf ", k,
                   " has shape ", t.shape(), ", the layout expects ",
                   k < shapes_.size() ? shapes_[k] : Shape{});
          ++k;
          parts.push_back(reshape(t, {-1}));
        },
        const_cast<U&>(x));  // zip_tensors walks mutable references; nothing is written
    FX_CHECK(k == shapes_.size(), "fx::sci::flatten: ", k, " leaves, the layout has ",
             shapes_.size());
    if (parts.empty()) return zeros({0}, dtype_);
    if (parts.size() == 1) return parts[0];
    return concat(parts, 0);
  }

  // The structure with each leaf a reshaped slice of v (v: 1-d, size() elements).
  T unflatten(const Tensor& v) const {
    FX_CHECK(v.ndim() == 1 && v.size(0) == size_, "fx::sci::unflatten: vector of shape ", v.shape(),
             ", the layout holds ", size_, " elements");
    T x = skeleton_;
    size_t leaf = 0, k = 0;
    int64_t at = 0;
    zip_tensors(
        [&](Tensor& t) {
          if (!defined_[leaf++]) return;
          const Shape& s = shapes_[k++];
          int64_t n = s.numel();
          t = reshape(slice(v, 0, at, at + n), s);
          at += n;
        },
        x);
    return x;
  }

 private:
  T skeleton_;
  std::vector<bool> defined_;  // per leaf in traversal order
  std::vector<Shape> shapes_;  // per defined leaf
  int64_t size_ = 0;
  DType dtype_;
};

}  // namespace fx::sci
