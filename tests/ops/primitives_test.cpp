// The table-driven primitive suite: runs every row of op_rows.hpp (rows live in the family
// files elementwise_test.cpp, reduce_test.cpp, view_test.cpp, linalg_test.cpp, index_test.cpp)
// through the checks below, and fails for any built-in primitive without a row.
//
//   Forward:  default dispatch vs the reference backend alone, contiguous / transposed / sliced /
//             expanded inputs, every dtype of the row; inputs' storage must be left untouched;
//             both must throw or neither. Rows with Opts::no_reference (LAPACK) compare each
//             layout with dense copies instead.
//   Gradient: fx::testing::gradcheck in f64 to the row's order (random directions).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>
#include <sstream>

#include <fluxion/ad/trace.hpp>
#include <fluxion/ad/vmap.hpp>
#include "op_rows.hpp"

namespace fx::rows {
namespace {

enum class Layout { contiguous, transposed, sliced, expanded };
const char* layout_name(Layout l) {
  switch (l) {
    case Layout::contiguous: return "contiguous";
    case Layout::transposed: return "transposed";
    case Layout::sliced: return "sliced";
    case Layout::expanded: return "expanded";
  }
  return "?";
}

uint64_t seed_of(const std::string& name, size_t case_index, int salt) {
  uint64_t h = 1469598103934665603ull;
  for (char c : name) h = (h ^ uint8_t(c)) * 1099511628211ull;
  return h ^ (uint64_t(case_index) << 32) ^ uint64_t(salt);
}

struct Inputs {
  Args args;
  std::vector<Tensor> owners;  // the buffers the args view (checked unchanged afterwards)
};

bool applies(Layout layout, const Case& c) {
  for (const In& in : c) {
    const Shape& s = in.shape;
    bool big = std::any_of(s.begin(), s.end(), [](int64_t d) { return d > 1; });
    if (layout == Layout::contiguous) return true;
    if (layout == Layout::transposed && s.size() >= 2 && big) return true;
    if (layout == Layout::sliced && s.size() >= 1) return true;
    if (layout == Layout::expanded && big) return true;
  }
  return false;
}

Inputs make_inputs(const Row& row, const Case& c, DType dtype, Layout layout, uint64_t seed) {
  Generator gen(seed);
  Inputs out;
  for (size_t i = 0; i < c.size(); ++i) {
    const In& in = c[i];
    const Shape& s = in.shape;
    const int nd = s.size();
    if (layout == Layout::transposed && nd >= 2) {
      // Contiguous in reversed axis order, viewed back: every stride is "wrong way round".
      Shape rev, perm;
      for (int d = nd - 1; d >= 0; --d) {
        rev.push_back(s[d]);
        perm.push_back(d);
      }
      Tensor base = make_values(row.o, in, i, rev, dtype, gen);
      out.owners.push_back(base);
      out.args.push_back(permute(base, perm));
    } else if (layout == Layout::sliced && nd >= 1) {
      // Every other element of a larger buffer, starting at 1: gaps and an offset.
      Shape big;
      for (int d = 0; d < nd; ++d) big.push_back(2 * s[d] + 1);
      Tensor base = make_values(row.o, in, i, big, dtype, gen);
      Tensor v = base;
      for (int d = 0; d < nd; ++d) v = slice(v, d, 1, 1 + 2 * s[d], 2);
      out.owners.push_back(base);
      out.args.push_back(v);
    } else if (layout == Layout::expanded &&
               std::any_of(s.begin(), s.end(), [](int64_t d) { return d > 1; })) {
      // The first dimension longer than 1 is a stride-0 broadcast of a single row.
      Shape one = s;
      for (int d = 0; d < nd; ++d)
        if (s[d] > 1) {
          one[d] = 1;
          break;
        }
      Tensor base = make_values(row.o, in, i, one, dtype, gen);
      out.owners.push_back(base);
      out.args.push_back(expand(base, s));
    } else {
      Tensor base = make_values(row.o, in, i, s, dtype, gen);
      out.owners.push_back(base);
      out.args.push_back(base);
    }
  }
  return out;
}

// A tensor's values as doubles; a complex element gives its real and imaginary parts.
std::vector<double> as_doubles(const Tensor& t) {
  if (!is_complex(t.dtype())) return to_vector<double>(t);
  std::vector<double> out;
  for (std::complex<double> z : to_vector<std::complex<double>>(t)) {
    out.push_back(z.real());
    out.push_back(z.imag());
  }
  return out;
}

// Empty when equal within the dtype's tolerance, else a description of the first mismatch.
std::string mismatch(const Tensor& got, const Tensor& want) {
  std::ostringstream os;
  if (got.dtype() != want.dtype() || !(got.shape() == want.shape())) {
    os << "got " << dtype_name(got.dtype()) << " " << got.shape() << ", reference gave "
       << dtype_name(want.dtype()) << " " << want.shape();
    return os.str();
  }
  auto g = as_doubles(got), w = as_doubles(want);
  double scale = 0;
  for (double x : w)
    if (std::isfinite(x)) scale = std::max(scale, std::abs(x));
  const DType part = real_dtype(want.dtype());
  const double rtol = part == f64 ? 1e-12 : part == f32 ? 1e-5 : 0;
  for (size_t i = 0; i < g.size(); ++i) {
    bool same = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i] ||
                std::abs(g[i] - w[i]) <= rtol * (std::abs(w[i]) + scale);
    if (!same) {
      os << "element " << i << ": got " << g[i] << ", reference gave " << w[i] << " ("
         << dtype_name(want.dtype()) << " " << want.shape() << ")";
      return os.str();
    }
  }
  return "";
}

struct Outcome {
  Tensor out;
  std::string error;  // the fx::Error message, if it threw
};
Outcome run(const Row& row, const Args& args) {
  try {
    return {row.f(args), ""};
  } catch (const Error& e) {
    return {Tensor(), std::string("threw: ") + e.what()};
  }
}

class PrimitiveRow : public ::testing::TestWithParam<Row> {};

TEST_P(PrimitiveRow, ForwardMatchesTheReferenceBackend) {
  const Row& row = GetParam();
  int compared = 0;
  std::set<std::string> declined;  // tuned kernels that left a whole run to the reference
  for (size_t ci = 0; ci < row.o.cases.size(); ++ci) {
    const Case& c = row.o.cases[ci];
    for (DType dtype : row.o.dtypes) {
      for (Layout layout :
           {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::expanded}) {
        if (!applies(layout, c)) continue;
        SCOPED_TRACE(::testing::Message()
                     << "case " << ci << ", " << dtype_name(dtype) << ", " << layout_name(layout));
        Inputs in = make_inputs(row, c, dtype, layout, seed_of(row.name, ci, int(layout)));
        std::vector<std::vector<double>> before;
        for (const Tensor& o : in.owners) before.push_back(as_doubles(o));
        Outcome got, want;
        {
          testing::BackendScope scope(testing::Backends::all);
          got = run(row, in.args);
          for (const Primitive* p : builtin_primitives())
            if (scope.has_kernel(*p, testing::kTunedRank) &&
                scope.kernel_calls(*p, testing::kTunedRank) == 0 &&
                scope.kernel_calls(*p, kMaxBackends - 1) > 0)
              declined.insert(p->name);
        }
        if (!row.o.no_reference.empty()) {
          // No reference kernel to compare with (row.o.no_reference says why): the same values,
          // dense, through the default dispatch.
          Args dense;
          for (const Tensor& a : in.args) dense.push_back(a.clone());
          want = run(row, dense);
        } else {
          testing::BackendScope scope(testing::Backends::reference);
          want = run(row, in.args);
          for (const Primitive* p : builtin_primitives())
            ASSERT_EQ(scope.kernel_calls(*p, testing::kTunedRank), 0) << p->name;
        }
        ASSERT_EQ(got.error, want.error) << "the default dispatch and the reference disagree";
        ASSERT_TRUE(got.error.empty()) << got.error;
        std::string m = mismatch(got.out, want.out);
        EXPECT_TRUE(m.empty()) << m;
        for (size_t k = 0; k < in.owners.size(); ++k) {
          auto after = as_doubles(in.owners[k]);
          bool same = after.size() == before[k].size();
          for (size_t j = 0; same && j < after.size(); ++j)
            same = after[j] == before[k][j] || (std::isnan(after[j]) && std::isnan(before[k][j]));
          EXPECT_TRUE(same) << "input " << k << "'s storage was written to";
        }
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 0);
  // "Unsupported" is its own status, never a pass: say which tuned kernels left it to the
  // reference (in some case; the rest of the row may still have run them).
  for (const std::string& p : declined)
    std::cout << "[ unsupported ] " << row.name << ": the tuned '" << p
              << "' kernel declined some inputs (the reference ran them)\n";
}

TEST_P(PrimitiveRow, GradientMatchesFiniteDifferences) {
  const Row& row = GetParam();
  if (row.o.order == 0) {
    // Forward-only rows (bool/integer outputs, ties, NaNs) must say why.
    EXPECT_FALSE(row.o.why.empty()) << "a forward-only row must say why";
    return;
  }
  if (row.o.order < 2) {
    EXPECT_FALSE(row.o.why.empty()) << "order < 2 must say why";
  }
  for (size_t ci = 0; ci < row.o.cases.size(); ++ci) {
    SCOPED_TRACE(::testing::Message() << "case " << ci);
    Inputs in = make_inputs(row, row.o.cases[ci], row.o.complex ? c128 : f64, Layout::contiguous,
                            seed_of(row.name, ci, 99));
    testing::GradcheckOptions o = row.o.grad;
    o.order = row.o.order;
    o.seed = seed_of(row.name, ci, 7);
    auto r = testing::gradcheck(row.f, o, in.args);
    EXPECT_TRUE(r) << r;
  }
}

// Abstract evaluation: the row run on meta copies of its inputs gives the kernels' output shape and
// dtype (or the same error), and allocates no data.
TEST_P(PrimitiveRow, MetaEvaluationMatchesTheKernelsShapesAndDtypes) {
  const Row& row = GetParam();
  for (size_t ci = 0; ci < row.o.cases.size(); ++ci) {
    for (DType dtype : row.o.dtypes) {
      SCOPED_TRACE(::testing::Message() << "case " << ci << ", " << dtype_name(dtype));
      Inputs in =
          make_inputs(row, row.o.cases[ci], dtype, Layout::contiguous, seed_of(row.name, ci, 5));
      const Outcome eager = run(row, in.args);
      Args meta;
      for (const Tensor& a : in.args) meta.push_back(to(a, Device::meta));
      const AllocatorStats before = allocator_stats();
      const Outcome abstract = run(row, meta);
      const AllocatorStats after = allocator_stats();
      EXPECT_EQ(after.live_bytes, before.live_bytes) << "meta evaluation allocated data";
      EXPECT_EQ(after.system_allocs, before.system_allocs) << "meta evaluation allocated data";
      if (!eager.error.empty()) {
        EXPECT_FALSE(abstract.error.empty()) << "the kernels threw " << eager.error;
        continue;
      }
      ASSERT_TRUE(abstract.error.empty()) << abstract.error;
      EXPECT_EQ(abstract.out.device(), Device::meta);
      EXPECT_EQ(abstract.out.shape(), eager.out.shape());
      EXPECT_EQ(abstract.out.dtype(), eager.out.dtype());
    }
  }
}

// Tracing: the graph of the row, run on the same inputs, equals the eager result; abstract
// evaluation of each of its equations gives the types the graph holds.
TEST_P(PrimitiveRow, TraceThenRunEqualsEager) {
  const Row& row = GetParam();
  for (size_t ci = 0; ci < row.o.cases.size(); ++ci) {
    SCOPED_TRACE(::testing::Message() << "case " << ci);
    Inputs in = make_inputs(row, row.o.cases[ci], row.o.complex ? c128 : f64, Layout::contiguous,
                            seed_of(row.name, ci, 11));
    const Outcome eager = run(row, in.args);
    if (!eager.error.empty()) continue;
    Graph g = trace(row.f, in.args);
    ASSERT_EQ(g.outputs.size(), 1u) << g;
    std::vector<Tensor> got = g(in.args);
    std::string m = mismatch(got[0], eager.out);
    EXPECT_TRUE(m.empty()) << m << "\n" << g;
    // Each equation's abstract evaluation gives the types the trace recorded, making no data.
    for (const Graph::Equation& eq : g.equations) {
      std::vector<Tensor> args;
      for (int id : eq.inputs)
        args.push_back(
            id < 0 ? Tensor()
                   : empty(g.values[size_t(id)].shape, g.values[size_t(id)].dtype, Device::meta));
      const AllocatorStats before = allocator_stats();
      const std::vector<AbstractValue> types = abstract_eval(*eq.prim, args, eq.attrs.view());
      EXPECT_EQ(allocator_stats().system_allocs, before.system_allocs) << eq.prim->name;
      ASSERT_EQ(types.size(), size_t(eq.prim->num_outputs)) << eq.prim->name;
      for (size_t k = 0; k < types.size(); ++k) {
        const Graph::Value& want = g.values[size_t(eq.output) + k];
        EXPECT_EQ(types[k].shape, want.shape) << eq.prim->name << " output " << k;
        EXPECT_EQ(types[k].dtype, want.dtype) << eq.prim->name << " output " << k;
        EXPECT_EQ(types[k].device, Device::meta) << eq.prim->name;
      }
    }
  }
}

// Batching: vmap of the row over a batch of 3 inputs equals the row applied to each example and
// stacked, with every input mapped, and with only the first mapped (the rest shared).
TEST_P(PrimitiveRow, VmapEqualsALoopOverTheBatch) {
  const Row& row = GetParam();
  constexpr int64_t B = 3;
  for (size_t ci = 0; ci < row.o.cases.size(); ++ci) {
    SCOPED_TRACE(::testing::Message() << "case " << ci);
    const DType dtype = row.o.complex ? c128 : f64;
    std::vector<Args> examples;
    for (int64_t b = 0; b < B; ++b)
      examples.push_back(make_inputs(row, row.o.cases[ci], dtype, Layout::contiguous,
                                     seed_of(row.name, ci, 20 + int(b)))
                             .args);
    const size_t n = examples[0].size();
    for (bool shared_rest : {false, true}) {
      if (shared_rest && n < 2) continue;
      SCOPED_TRACE(shared_rest ? "first input mapped, the rest shared" : "every input mapped");
      Args batched(n);
      std::vector<Tensor> want;
      bool threw = false;
      for (int64_t b = 0; b < B; ++b) {
        Args args = examples[size_t(b)];
        if (shared_rest)
          for (size_t i = 1; i < n; ++i) args[i] = examples[0][i];
        const Outcome o = run(row, args);
        threw |= !o.error.empty();
        want.push_back(o.out);
      }
      if (threw) continue;
      for (size_t i = 0; i < n; ++i) {
        if (shared_rest && i > 0) {
          batched[i] = examples[0][i];
          continue;
        }
        std::vector<Tensor> parts;
        for (int64_t b = 0; b < B; ++b) parts.push_back(examples[size_t(b)][i]);
        batched[i] = stack(parts, 0);
      }
      Tensor got;
      if (shared_rest) {
        got = vmap(
            [&](const Tensor& first, const Args& rest) {
              Args args{first};
              args.insert(args.end(), rest.begin() + 1, rest.end());
              return row.f(args);
            },
            {0, unmapped})(batched[0], batched);
      } else {
        got = vmap([&](const Args& args) { return row.f(args); })(batched);
      }
      std::string m = mismatch(got, stack(want, 0));
      EXPECT_TRUE(m.empty()) << m;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, PrimitiveRow, ::testing::ValuesIn(all_rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

TEST(PrimitiveTable, EveryBuiltinPrimitiveHasARowThatAppliesIt) {
  std::vector<Row> rows = all_rows();
  std::set<std::string> names;
  for (const Row& r : rows) {
    EXPECT_TRUE(names.insert(r.name).second) << "two rows named " << r.name;
    EXPECT_FALSE(r.o.cases.empty()) << r.name << " has no cases";
  }
  for (const Primitive* p : builtin_primitives()) {
    auto it =
        std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.name == p->name; });
    if (it == rows.end()) {
      ADD_FAILURE() << "primitive '" << p->name << "' has no row";
      continue;
    }
    Inputs in = make_inputs(*it, it->o.cases[0], it->o.dtypes[0], Layout::contiguous, 1);
    testing::BackendScope scope;
    (void)it->f(in.args);
    int64_t calls = scope.forward_calls(*p);
    for (int rank = 0; rank < kMaxBackends; ++rank) calls += scope.kernel_calls(*p, rank);
    EXPECT_GT(calls, 0) << "the row '" << p->name << "' never applies its primitive";
    // A row excused from the reference comparison must still need the excuse.
    if (!it->o.no_reference.empty())
      EXPECT_FALSE(scope.has_kernel(*p, kMaxBackends - 1))
          << "'" << p->name << "' has a reference kernel now: drop the row's no_reference";
    if (p->pullback && it->o.order == 0) {
      // Allowed only for a pullback that is an fx::Error by design (a derivative with no tensor
      // form, as tetragamma's): differentiating the row must raise it, never give a number.
      bool raised = false;
      try {
        (void)gradient(
            [&](const Tensor& x) {
              Args a = in.args;
              a[0] = x;
              return sum(it->f(a));
            },
            in.args[0]);
      } catch (const Error&) {
        raised = true;
      }
      EXPECT_TRUE(raised) << "'" << p->name << "' has a pullback but its row is not "
                          << "gradient-checked";
    }
  }
}

TEST(PrimitiveTable, EveryTunedKernelIsExercisedByTheRows) {
  std::vector<Row> rows = all_rows();
  testing::BackendScope scope;
  for (const Row& row : rows)
    for (size_t ci = 0; ci < row.o.cases.size(); ++ci)
      for (DType dtype : row.o.dtypes) {
        Inputs in = make_inputs(row, row.o.cases[ci], dtype, Layout::contiguous, ci);
        (void)row.f(in.args);
      }
  for (const Primitive* p : builtin_primitives()) {
    if (!scope.has_kernel(*p, testing::kTunedRank)) continue;
    EXPECT_GT(scope.kernel_calls(*p, testing::kTunedRank), 0)
        << "the tuned kernel of '" << p->name << "' never ran on the rows' inputs";
  }
}

TEST(BackendScope, ReferenceOnlySkipsTunedKernelsAndRestoresThem) {
  auto x = testing::randn({8, 8}, {.dtype = f32});
  {
    testing::BackendScope scope(testing::Backends::reference);
    (void)fx::tanh(x);
    EXPECT_EQ(scope.kernel_calls(tanh_p, testing::kTunedRank), 0);
    EXPECT_EQ(scope.kernel_calls(tanh_p, kMaxBackends - 1), 1);
    EXPECT_EQ(scope.forward_calls(tanh_p), 1);
  }
  {
    testing::BackendScope scope;
    (void)fx::tanh(x);
    (void)fx::transpose(x);
    EXPECT_EQ(scope.kernel_calls(tanh_p, testing::kTunedRank), 1);
    EXPECT_EQ(scope.forward_calls(permute_p), 1);  // a view: a forward, no kernel
    EXPECT_EQ(scope.kernel_calls(permute_p, testing::kTunedRank), 0);
  }
  EXPECT_THROW(
      {
        testing::BackendScope a;
        testing::BackendScope b;
      },
      Error);
  // Every kernel is back: default dispatch still works and the scope can be opened again.
  EXPECT_TRUE(allclose(fx::tanh(x), fx::tanh(x)));
  testing::BackendScope again;
  (void)fx::exp(x);
  EXPECT_EQ(again.kernel_calls(exp_p, testing::kTunedRank), 1);
}

}  // namespace
}  // namespace fx::rows
