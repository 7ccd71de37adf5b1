// Anomaly mode's checks (fx::detect_anomaly, fluxion/ad/anomaly.hpp): bind calls
// check_forward_anomaly after each primitive's forward, and the reverse sweep
// check_cotangent_anomaly and check_pullback_anomaly around each pullback, only while the
// thread-local flag is set.
#include <sstream>
#include <string>

#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/primitive.hpp"
#include "fluxion/ops/reduce.hpp"

namespace fx::detail {

thread_local constinit bool anomaly_checks = false;

namespace {

// The checks run public ops (isfinite, any, ...), whose own forwards must not be checked again.
struct ChecksOff {
  bool saved = anomaly_checks;
  ChecksOff() { anomaly_checks = false; }
  ~ChecksOff() { anomaly_checks = saved; }
};

bool holds_nonfinite(const Tensor& t) {
  return t.defined() && is_inexact(t.dtype()) && t.numel() > 0 && !all(isfinite(t)).item<bool>();
}

// "NaN", "Inf" or "NaN and Inf", for a tensor that holds_nonfinite.
std::string kinds(const Tensor& t) {
  const bool nan = any(isnan(t)).item<bool>(), inf = any(isinf(t)).item<bool>();
  return nan && inf ? "NaN and Inf" : nan ? "NaN" : "Inf";
}

// "NaN at (1, 0)": the kinds, and where the first non-finite element is in row-major order.
std::string first_nonfinite(const Tensor& t) {
  const Tensor finite = isfinite(t);  // a fresh contiguous bool tensor
  const bool* p = finite.data<bool>();
  int64_t k = 0;
  while (k < finite.numel() && p[k]) ++k;
  Shape at = t.shape();  // overwritten with the coordinates of element k
  for (int d = t.ndim() - 1; d >= 0; --d) {
    at[d] = k % t.shape()[d];
    k /= t.shape()[d];
  }
  std::ostringstream os;
  os << kinds(t);
  if (t.ndim() > 0) os << " at " << at;
  return os.str();
}

// "(3, 4) f32" and, for a tensor holding NaN or Inf, what and where.
std::string describe(const Tensor& t) {
  std::ostringstream os;
  os << t.shape() << " " << dtype_name(t.dtype());
  if (holds_nonfinite(t)) os << " holding " << first_nonfinite(t);
  return os.str();
}

}  // namespace

void check_forward_anomaly(const Primitive& p, std::span<const Tensor> in, const Tensor& out) {
  if (!out.defined() || !is_inexact(out.dtype())) return;
  const ChecksOff off;
  if (!holds_nonfinite(out)) return;
  std::ostringstream os;
  os << "fx::detect_anomaly: forward of '" << p.name << "' gave " << first_nonfinite(out)
     << " in its output " << out.shape() << " " << dtype_name(out.dtype()) << "; inputs:";
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].defined()) os << (i ? ", " : " ") << i << ": " << describe(in[i]);
  fail(os.str());
}

void check_cotangent_anomaly(const Primitive& p, const Tensor& dy) {
  const ChecksOff off;
  if (!holds_nonfinite(dy)) return;
  fail("fx::detect_anomaly: backward: the cotangent of the output of '", p.name, "' ", dy.shape(),
       " ", dtype_name(dy.dtype()), " holds ", first_nonfinite(dy),
       " before its pullback ran (the seed cotangent, or a sum of cotangents that overflowed)");
}

void check_pullback_anomaly(const Primitive& p, const Tensor* dx, size_t nin) {
  const ChecksOff off;
  for (size_t i = 0; i < nin; ++i) {
    if (!holds_nonfinite(dx[i])) continue;
    fail("fx::detect_anomaly: backward (the pullback of '", p.name, "') gave ",
         first_nonfinite(dx[i]), " in the cotangent of input ", i, " ", dx[i].shape(), " ",
         dtype_name(dx[i].dtype()), " from a finite cotangent of its output");
  }
}

}  // namespace fx::detail
