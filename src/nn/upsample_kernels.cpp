// Linear interpolation along one axis for fx::nn::Upsample's bilinear mode
// (fluxion/nn/upsample.hpp), forward and its transpose. Composed, each axis was two index_selects
// and three elementwise ops forward and a scatter-add back, 1.9x libtorch's upsample_bilinear2d
// (bench/layer_table); here each axis is one pass reading x and writing y.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "fluxion/nn/upsample.hpp"
#include "fluxion/ops/create.hpp"
#include "fluxion/ops/view.hpp"

namespace fx::nn::detail {
namespace {

// PyTorch's align_corners = false sampling, as Upsample::linear_axis's composed form: output o
// reads inputs lo[o] and hi[o] with weight w[o] on hi.
struct Taps {
  std::vector<int64_t> lo, hi;
  std::vector<double> w;
  Taps(int64_t in, int64_t s) {
    const int64_t out = in * s;
    lo.resize(size_t(out)), hi.resize(size_t(out)), w.resize(size_t(out));
    for (int64_t o = 0; o < out; ++o) {
      const double src = std::max((double(o) + 0.5) / double(s) - 0.5, 0.0);
      const int64_t l = std::min(int64_t(std::floor(src)), in - 1);
      lo[size_t(o)] = l;
      hi[size_t(o)] = std::min(l + 1, in - 1);
      w[size_t(o)] = src - double(l);
    }
  }
};

// x as (outer, in, inner) -> y (outer, out, inner).
template <class T>
void forward_kernel(const T* x, T* y, int64_t outer, int64_t in, int64_t inner, const Taps& t) {
  const int64_t out = int64_t(t.lo.size());
  if (inner == 1) {  // the last axis: a gather along each row
    std::vector<T> w(t.w.begin(), t.w.end());
#pragma omp parallel for schedule(static) if (outer * out >= (int64_t(1) << 15))
    for (int64_t b = 0; b < outer; ++b) {
      const T* xb = x + b * in;
      T* yb = y + b * out;
      for (int64_t o = 0; o < out; ++o) {
        const T a = xb[t.lo[size_t(o)]], c = xb[t.hi[size_t(o)]];
        yb[o] = a + (c - a) * w[size_t(o)];
      }
    }
    return;
  }
#pragma omp parallel for schedule(static) if (outer * out * inner >= (int64_t(1) << 15))
  for (int64_t b = 0; b < outer; ++b) {
    const T* xb = x + b * in * inner;
    T* yb = y + b * out * inner;
    for (int64_t o = 0; o < out; ++o) {
      const T w1 = T(t.w[size_t(o)]);
      const T* a = xb + t.lo[size_t(o)] * inner;
      const T* c = xb + t.hi[size_t(o)] * inner;
      T* yr = yb + o * inner;
      for (int64_t i = 0; i < inner; ++i) yr[i] = a[i] + (c[i] - a[i]) * w1;
    }
  }
}

// The transpose: dx[lo] += (1 - w) dy, dx[hi] += w dy.
template <class T>
void backward_kernel(const T* dy, T* dx, int64_t outer, int64_t in, int64_t inner, const Taps& t) {
  const int64_t out = int64_t(t.lo.size());
  if (inner == 1) {  // the last axis: a scatter along each row
    std::vector<T> w(t.w.begin(), t.w.end());
#pragma omp parallel for schedule(static) if (outer * out >= (int64_t(1) << 15))
    for (int64_t b = 0; b < outer; ++b) {
      T* db = dx + b * in;
      std::fill(db, db + in, T(0));
      const T* gb = dy + b * out;
      for (int64_t o = 0; o < out; ++o) {
        const T w1 = w[size_t(o)];
        db[t.lo[size_t(o)]] += (T(1) - w1) * gb[o];
        db[t.hi[size_t(o)]] += w1 * gb[o];
      }
    }
    return;
  }
#pragma omp parallel for schedule(static) if (outer * out * inner >= (int64_t(1) << 15))
  for (int64_t b = 0; b < outer; ++b) {
    T* db = dx + b * in * inner;
    std::fill(db, db + in * inner, T(0));
    const T* gb = dy + b * out * inner;
    for (int64_t o = 0; o < out; ++o) {
      const T w1 = T(t.w[size_t(o)]), w0 = T(1) - w1;
      T* a = db + t.lo[size_t(o)] * inner;
      T* c = db + t.hi[size_t(o)] * inner;
      const T* g = gb + o * inner;
      for (int64_t i = 0; i < inner; ++i) a[i] += w0 * g[i];
      for (int64_t i = 0; i < inner; ++i) c[i] += w1 * g[i];
    }
  }
}

void split(const Shape& s, int64_t axis, int64_t& outer, int64_t& inner) {
  outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (int64_t d = axis + 1; d < int64_t(s.size()); ++d) inner *= s[d];
}

}  // namespace

Tensor upsample_linear_axis_forward(const Tensor& x, int64_t axis, int64_t scale) {
  Tensor xc = contiguous(x);
  int64_t outer, inner;
  split(x.shape(), axis, outer, inner);
  const int64_t in = x.shape()[axis];
  Shape ys = x.shape();
  ys[axis] = in * scale;
  Tensor y = empty(ys, x.dtype());
  const Taps t(in, scale);
  if (x.dtype() == f64) forward_kernel(xc.data<double>(), y.data<double>(), outer, in, inner, t);
  else forward_kernel(xc.data<float>(), y.data<float>(), outer, in, inner, t);
  return y;
}

Tensor upsample_linear_axis_backward(const Tensor& dy, int64_t axis, int64_t scale,
                                     const Shape& x_shape) {
  Tensor g = contiguous(dy);
  int64_t outer, inner;
  split(x_shape, axis, outer, inner);
  const int64_t in = x_shape[axis];
  Tensor dx = empty(x_shape, dy.dtype());
  const Taps t(in, scale);
  if (dy.dtype() == f64) backward_kernel(g.data<double>(), dx.data<double>(), outer, in, inner, t);
  else backward_kernel(g.data<float>(), dx.data<float>(), outer, in, inner, t);
  return dx;
}

}  // namespace fx::nn::detail

namespace fx::nn::detail {
namespace {

// y[n, c, h r + i, w r + j] = x[n, c r^2 + i r + j, h, w] (unshuffle: the other way round).
// Each output row of W r interleaves r input rows of W, which stay in cache; the permuted view
// that the composed form copies has stride-1 axes of length r, far slower (1.0-1.2x libtorch).
template <class T>
void shuffle_kernel(const T* x, T* y, int64_t n, int64_t c, int64_t h, int64_t w, int64_t r,
                    bool inverse) {
  const int64_t plane = h * w;
#pragma omp parallel for collapse(2) \
    schedule(static) if (n * c * r * r * plane >= (int64_t(1) << 15))
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t base = (b * c + ch) * r * r * plane;  // the same offset in x and y
      for (int64_t hh = 0; hh < h; ++hh)
        for (int64_t i = 0; i < r; ++i) {
          const int64_t row = base + (hh * r + i) * w * r;  // y's row h r + i
          for (int64_t j = 0; j < r; ++j) {
            const int64_t src = base + (i * r + j) * plane + hh * w;  // x's channel, row h
            if (!inverse)
              for (int64_t ww = 0; ww < w; ++ww) y[row + ww * r + j] = x[src + ww];
            else
              for (int64_t ww = 0; ww < w; ++ww) y[src + ww] = x[row + ww * r + j];
          }
        }
    }
}

}  // namespace

Tensor pixel_shuffle_kernel(const Tensor& x, int64_t r, bool inverse) {
  Tensor xc = contiguous(x);
  const Shape& s = x.shape();
  const int64_t n = s[0];
  // Forward: x (N, C r^2, H, W) -> (N, C, H r, W r); inverse: x (N, C, H r, W r) -> (N, C r^2, H, W).
  const int64_t c = inverse ? s[1] : s[1] / (r * r), h = inverse ? s[2] / r : s[2],
                w = inverse ? s[3] / r : s[3];
  Tensor y =
      inverse ? empty({n, c * r * r, h, w}, x.dtype()) : empty({n, c, h * r, w * r}, x.dtype());
  if (x.dtype() == f64) shuffle_kernel(xc.data<double>(), y.data<double>(), n, c, h, w, r, inverse);
  else shuffle_kernel(xc.data<float>(), y.data<float>(), n, c, h, w, r, inverse);
  return y;
}

}  // namespace fx::nn::detail

namespace fx::nn::detail {
namespace {

// Nearest upsampling with every spatial axis at once, over x as (outer, D, H, W) with scales
// (sd, sh, sw) (1-d and 2-d inputs pad the leading spatial axes with size 1, scale 1). Each input
// row of W is widened once into y's first copy of it and that row is then copied to the other
// sd sh - 1 places; the backward reads each block of dy once. Composed (a contiguous(expand) per
// axis) the forward writes every intermediate and the backward reduces one axis at a time.
struct Geometry {
  int64_t outer = 1, d = 1, h = 1, w = 1, sd = 1, sh = 1, sw = 1;
  Geometry(const Shape& x, const std::vector<int64_t>& scale) {
    const int64_t k = int64_t(scale.size());
    outer = x[0] * x[1];
    int64_t* dims[3] = {&d, &h, &w};
    int64_t* scales[3] = {&sd, &sh, &sw};
    for (int64_t a = 0; a < k; ++a) {
      *dims[3 - k + a] = x[2 + a];
      *scales[3 - k + a] = scale[size_t(a)];
    }
  }
  int64_t rows() const { return outer * d * h; }  // input rows of W
  int64_t out_w() const { return w * sw; }
  int64_t out_h() const { return h * sh; }
  // The offset in y of the first output row that input row r is copied to.
  int64_t first_out_row(int64_t r) const {
    const int64_t b = r / (d * h), dd = (r / h) % d, hh = r % h;
    return ((b * d * sd + dd * sd) * out_h() + hh * sh) * out_w();
  }
  bool threaded() const { return rows() * out_w() * sh * sd >= (int64_t(1) << 15); }
};

template <class T>
void nearest_forward_kernel(const T* x, T* y, const Geometry& g) {
  const int64_t wo = g.out_w(), ho = g.out_h();
#pragma omp parallel for schedule(static) if (g.threaded())
  for (int64_t r = 0; r < g.rows(); ++r) {
    const T* xr = x + r * g.w;
    T* first = y + g.first_out_row(r);
    if (g.sw == 2) {
      for (int64_t i = 0; i < g.w; ++i) first[2 * i] = first[2 * i + 1] = xr[i];
    } else {
      for (int64_t i = 0; i < g.w; ++i)
        for (int64_t j = 0; j < g.sw; ++j) first[i * g.sw + j] = xr[i];
    }
    for (int64_t a = 0; a < g.sd; ++a)
      for (int64_t c = 0; c < g.sh; ++c)
        if (a || c) std::copy(first, first + wo, first + (a * ho + c) * wo);
  }
}

// dx[b, d, h, w] = the sum of dy over the sd x sh x sw block that x's element was copied to.
template <class T>
void nearest_backward_kernel(const T* dy, T* dx, const Geometry& g) {
  const int64_t wo = g.out_w(), ho = g.out_h();
#pragma omp parallel for schedule(static) if (g.threaded())
  for (int64_t r = 0; r < g.rows(); ++r) {
    T* dr = dx + r * g.w;
    const T* first = dy + g.first_out_row(r);
    for (int64_t a = 0; a < g.sd; ++a)
      for (int64_t c = 0; c < g.sh; ++c) {
        const T* row = first + (a * ho + c) * wo;
        const bool add = a || c;
        if (g.sw == 2) {
          for (int64_t i = 0; i < g.w; ++i)
            dr[i] = (add ? dr[i] : T(0)) + (row[2 * i] + row[2 * i + 1]);
        } else {
          for (int64_t i = 0; i < g.w; ++i) {
            T s = add ? dr[i] : T(0);
            for (int64_t j = 0; j < g.sw; ++j) s += row[i * g.sw + j];
            dr[i] = s;
          }
        }
      }
  }
}

}  // namespace

Tensor upsample_nearest_forward(const Tensor& x, const std::vector<int64_t>& scale) {
  Tensor xc = contiguous(x);
  const Geometry g(x.shape(), scale);
  Shape ys = x.shape();
  for (size_t a = 0; a < scale.size(); ++a) ys[2 + int64_t(a)] *= scale[a];
  Tensor y = empty(ys, x.dtype());
  if (x.dtype() == f64) nearest_forward_kernel(xc.data<double>(), y.data<double>(), g);
  else nearest_forward_kernel(xc.data<float>(), y.data<float>(), g);
  return y;
}

Tensor upsample_nearest_backward(const Tensor& dy, const std::vector<int64_t>& scale,
                                 const Shape& x_shape) {
  Tensor gc = contiguous(dy);
  const Geometry g(x_shape, scale);
  Tensor dx = empty(x_shape, dy.dtype());
  if (dy.dtype() == f64) nearest_backward_kernel(gc.data<double>(), dx.data<double>(), g);
  else nearest_backward_kernel(gc.data<float>(), dx.data<float>(), g);
  return dx;
}

}  // namespace fx::nn::detail
