// Anomaly mode: find the first operation that makes a NaN or an infinity, forward or backward
// (as torch.autograd.detect_anomaly does for the backward pass).
//
//   fx::Tensor x = fx::tensor({0.0, 1.0, 4.0}, fx::f64);
//   {
//     fx::detect_anomaly anomaly;                 // this thread, until the scope ends
//     auto g = fx::gradient([](const fx::Tensor& x) { return fx::sum(fx::sqrt(x)); }, x);
//   }  // x holds a 0, so this throws: "fx::detect_anomaly: backward (the pullback of
//      // 'sqrt') gave Inf at (0,) in the cotangent of input 0 (3,) f64 from a finite
//      // cotangent of its output"
//
// While a detect_anomaly lives, every primitive's forward output and every cotangent a pullback
// gives is checked, and the first that holds a NaN or an infinity throws fx::Error naming the
// primitive, whether forward or backward, the shapes and dtypes, and where the first bad element
// is. An input that already holds one is named as such (the data, not the op, is then at fault).
// A pullback's own ops are not checked one by one: its results are, so the error names the
// primitive being differentiated rather than a multiply inside its rule. Checking costs a pass
// over every result, so this is for debugging; when off, the cost is one predictable branch per
// op. Scopes nest (detect_anomaly(false) turns checks off inside one) and are per thread;
// fx::train::data_parallel_withgradient hands the caller's setting to its threads.
#pragma once
#include "fluxion/ops/primitive.hpp"

namespace fx {

class detect_anomaly {
 public:
  explicit detect_anomaly(bool on = true) : saved_(detail::anomaly_checks) {
    detail::anomaly_checks = on;
  }
  ~detect_anomaly() { detail::anomaly_checks = saved_; }
  detect_anomaly(const detect_anomaly&) = delete;
  detect_anomaly& operator=(const detect_anomaly&) = delete;

 private:
  bool saved_;
};

// Whether anomaly checks are on for this thread.
inline bool anomaly_detection_enabled() { return detail::anomaly_checks; }

}  // namespace fx
