// Finance: Black-Scholes Greeks by Monte Carlo with pathwise AD, and key-rate durations of a
// bootstrapped par curve by nested AD through Newton solves.
//
//   ./build/examples/finance                   # 1,000,000 paths
//   ./build/examples/finance --paths 200000
//
// 1. A European call (S = K = 100, r = 0.05, sigma = 0.2, T = 1) under geometric Brownian motion,
//    S_T = S exp((r - sigma^2/2) T + sigma sqrt(T) Z). Each path's discounted payoff
//    exp(-rT) max(S_T - K, 0) is differentiated with reverse mode with respect to per-path
//    copies of S, sigma and r, which gives every path's own delta, vega and rho (the pathwise
//    estimators), so each Greek comes with a standard error. Gamma needs care: the payoff's
//    second derivative in S_T is zero except at the kink, where it is a Dirac mass the pathwise
//    method never sees, so forward-over-reverse on the payoff itself returns exactly 0. We
//    differentiate a smoothed payoff instead, h softplus((S_T - K) / h) with h = 0.5: its
//    pathwise second derivative is a narrow bump of mass ~1 around the strike, and the
//    smoothing bias is O(h^2) (about 1e-5 here, well below the standard error). Gamma is
//    fx::jvp over fx::gradient (forward over reverse). The likelihood-ratio/pathwise mix,
//    exp(-rT) / S^2 E[1{S_T > K} S_T (Z / (sigma sqrt T) - 1)], is printed beside it.
//    Each figure is printed with its standard error and the analytic value; all must lie
//    within 3 standard errors.
// 2. Zero rates bootstrapped from par yields of annual-coupon bonds maturing in 1..10 years:
//    for each maturity a Newton solve (its derivative by fx::derivative, forward mode) finds
//    the zero rate that prices the par bond at 1. The whole bootstrap runs on fx::Dual numbers
//    (fx::jacobian_forward), so the outer derivative goes through every Newton iteration of the
//    inner one: the Jacobian of the zero rates and of the bonds' prices with respect to the par
//    yields. The key-rate durations of the bootstrapping bonds themselves, -dP_i/dy_j, form a
//    diagonal matrix (bond i is at par exactly when y_i is its coupon, whatever the other
//    yields) with the annuities sum_j<=i exp(-j z_j) on the diagonal.
// Prints figures and ends with `finance: ok` when every check passes (else exits 1).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fluxion/ad/dual.hpp>
#include <fluxion/ad/forward.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/ad/scalar_derivatives.hpp>
#include <fluxion/ops.hpp>

#include "cli.hpp"

using fx::Tensor;

namespace {

bool all_ok = true;

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double normal_pdf(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); }

// Mean and standard error of the per-path estimates in x.
void report(const char* name, const Tensor& x, double analytic) {
  const double n = double(x.numel());
  const double mean = fx::mean(x).item(), second = fx::mean(x * x).item();
  const double se = std::sqrt(std::max(second - mean * mean, 0.0) / (n - 1));
  const double z = (mean - analytic) / se;
  const bool ok = std::abs(z) <= 3;
  all_ok = all_ok && ok;
  std::printf("%s=%.6g se=%.3g analytic=%.6g z=%+.2f%s\n", name, mean, se, analytic, z,
              ok ? "" : "  <-- more than 3 standard errors");
}

void black_scholes(int64_t paths, uint64_t seed) {
  const double S = 100, K = 100, r = 0.05, sigma = 0.2, T = 1;
  fx::Generator gen(seed);
  const Tensor z = fx::randn({paths}, gen, fx::f64);
  auto terminal = [&](const Tensor& s, const Tensor& vol, const Tensor& rate) {
    return s * fx::exp((rate - 0.5 * vol * vol) * T + vol * std::sqrt(T) * z);
  };
  auto payoff = [&](const Tensor& s, const Tensor& vol, const Tensor& rate) {
    return fx::exp(-rate * T) * fx::relu(terminal(s, vol, rate) - K);
  };
  const double h = 0.5;  // width of the smoothed kink, for gamma
  auto smoothed = [&](const Tensor& s, const Tensor& vol, const Tensor& rate) {
    return fx::exp(-rate * T) * (h * fx::softplus((terminal(s, vol, rate) - K) / h));
  };
  // Per-path copies of the parameters: the gradient of the sum is every path's own derivative.
  const Tensor s0 = fx::full({paths}, S, fx::f64), vol = fx::full({paths}, sigma, fx::f64),
               rate = fx::full({paths}, r, fx::f64);
  auto [dS, dsigma, dr] = fx::gradient(
      [&](const Tensor& s, const Tensor& v, const Tensor& q) { return fx::sum(payoff(s, v, q)); },
      s0, vol, rate);
  // Forward over reverse: the tangent of the per-path deltas when every S moves by 1.
  auto delta_smoothed = [&](const Tensor& s) {
    return fx::gradient([&](const Tensor& x) { return fx::sum(smoothed(x, vol, rate)); }, s);
  };
  const Tensor gamma = fx::jvp(delta_smoothed, s0, fx::ones({paths}, fx::f64)).second;
  const Tensor st = terminal(s0, vol, rate);
  const Tensor lr_mix =
      std::exp(-r * T) / (S * S) * fx::where(st > K, st, 0.0) * (z / (sigma * std::sqrt(T)) - 1.0);

  const double d1 = (std::log(S / K) + (r + 0.5 * sigma * sigma) * T) / (sigma * std::sqrt(T));
  const double d2 = d1 - sigma * std::sqrt(T);
  std::printf("black_scholes: %lld paths\n", static_cast<long long>(paths));
  report("price", payoff(s0, vol, rate),
         S * normal_cdf(d1) - K * std::exp(-r * T) * normal_cdf(d2));
  report("delta", dS, normal_cdf(d1));
  report("vega", dsigma, S * normal_pdf(d1) * std::sqrt(T));
  report("rho", dr, K * T * std::exp(-r * T) * normal_cdf(d2));
  report("gamma", gamma, normal_pdf(d1) / (S * sigma * std::sqrt(T)));
  report("gamma_lr_mix", lr_mix, normal_pdf(d1) / (S * sigma * std::sqrt(T)));
}

// Continuously compounded zero rates z_1..z_n from the par yields of annual-coupon bonds
// maturing at 1..n years: bond k at par means y_k sum_{j<=k} exp(-j z_j) + exp(-k z_k) = 1.
// Generic in the number type, so it runs on doubles and on fx::Dual.
template <class T>
std::vector<T> bootstrap(const std::vector<T>& par) {
  std::vector<T> zeros;
  T annuity = 0;  // sum of the discount factors found so far
  for (size_t i = 0; i < par.size(); ++i) {
    const double k = double(i + 1);
    const T& y = par[i];
    auto residual = [&](const auto& zk) {
      return y * (annuity + exp(-k * zk)) + exp(-k * zk) - 1.0;
    };
    T zk = y;  // the par yield is close
    // Newton; its derivative by forward mode. Two steps past convergence make the tangents of
    // zk (the outer derivative, carried through every step) converge too.
    for (int it = 0, extra = 0; it < 50 && extra < 2; ++it) {
      const T step = residual(zk) / fx::derivative(residual, zk);
      zk = zk - step;
      if (std::abs(fx::value(step)) < 1e-15) ++extra;
    }
    zeros.push_back(zk);
    annuity = annuity + exp(-k * zk);
  }
  return zeros;
}

// Prices of bonds paying `coupon` annually, maturities 1..n, on the curve bootstrapped from par.
template <class T>
std::vector<T> bond_prices(const std::vector<T>& par, const std::vector<double>& coupon) {
  const std::vector<T> z = bootstrap(par);
  std::vector<T> prices;
  T annuity = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    const double k = double(i + 1);
    annuity = annuity + exp(-k * z[i]);
    prices.push_back(coupon[i] * annuity + exp(-k * z[i]));
  }
  return prices;
}

void key_rate_durations() {
  const int n = 10;
  std::vector<double> par;
  for (int k = 1; k <= n; ++k) par.push_back(0.03 + 0.015 * (1 - std::exp(-k / 3.0)));
  const std::vector<double> z = bootstrap(par);
  auto zero_jacobian = fx::jacobian_forward([](const auto& y) { return bootstrap(y); }, par);
  // Against central differences of the plain-double bootstrap.
  double fd_diff = 0;
  for (int j = 0; j < n; ++j) {
    std::vector<double> up = par, down = par;
    up[size_t(j)] += 1e-6;
    down[size_t(j)] -= 1e-6;
    const std::vector<double> zu = bootstrap(up), zd = bootstrap(down);
    for (int i = 0; i < n; ++i)
      fd_diff = std::max(fd_diff, std::abs((zu[size_t(i)] - zd[size_t(i)]) / 2e-6 -
                                           zero_jacobian[size_t(i)][size_t(j)]));
  }
  auto price_jacobian =
      fx::jacobian_forward([&](const auto& y) { return bond_prices(y, par); }, par);
  double offdiag = 0, diag_diff = 0, annuity = 0;
  std::printf("key_rate_durations: %d par bonds, zero rates", n);
  for (int i = 0; i < n; ++i) std::printf(" %.5f", z[size_t(i)]);
  std::printf("\nkrd_diagonal");
  for (int i = 0; i < n; ++i) {
    annuity += std::exp(-(i + 1) * z[size_t(i)]);
    for (int j = 0; j < n; ++j) {
      const double krd = -price_jacobian[size_t(i)][size_t(j)];
      if (i == j) {
        std::printf(" %.5f", krd);
        diag_diff = std::max(diag_diff, std::abs(krd - annuity));
      } else {
        offdiag = std::max(offdiag, std::abs(krd));
      }
    }
  }
  const bool ok = offdiag <= 1e-10 && diag_diff <= 1e-10 && fd_diff <= 1e-6;
  all_ok = all_ok && ok;
  std::printf(
      "\nzero_jacobian_vs_finite_differences=%.3g\nkrd_offdiagonal_max=%.3g\n"
      "krd_diagonal_vs_annuity_max_diff=%.3g%s\n",
      fd_diff, offdiag, diag_diff, ok ? "" : "  <-- not diagonal to 1e-10");
}

}  // namespace

int main(int argc, char** argv) {
  int64_t paths = 1000000;
  uint64_t seed = 7;
  fx::examples::Cli cli("finance",
                        "Black-Scholes Greeks by pathwise AD, then key-rate durations of "
                        "bootstrapped zero rates.");
  cli.option("--paths", "N", "Monte Carlo paths", paths, {.min = 2});
  cli.option("--seed", "S", "seed of the paths", seed);
  cli.parse_or_exit(argc, argv);
  black_scholes(paths, seed);
  key_rate_durations();
  if (!all_ok) return 1;
  std::printf("finance: ok\n");
  return 0;
}
