// Scalar reverse-mode AD (fx::Real through fx::gradient) against the same generic code run on
// double, in one run: (a) a dot product of length 10^6, element by element; (b) ADBench's GMM
// objective (d=10, K=25, 1000 points) written as ADBench's reference is, Q (x - mu) with
// fx::lower_triangular_product (its Qtimesx) and fx::squared_norm (its sqnorm), the sum over
// points with fx::preaccumulated_sum (gmm_ratio) or as a plain loop (gmm_loop_ratio: every
// point on one tape); and the same objective element by element (gmm_elements_ratio, against
// its own double evaluation).
// Prints name=value lines. Plain and gradient runs alternate; times are medians over rounds and
// ratios the medians of the per-round ratios.
//
//   ./build/bench/scalar_ad [gmm-file] [repetitions]
//   dot_plain_ns_per_op=... dot_gradient_ns_per_op=... dot_ratio=...
//   gmm_objective_s=... gmm_gradient_s=... gmm_ratio=... gmm_loop_ratio=... gmm_fd_max_rel_error=...
//   gmm_scalar_ops=... gmm_plain_ns_per_op=... gmm_gradient_ns_per_op=...
//
// "ns per op" divides by the primal's scalar operations (2 per dot element: a multiply, an add;
// for GMM, counted by running the objective once on Counted, below).
// The GMM objective follows ADBench's reference C++ (gmm.h): Q = exp(diag) + strictly-lower icf,
// a log-sum-exp over components per point, the alphas' log-sum-exp and the Wishart prior.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <fluxion/ad/preaccumulate.hpp>
#include <fluxion/ad/reverse.hpp>
#include <fluxion/ad/scalar.hpp>
#include <fluxion/ad/scalar_reduce.hpp>
#include <fluxion/data/adbench.hpp>

namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Timing {
  double median = 0, min = 0;
};
Timing summarize(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front()};
}

// Times `plain` and each of `others` in turn, `reps` rounds after a warm-up round (which grows
// the tape and the allocator's pools, as in any loop that takes many gradients). Interleaving
// puts noise from other processes on the machine on all of them alike, and the ratio to `plain`
// is the median of the per-round ratios.
struct Paired {
  Timing plain;
  std::vector<Timing> other;
  std::vector<double> ratio;
};
template <class Plain, class... Others>
Paired time_paired(int reps, Plain&& plain, Others&&... others) {
  constexpr size_t n = sizeof...(Others);
  std::vector<double> tp;
  std::vector<std::vector<double>> to(n), tr(n);
  auto time_one = [](auto& fn) {
    auto t0 = Clock::now();
    fn();
    return seconds(t0, Clock::now());
  };
  for (int r = 0; r <= reps; ++r) {
    double p = time_one(plain);
    double t[n] = {time_one(others)...};
    if (r == 0) continue;
    tp.push_back(p);
    for (size_t k = 0; k < n; ++k) to[k].push_back(t[k]), tr[k].push_back(t[k] / p);
  }
  Paired out{summarize(tp), {}, {}};
  for (size_t k = 0; k < n; ++k) {
    out.other.push_back(summarize(to[k]));
    out.ratio.push_back(summarize(tr[k]).median);
  }
  return out;
}

// Where a reverse-mode gradient's time goes: making the variables, running f (recording the
// tape), the reverse sweep, reading the adjoints out. Returns medians; `statements` is the tape
// length (variables included) and `operations` its (operand, partial) pairs.
struct Phases {
  Timing variables, record, sweep, extract;
  size_t statements = 0, operations = 0;
};
template <class F, class... Args>
Phases phases(int reps, F f, const Args&... args) {
  std::vector<double> tv, tr, ts, te;
  Phases out;
  for (int r = 0; r <= reps; ++r) {  // the first run is a warm-up
    auto t0 = Clock::now();
    fx::ad::ScalarRecording rec;
    auto to_real = [&](const std::vector<double>& v) {
      std::vector<fx::Real> x(v.size());
      for (size_t i = 0; i < v.size(); ++i) x[i] = rec.variable(v[i]);
      return x;
    };
    std::tuple xs{to_real(args)...};
    auto t1 = Clock::now();
    fx::Real y = std::apply(f, xs);
    auto t2 = Clock::now();
    const auto& adj = rec.adjoints(y);
    auto t3 = Clock::now();
    auto extract = [&](const std::vector<fx::Real>& x) {
      std::vector<double> g(x.size());
      for (size_t i = 0; i < x.size(); ++i) g[i] = adj[x[i].index()];
      return g;
    };
    auto grads = std::apply([&](const auto&... x) { return std::tuple{extract(x)...}; }, xs);
    (void)grads;
    auto t4 = Clock::now();
    out.statements = rec.tape().size();
    out.operations = rec.tape().operations();
    if (r == 0) continue;
    tv.push_back(seconds(t0, t1));
    tr.push_back(seconds(t1, t2));
    ts.push_back(seconds(t2, t3));
    te.push_back(seconds(t3, t4));
  }
  out.variables = summarize(tv);
  out.record = summarize(tr);
  out.sweep = summarize(ts);
  out.extract = summarize(te);
  return out;
}

void print_phases(const char* name, const Phases& p) {
  std::printf("%s_tape_statements=%zu\n", name, p.statements);
  std::printf("%s_tape_operations=%zu\n", name, p.operations);
  std::printf("%s_phase_variables_s=%.6f\n", name, p.variables.median);
  std::printf("%s_phase_record_s=%.6f\n", name, p.record.median);
  std::printf("%s_phase_sweep_s=%.6f\n", name, p.sweep.median);
  std::printf("%s_phase_extract_s=%.6f\n", name, p.extract.median);
  std::printf("%s_record_ns_per_statement=%.2f\n", name, p.record.median * 1e9 / p.statements);
  std::printf("%s_sweep_ns_per_statement=%.2f\n", name, p.sweep.median * 1e9 / p.statements);
}

template <class T>
T dot(const std::vector<T>& a, const std::vector<T>& b) {
  T s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// A double that counts the arithmetic done with it (+, -, *, exp, log: what the objective uses;
// not copies or comparisons): run through generic code once, it gives the code's number of
// scalar operations, the denominator of "ns per op".
struct Counted {
  double v = 0;
  static inline long ops = 0;
  Counted() = default;
  Counted(double x) : v(x) {}  // NOLINT: numbers convert, as to double
};
Counted operator+(Counted a, Counted b) { return ++Counted::ops, a.v + b.v; }
Counted operator-(Counted a, Counted b) { return ++Counted::ops, a.v - b.v; }
Counted operator*(Counted a, Counted b) { return ++Counted::ops, a.v * b.v; }
Counted& operator+=(Counted& a, Counted b) { return a = a + b; }
bool operator>(Counted a, Counted b) { return a.v > b.v; }
Counted exp(Counted a) { return ++Counted::ops, std::exp(a.v); }
Counted log(Counted a) { return ++Counted::ops, std::log(a.v); }

// ---- ADBench GMM, generic in T (double, fx::Real, ...).

template <class T>
T logsumexp(const std::vector<T>& v) {
  using std::exp, std::log;
  T mx = v[0];
  for (const T& e : v)
    if (e > mx) mx = e;
  T s = 0;
  for (const T& e : v) s += exp(e - mx);
  return log(s) + mx;
}

// log Γ_p(a) = p(p-1)/4 log π + Σ_{j=1..p} lgamma(a + (1-j)/2)
double log_gamma_distrib(double a, int p) {
  double out = 0.25 * p * (p - 1) * std::log(std::numbers::pi);
  for (int j = 1; j <= p; ++j) out += std::lgamma(a + 0.5 * (1 - j));
  return out;
}

// How the sum over points is written: a plain loop (every operation of every point on one tape)
// or fx::preaccumulated_sum (each point's tape swept while it is in cache).
enum class Sum { loop, preaccumulated };
// How the inner products are written: with fx::lower_triangular_product and fx::squared_norm,
// as ADBench's reference (gmm.h) does with its Qtimesx and sqnorm helpers (one tape statement
// per row of Q), or element by element (`qxc[b] += L * xc[a]`: one statement per multiply-add).
enum class Inner { ranges, elements };

template <class T>
T gmm_objective(const fx::data::GmmInput& in, const std::vector<T>& alphas,
                const std::vector<T>& means, const std::vector<T>& icf, Sum how, Inner inner) {
  using std::exp, std::log;
  const int d = in.d, k = in.k, n = in.n, q = in.icf_size(), tri = d * (d + 1) / 2;
  std::vector<T> qdiag(size_t(d) * k), sum_qs(k), xc(d), qxc(d), main_term(k);
  // Q_c by rows for the range form: row b holds L(b, 0..b-1) then exp(q_b), so
  // (Q_c v)_b = dot(row b, v[0..b]). icf stores L by columns; column a starts at a(2d-a-1)/2.
  std::vector<T> qrows(inner == Inner::ranges ? size_t(tri) * k : 0);
  for (int c = 0; c < k; ++c) {
    sum_qs[c] = 0;
    for (int j = 0; j < d; ++j) {
      sum_qs[c] += icf[c * q + j];
      qdiag[c * d + j] = exp(icf[c * q + j]);
    }
    if (inner == Inner::ranges)
      for (int b = 0; b < d; ++b) {
        T* row = &qrows[size_t(c) * tri + b * (b + 1) / 2];
        for (int a = 0; a < b; ++a) row[a] = icf[c * q + d + a * (2 * d - a - 1) / 2 + (b - a - 1)];
        row[b] = qdiag[c * d + b];
      }
  }
  // One point's log-sum-exp over components.
  auto point_term = [&](size_t i) {
    const double* x = &in.x[i * d];
    for (int c = 0; c < k; ++c) {
      for (int j = 0; j < d; ++j) xc[j] = x[j] - means[c * d + j];
      if (inner == Inner::ranges) {
        fx::lower_triangular_product(std::span(&qrows[size_t(c) * tri], tri), xc, qxc);
        main_term[c] = alphas[c] + sum_qs[c] - 0.5 * fx::squared_norm(qxc);
        continue;
      }
      // Q (x - mu): the diagonal, then the strictly-lower entries column by column.
      for (int j = 0; j < d; ++j) qxc[j] = qdiag[c * d + j] * xc[j];
      int l = c * q + d;
      for (int a = 0; a < d; ++a)
        for (int b = a + 1; b < d; ++b) qxc[b] += icf[l++] * xc[a];
      T sq = 0;
      for (int j = 0; j < d; ++j) sq += qxc[j] * qxc[j];
      main_term[c] = alphas[c] + sum_qs[c] - 0.5 * sq;
    }
    return logsumexp(main_term);
  };
  T slse = 0;
  if (how == Sum::preaccumulated) {
    slse = fx::preaccumulated_sum(size_t(n), point_term);
  } else {
    for (int i = 0; i < n; ++i) slse += point_term(size_t(i));
  }
  const double constant = -n * d * 0.5 * std::log(2 * std::numbers::pi);
  T err = constant + slse - double(n) * logsumexp(alphas);
  // Wishart prior.
  const double gamma = in.gamma;
  const int m = in.m, np = d + m + 1;
  const double cw =
      np * d * (std::log(gamma) - 0.5 * std::log(2.0)) - log_gamma_distrib(0.5 * np, d);
  T prior = 0;
  for (int c = 0; c < k; ++c) {
    T frob = 0;
    for (int j = 0; j < d; ++j) frob += qdiag[c * d + j] * qdiag[c * d + j];
    for (int j = d; j < q; ++j) frob += icf[c * q + j] * icf[c * q + j];
    prior += 0.5 * gamma * gamma * frob - double(m) * sum_qs[c];
  }
  return err + prior - double(k) * cw;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = argc > 1 ? argv[1] : FLUXION_ADBENCH_DIR "/gmm/1k/gmm_d10_K25.txt";
  int reps = argc > 2 ? std::max(5, std::atoi(argv[2])) : 11;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);

  // ---- (a) dot product, gradient with respect to both vectors.
  const size_t n = 1000000;
  std::vector<double> a(n), b(n);
  for (size_t i = 0; i < n; ++i) a[i] = u(rng), b[i] = u(rng);
  auto fdot = [](const auto& x, const auto& y) { return dot(x, y); };
  volatile double sink = 0;
  std::tuple<std::vector<double>, std::vector<double>> g;
  Paired dt = time_paired(
      reps, [&] { sink = dot(a, b); }, [&] { g = fx::gradient(fdot, a, b); });
  const Timing t_plain = dt.plain, t_grad = dt.other[0];
  double dot_err = 0;
  for (size_t i = 0; i < n; ++i)
    dot_err =
        std::max({dot_err, std::abs(std::get<0>(g)[i] - b[i]), std::abs(std::get<1>(g)[i] - a[i])});
  const double ops = 2.0 * n;
  std::printf("dot_n=%zu\n", n);
  std::printf("dot_plain_ns_per_op=%.3f\n", t_plain.median * 1e9 / ops);
  std::printf("dot_gradient_ns_per_op=%.3f\n", t_grad.median * 1e9 / ops);
  std::printf("dot_ratio=%.1f\n", dt.ratio[0]);
  std::printf("dot_gradient_min_ns_per_op=%.3f\n", t_grad.min * 1e9 / ops);
  std::printf("dot_gradient_max_abs_error=%.3g\n", dot_err);
  print_phases("dot", phases(reps, fdot, a, b));

  // ---- (b) ADBench GMM: the plain evaluation, then gradients with the sum over points written
  // as fx::preaccumulated_sum (gmm_*) and as a plain loop on one long tape (gmm_loop_*), inner
  // products by range (fx::lower_triangular_product, fx::squared_norm); and the element form
  // (gmm_elements_*) against its own plain evaluation.
  fx::data::GmmInput in = fx::data::read_gmm(path);
  auto objective = [&](Sum how, Inner inner) {
    return [&in, how, inner](const auto& al, const auto& mu, const auto& ic) {
      return gmm_objective(in, al, mu, ic, how, inner);
    };
  };
  auto plain_in = [&](Inner inner) {
    return gmm_objective(in, in.alphas, in.means, in.icf, Sum::loop, inner);
  };
  auto plain = [&] { return plain_in(Inner::ranges); };
  double e = 0, e_elements = 0;
  using Grads = std::tuple<std::vector<double>, std::vector<double>, std::vector<double>>;
  Grads gg, gl, ge;
  auto grad_of = [&](Sum how, Inner inner) {
    return fx::gradient(objective(how, inner), in.alphas, in.means, in.icf);
  };
  Paired gt = time_paired(
      reps, [&] { e = plain(); }, [&] { gg = grad_of(Sum::preaccumulated, Inner::ranges); },
      [&] { gl = grad_of(Sum::loop, Inner::ranges); });
  Paired et = time_paired(
      reps, [&] { e_elements = plain_in(Inner::elements); },
      [&] { ge = grad_of(Sum::preaccumulated, Inner::elements); });
  const Timing t_obj = gt.plain, t_ggrad = gt.other[0], t_lgrad = gt.other[1];
  Phases gp =
      phases(reps, objective(Sum::preaccumulated, Inner::ranges), in.alphas, in.means, in.icf);
  Phases lp = phases(reps, objective(Sum::loop, Inner::ranges), in.alphas, in.means, in.icf);
  Phases ep =
      phases(reps, objective(Sum::preaccumulated, Inner::elements), in.alphas, in.means, in.icf);

  // The two gradients agree; central differences on random coordinates of each block (h scaled
  // to the parameter) check the preaccumulated one.
  double max_rel = 0, variants_max_rel_diff = 0;
  std::vector<double>* blocks[3] = {&in.alphas, &in.means, &in.icf};
  std::vector<double>* grads[3] = {&std::get<0>(gg), &std::get<1>(gg), &std::get<2>(gg)};
  std::vector<double>* loop_grads[3] = {&std::get<0>(gl), &std::get<1>(gl), &std::get<2>(gl)};
  std::vector<double>* elem_grads[3] = {&std::get<0>(ge), &std::get<1>(ge), &std::get<2>(ge)};
  int checked = 0;
  for (int blk = 0; blk < 3; ++blk) {
    for (size_t j = 0; j < grads[blk]->size(); ++j) {
      double x = (*grads[blk])[j];
      for (double y : {(*loop_grads[blk])[j], (*elem_grads[blk])[j]})
        variants_max_rel_diff =
            std::max(variants_max_rel_diff, std::abs(x - y) / std::max(1.0, std::abs(y)));
    }
    std::uniform_int_distribution<size_t> pick(0, blocks[blk]->size() - 1);
    for (int t = 0; t < 4; ++t, ++checked) {
      size_t j = pick(rng);
      double& p = (*blocks[blk])[j];
      double p0 = p, h = 1e-5 * std::max(1.0, std::abs(p0));
      p = p0 + h;
      double fp = plain();
      p = p0 - h;
      double fm = plain();
      p = p0;
      double fd = (fp - fm) / (2 * h), ad = (*grads[blk])[j];
      max_rel = std::max(max_rel, std::abs(ad - fd) / std::max(1.0, std::abs(fd)));
    }
  }
  std::printf("gmm_file=%s\n", path.c_str());
  std::printf("gmm_d=%d\ngmm_k=%d\ngmm_n=%d\n", in.d, in.k, in.n);
  std::printf("gmm_objective_value=%.10g\n", e);
  // Scalar operations of the objective (ranges form), counted by running it on Counted.
  auto counted = [](const std::vector<double>& v) {
    return std::vector<Counted>(v.begin(), v.end());
  };
  Counted::ops = 0;
  (void)gmm_objective(in, counted(in.alphas), counted(in.means), counted(in.icf), Sum::loop,
                      Inner::ranges);
  const double gmm_ops = double(Counted::ops);
  std::printf("gmm_objective_s=%.6f\n", t_obj.median);
  std::printf("gmm_scalar_ops=%.0f\n", gmm_ops);
  std::printf("gmm_plain_ns_per_op=%.3f\n", t_obj.median * 1e9 / gmm_ops);
  std::printf("gmm_gradient_ns_per_op=%.3f\n", t_ggrad.median * 1e9 / gmm_ops);
  std::printf("gmm_gradient_s=%.6f\n", t_ggrad.median);
  std::printf("gmm_ratio=%.2f\n", gt.ratio[0]);
  std::printf("gmm_loop_gradient_s=%.6f\n", t_lgrad.median);
  std::printf("gmm_loop_ratio=%.2f\n", gt.ratio[1]);
  std::printf("gmm_objective_min_s=%.6f\n", t_obj.min);
  std::printf("gmm_gradient_min_s=%.6f\n", t_ggrad.min);
  std::printf("gmm_ratio_of_minima=%.2f\n", t_ggrad.min / t_obj.min);
  std::printf("gmm_elements_objective_s=%.6f\n", et.plain.median);
  std::printf("gmm_elements_gradient_s=%.6f\n", et.other[0].median);
  std::printf("gmm_elements_ratio=%.2f\n", et.ratio[0]);
  print_phases("gmm", gp);
  print_phases("gmm_loop", lp);
  print_phases("gmm_elements", ep);
  std::printf("gmm_fd_coordinates=%d\n", checked);
  std::printf("gmm_fd_max_rel_error=%.3g\n", max_rel);
  std::printf("gmm_objective_forms_max_rel_diff=%.3g\n",
              std::abs(e - e_elements) / std::max(1.0, std::abs(e)));
  std::printf("gmm_variants_max_rel_diff=%.3g\n", variants_max_rel_diff);
  return 0;
}
