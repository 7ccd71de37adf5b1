// Bad input throws fx::Error naming the op and the offending shapes, identically whether the
// tuned kernels or only the reference backend run, and leaves every input as it was.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

using fx::Tensor;
using Args = std::vector<Tensor>;

struct ErrorRow {
  std::string name;
  Args in;  // checked unchanged after the throw
  std::function<void(const Args&)> f;
  std::vector<std::string> parts;  // every one must appear in the message
};
void PrintTo(const ErrorRow& r, std::ostream* os) { *os << r.name; }

Tensor iota(const fx::Shape& s, fx::DType t = fx::f32) {
  return fx::arange(0, double(s.numel()), 1, t).reshape(s);
}
Tensor idx(std::initializer_list<double> v) { return fx::tensor(v, fx::i64); }

std::vector<ErrorRow> error_rows() {
  const Tensor x23 = iota({2, 3}), x34 = iota({3, 4}), x56 = iota({5, 6});
  const Tensor b2 = fx::ones({2}, fx::boolean), i3 = iota({3}, fx::i64);
  using A = const Args&;
  return {
      // broadcasting
      {"add_broadcast",
       {x23, iota({4})},
       [](A a) { (void)(a[0] + a[1]); },
       {"fx::add", "(2, 3)", "(4,)", "cannot broadcast"}},
      {"mul_broadcast",
       {iota({5, 1, 2}), iota({3, 3})},
       [](A a) { (void)(a[0] * a[1]); },
       {"fx::mul", "(5, 1, 2)", "(3, 3)"}},
      {"where_broadcast",
       {fx::ones({4}, fx::boolean), x23},
       [](A a) { (void)fx::where(a[0], a[1], a[1]); },
       {"fx::where", "(4,)", "(2, 3)"}},
      {"compare_broadcast",
       {x23, iota({2})},
       [](A a) { (void)(a[0] < a[1]); },
       {"fx::lt", "(2, 3)", "(2,)"}},
      // linear algebra
      {"linear_input",
       {iota({4, 6}), x34, iota({3})},
       [](A a) { (void)fx::linear(a[0], a[1], a[2]); },
       {"fx::linear: input (4, 6) does not fit weight (3, 4): the last dimension must be 4"}},
      {"linear_weight",
       {x23, iota({3}), iota({3})},
       [](A a) { (void)fx::linear(a[0], a[1], a[2]); },
       {"fx::linear: weight must be 2-d (out, in), got (3,)"}},
      {"linear_bias",
       {iota({5, 4}), x34, iota({4})},
       [](A a) { (void)fx::linear(a[0], a[1], a[2], fx::Epilogue::relu); },
       {"fx::linear: bias (4,) does not match weight (3, 4) (expected (3,))"}},
      {"linear_undefined_weight",
       {x23},
       [](A a) { (void)fx::linear(a[0], Tensor()); },
       {"fx::linear: undefined weight"}},
      {"matmul_inner",
       {x34, x56},
       [](A a) { (void)fx::matmul(a[0], a[1]); },
       {"fx::matmul: (3, 4) @ (5, 6): inner dimensions 4 and 5 differ"}},
      {"matmul_vector_inner",
       {x34, iota({5})},
       [](A a) { (void)fx::matmul(a[0], a[1]); },
       {"fx::matmul", "(3, 4) @ (5,)", "inner dimensions 4 and 5"}},
      {"matmul_batch",
       {iota({2, 3, 4}), iota({3, 4, 5})},
       [](A a) { (void)fx::matmul(a[0], a[1]); },
       {"fx::matmul", "(2, 3, 4) @ (3, 4, 5)", "batch"}},
      {"matmul_0d",
       {fx::scalar(1), iota({3})},
       [](A a) { (void)fx::matmul(a[0], a[1]); },
       {"fx::matmul", "() @ (3,)"}},
      {"matmul_bool",
       {fx::ones({2, 2}, fx::boolean)},
       [](A a) { (void)fx::matmul(a[0], a[0]); },
       {"fx::matmul", "(2, 2) @ (2, 2)", "bool"}},
      {"dot_lengths",
       {iota({3}), iota({4})},
       [](A a) { (void)fx::dot(a[0], a[1]); },
       {"fx::dot", "(3,)", "(4,)"}},
      // shapes and axes
      {"reshape_numel",
       {x23},
       [](A a) {
         (void)fx::reshape(a[0], fx::Shape{4, 2});
       },
       {"fx::reshape", "(2, 3)", "(4, 2)", "6 elements"}},
      {"reshape_infer",
       {x23},
       [](A a) {
         (void)a[0].reshape({4, -1});
       },
       {"fx::reshape", "(2, 3)", "-1"}},
      {"reshape_two_infer",
       {x23},
       [](A a) {
         (void)a[0].reshape({-1, -1});
       },
       {"fx::reshape", "(2, 3)", "more than one -1"}},
      {"sum_axis", {x23}, [](A a) { (void)fx::sum(a[0], 5); }, {"fx::sum", "axis 5", "(2, 3)"}},
      {"sum_axis_twice",
       {x23},
       [](A a) {
         (void)fx::sum(a[0], {1, -1});
       },
       {"fx::sum", "given twice", "(2, 3)"}},
      {"max_axis", {x23}, [](A a) { (void)fx::max(a[0], -3); }, {"fx::max", "axis -3", "(2, 3)"}},
      {"mean_axis", {x23}, [](A a) { (void)fx::mean(a[0], 2); }, {"fx::mean", "axis 2", "(2, 3)"}},
      {"logsumexp_axis",
       {x23},
       [](A a) { (void)fx::logsumexp(a[0], 2); },
       {"fx::logsumexp", "axis 2", "(2, 3)"}},
      {"sum_squares_axis",
       {x23},
       [](A a) {
         (void)fx::sum_squares(a[0], {0, 2});
       },
       {"fx::sum_squares", "axis 2", "(2, 3)"}},
      {"sum_squares_integer",
       {iota({2, 3}, fx::i64)},
       [](A a) { (void)fx::sum_squares(a[0], 1); },
       {"fx::sum_squares", "floating", "(2, 3)"}},
      {"argmax_axis",
       {x23},
       [](A a) { (void)fx::argmax(a[0], 2); },
       {"fx::argmax", "axis 2", "(2, 3)"}},
      {"argmin_0d", {fx::scalar(1)}, [](A a) { (void)fx::argmin(a[0], 0); }, {"fx::argmin", "()"}},
      {"max_empty",
       {iota({0, 3})},
       [](A a) { (void)fx::max(a[0]); },
       {"fx::max", "(0, 3)", "empty"}},
      {"slice_axis", {x23}, [](A a) { (void)fx::slice(a[0], 2, 0, 1); }, {"fx::slice", "axis 2"}},
      {"slice_step", {x23}, [](A a) { (void)fx::slice(a[0], 1, 0, 1, 0); }, {"fx::slice", "step"}},
      {"select_index",
       {x23},
       [](A a) { (void)fx::select(a[0], 1, -4); },
       {"fx::select", "index -4", "(2, 3)"}},
      {"squeeze_not_one",
       {x23},
       [](A a) { (void)fx::squeeze(a[0], 0); },
       {"fx::squeeze", "axis 0", "(2, 3)"}},
      {"unsqueeze_axis",
       {x23},
       [](A a) { (void)fx::unsqueeze(a[0], 4); },
       {"fx::unsqueeze", "axis 4"}},
      {"flatten_axis", {x23}, [](A a) { (void)fx::flatten(a[0], 3); }, {"fx::flatten", "axis 3"}},
      {"permute_repeat",
       {x23},
       [](A a) {
         (void)fx::permute(a[0], {0, 0});
       },
       {"fx::permute", "(0, 0)", "(2, 3)"}},
      {"permute_count",
       {x23},
       [](A a) { (void)fx::permute(a[0], {0}); },
       {"fx::permute", "(2, 3)"}},
      {"transpose_1d", {i3}, [](A a) { (void)fx::transpose(a[0]); }, {"fx::transpose", "(3,)"}},
      {"expand_shape",
       {x23},
       [](A a) {
         (void)fx::expand(a[0], {4, 3});
       },
       {"fx::expand", "(2, 3)", "(4, 3)"}},
      {"expand_rank",
       {x23},
       [](A a) { (void)fx::expand(a[0], {3}); },
       {"fx::expand", "(2, 3)", "(3,)"}},
      {"sum_to_shape",
       {x23},
       [](A a) { (void)fx::sum_to(a[0], {4}); },
       {"fx::sum_to", "(2, 3)", "(4,)"}},
      {"concat_rank",
       {x23, iota({3})},
       [](A a) {
         (void)fx::concat({a[0], a[1]});
       },
       {"fx::concat", "(2, 3)", "(3,)", "rank"}},
      {"concat_shape",
       {x23, iota({2, 4})},
       [](A a) {
         (void)fx::concat({a[0], a[1]}, 0);
       },
       {"fx::concat", "(2, 3)", "(2, 4)", "axis 0"}},
      {"concat_0d",
       {fx::scalar(1)},
       [](A a) {
         (void)fx::concat({a[0], a[0]});
       },
       {"fx::concat", "0-d"}},
      {"concat_axis",
       {x23},
       [](A a) {
         (void)fx::concat({a[0], a[0]}, 2);
       },
       {"fx::concat", "axis 2"}},
      {"concat_nothing", {}, [](A) { (void)fx::concat({}); }, {"fx::concat", "no tensors"}},
      {"stack_shape",
       {x23, iota({3, 2})},
       [](A a) {
         (void)fx::stack({a[0], a[1]});
       },
       {"fx::stack", "(2, 3)", "(3, 2)"}},
      {"clamp_bounds", {x23}, [](A a) { (void)fx::clamp(a[0], 1, 0); }, {"fx::clamp", "1", "0"}},
      // indexing: out of range (checked by the kernel), wrong dtype or rank
      {"index_select_range",
       {x23, idx({0, 2})},
       [](A a) { (void)fx::index_select(a[0], 0, a[1]); },
       {"fx::index_select", "index 2", "(2, 3)"}},
      {"index_select_negative",
       {x23, idx({-3})},
       [](A a) { (void)fx::index_select(a[0], 0, a[1]); },
       {"fx::index_select", "index -3", "(2, 3)"}},
      {"index_select_i32_range",
       {x23, fx::tensor({1, 7}, fx::i32)},
       [](A a) { (void)fx::index_select(a[0], 1, a[1]); },
       {"fx::index_select", "index 7", "size 3", "(2, 3)"}},
      {"index_select_dtype",
       {x23, fx::tensor({0}, fx::f32)},
       [](A a) { (void)fx::index_select(a[0], 0, a[1]); },
       {"fx::index_select", "i64 or i32", "f32", "(1,)"}},
      {"index_select_rank",
       {x23, fx::zeros({1, 1}, fx::i64)},
       [](A a) { (void)fx::index_select(a[0], 0, a[1]); },
       {"fx::index_select", "(1, 1)"}},
      {"index_select_axis",
       {x23, idx({0})},
       [](A a) { (void)fx::index_select(a[0], 2, a[1]); },
       {"fx::index_select", "axis 2"}},
      {"index_add_range",
       {x23, idx({2}), fx::ones({1, 3})},
       [](A a) { (void)fx::index_add(a[0], 0, a[1], a[2]); },
       {"fx::index_add", "index 2", "(2, 3)"}},
      {"index_add_source",
       {x23, idx({1}), fx::ones({1, 4})},
       [](A a) { (void)fx::index_add(a[0], 0, a[1], a[2]); },
       {"fx::index_add", "(1, 4)", "(2, 3)"}},
      {"gather_range",
       {x23, idx({0, 3}).reshape({1, 2})},
       [](A a) { (void)fx::gather(a[0], 1, a[1]); },
       {"fx::gather", "index 3", "(2, 3)"}},
      {"gather_dtype",
       {x23, fx::zeros({2, 1}, fx::boolean)},
       [](A a) { (void)fx::gather(a[0], 1, a[1]); },
       {"fx::gather", "bool", "(2, 1)"}},
      {"gather_rank",
       {x23, idx({0})},
       [](A a) { (void)fx::gather(a[0], 1, a[1]); },
       {"fx::gather", "(1,)", "(2, 3)"}},
      {"gather_exceeds",
       {x23, fx::zeros({3, 1}, fx::i64)},
       [](A a) { (void)fx::gather(a[0], 1, a[1]); },
       {"fx::gather", "(3, 1)", "(2, 3)"}},
      {"gather_0d",
       {fx::scalar(5), fx::full({}, 7, fx::i64)},
       [](A a) { (void)fx::gather(a[0], 0, a[1]); },
       {"fx::gather", "0-d"}},
      {"scatter_add_range",
       {x23, idx({0, 5}).reshape({1, 2}), fx::ones({1, 2})},
       [](A a) { (void)fx::scatter_add(a[0], 1, a[1], a[2]); },
       {"fx::scatter_add", "index 5", "(2, 3)"}},
      {"scatter_add_shapes",
       {x23, fx::zeros({1, 2}, fx::i64), fx::ones({1, 3})},
       [](A a) { (void)fx::scatter_add(a[0], 1, a[1], a[2]); },
       {"fx::scatter_add", "(1, 2)", "(1, 3)", "(2, 3)"}},
      {"scatter_add_dtype",
       {x23, fx::zeros({1, 2}, fx::f64), fx::ones({1, 2})},
       [](A a) { (void)fx::scatter_add(a[0], 1, a[1], a[2]); },
       {"fx::scatter_add", "f64", "(1, 2)"}},
      // dtypes: bool arithmetic, floating-only ops on integers
      {"bool_add", {b2, b2}, [](A a) { (void)(a[0] + a[1]); }, {"fx::add", "bool", "(2,)"}},
      {"bool_neg", {b2}, [](A a) { (void)(-a[0]); }, {"fx::neg", "bool", "(2,)"}},
      {"bool_times_number", {b2}, [](A a) { (void)(a[0] * 2.0); }, {"mul", "bool", "(2,)"}},
      {"bool_max", {b2}, [](A a) { (void)fx::max(a[0]); }, {"fx::max", "bool", "(2,)"}},
      {"bool_relu", {b2}, [](A a) { (void)fx::relu(a[0]); }, {"fx::relu", "bool", "(2,)"}},
      {"where_condition",
       {x23},
       [](A a) { (void)fx::where(a[0], a[0], a[0]); },
       {"fx::where", "bool", "f32", "(2, 3)"}},
      {"exp_integer", {i3}, [](A a) { (void)fx::exp(a[0]); }, {"fx::exp", "i64", "(3,)"}},
      {"log_integer", {i3}, [](A a) { (void)fx::log(a[0]); }, {"fx::log", "i64", "(3,)"}},
      {"sqrt_integer",
       {fx::zeros({3}, fx::i32)},
       [](A a) { (void)fx::sqrt(a[0]); },
       {"fx::sqrt", "i32", "(3,)"}},
      {"tanh_integer", {i3}, [](A a) { (void)fx::tanh(a[0]); }, {"fx::tanh", "i64", "(3,)"}},
      {"pow_number_integer",
       {i3},
       [](A a) { (void)fx::pow(a[0], 2.0); },
       {"fx::pow", "i64", "(3,)"}},
      {"pow_integers",
       {i3, i3},
       [](A a) { (void)fx::pow(a[0], a[1]); },
       {"fx::pow", "i64", "(3,)"}},
      {"mean_integer", {i3}, [](A a) { (void)fx::mean(a[0]); }, {"fx::mean", "i64", "(3,)"}},
      {"rsqrt_integer", {i3}, [](A a) { (void)fx::rsqrt(a[0]); }, {"fx::rsqrt", "i64", "(3,)"}},
      {"reciprocal_integer",
       {i3},
       [](A a) { (void)fx::reciprocal(a[0]); },
       {"fx::reciprocal", "i64", "(3,)"}},
      // undefined tensors: an error naming the op, never a crash
      {"undefined_tanh", {}, [](A) { (void)fx::tanh(Tensor()); }, {"fx::tanh", "undefined"}},
      {"undefined_add", {x23}, [](A a) { (void)(Tensor() + a[0]); }, {"fx::add", "undefined"}},
      {"undefined_add_number", {}, [](A) { (void)(Tensor() + 1.0); }, {"add", "undefined"}},
      {"undefined_compare_number", {}, [](A) { (void)(Tensor() < 1.0); }, {"fx::lt", "undefined"}},
      {"undefined_eq_number", {}, [](A) { (void)(Tensor() == 1.0); }, {"fx::eq", "undefined"}},
      {"undefined_matmul",
       {x23},
       [](A a) { (void)fx::matmul(a[0], Tensor()); },
       {"fx::matmul", "undefined"}},
      {"undefined_dot", {i3}, [](A a) { (void)fx::dot(Tensor(), a[0]); }, {"fx::dot", "undefined"}},
      {"undefined_sum", {}, [](A) { (void)fx::sum(Tensor()); }, {"fx::sum", "undefined"}},
      {"undefined_mean", {}, [](A) { (void)fx::mean(Tensor()); }, {"fx::mean", "undefined"}},
      {"undefined_max", {}, [](A) { (void)fx::max(Tensor()); }, {"fx::max", "undefined"}},
      {"undefined_logsumexp",
       {},
       [](A) { (void)fx::logsumexp(Tensor()); },
       {"fx::logsumexp", "undefined"}},
      {"undefined_sum_squares",
       {},
       [](A) { (void)fx::sum_squares(Tensor()); },
       {"fx::sum_squares", "undefined"}},
      {"undefined_argmax",
       {},
       [](A) { (void)fx::argmax(Tensor(), 0); },
       {"fx::argmax", "undefined"}},
      {"undefined_sum_to",
       {},
       [](A) { (void)fx::sum_to(Tensor(), {1}); },
       {"fx::sum_to", "undefined"}},
      {"undefined_reshape",
       {},
       [](A) { (void)fx::reshape(Tensor(), fx::Shape{1}); },
       {"fx::reshape", "undefined"}},
      {"undefined_flatten",
       {},
       [](A) { (void)fx::flatten(Tensor()); },
       {"fx::flatten", "undefined"}},
      {"undefined_squeeze",
       {},
       [](A) { (void)fx::squeeze(Tensor(), 0); },
       {"fx::squeeze", "undefined"}},
      {"undefined_unsqueeze",
       {},
       [](A) { (void)fx::unsqueeze(Tensor(), 0); },
       {"fx::unsqueeze", "undefined"}},
      {"undefined_select",
       {},
       [](A) { (void)fx::select(Tensor(), 0, 0); },
       {"fx::select", "undefined"}},
      {"undefined_slice",
       {},
       [](A) { (void)fx::slice(Tensor(), 0, 0, 1); },
       {"fx::slice", "undefined"}},
      {"undefined_transpose",
       {},
       [](A) { (void)fx::transpose(Tensor()); },
       {"fx::transpose", "undefined"}},
      {"undefined_expand",
       {},
       [](A) { (void)fx::expand(Tensor(), {2}); },
       {"fx::expand", "undefined"}},
      {"undefined_concat",
       {x23},
       [](A a) {
         (void)fx::concat({a[0], Tensor()});
       },
       {"fx::concat", "undefined"}},
      {"undefined_stack", {}, [](A) { (void)fx::stack({Tensor()}); }, {"fx::stack", "undefined"}},
      {"undefined_clamp",
       {},
       [](A) { (void)fx::clamp(Tensor(), 0, 1); },
       {"fx::clamp", "undefined"}},
      {"undefined_where",
       {x23},
       [](A a) { (void)fx::where(Tensor(), a[0], a[0]); },
       {"fx::where", "undefined"}},
      {"undefined_astype",
       {},
       [](A) { (void)fx::astype(Tensor(), fx::f64); },
       {"fx::astype", "undefined"}},
      {"undefined_clone", {}, [](A) { (void)Tensor().clone(); }, {"clone", "undefined"}},
      {"undefined_index_select",
       {},
       [](A) { (void)fx::index_select(Tensor(), 0, idx({0})); },
       {"fx::index_select", "undefined"}},
      {"undefined_index",
       {x23},
       [](A a) { (void)fx::index_select(a[0], 0, Tensor()); },
       {"fx::index_select", "undefined"}},
      {"undefined_gather",
       {},
       [](A) { (void)fx::gather(Tensor(), 0, idx({0})); },
       {"fx::gather", "undefined"}},
      {"undefined_scatter_add",
       {x23},
       [](A a) { (void)fx::scatter_add(a[0], 0, idx({0}), Tensor()); },
       {"fx::scatter_add", "undefined"}},
      {"undefined_stop_gradient",
       {},
       [](A) { (void)fx::stop_gradient(Tensor()); },
       {"fx::stop_gradient", "undefined"}},
  };
}

class BadInput : public ::testing::TestWithParam<ErrorRow> {};

// The same message from the default dispatch and from the reference backend alone, and every
// input (values, shape, layout) as it was before the call.
TEST_P(BadInput, ThrowsNamingTheOpAndShapesAndLeavesInputsIntact) {
  const ErrorRow& row = GetParam();
  std::vector<std::vector<double>> before;
  for (const Tensor& t : row.in) before.push_back(fx::to_vector<double>(t));
  std::string messages[2];
  for (int k = 0; k < 2; ++k) {
    fx::testing::BackendScope scope(k == 0 ? fx::testing::Backends::all
                                           : fx::testing::Backends::reference);
    EXPECT_TRUE(fx::testing::throws_mentioning([&] { row.f(row.in); }, row.parts, &messages[k]))
        << (k == 0 ? "default dispatch" : "reference backend") << ": " << messages[k];
  }
  EXPECT_EQ(messages[0], messages[1]);
  for (size_t i = 0; i < row.in.size(); ++i)
    EXPECT_EQ(fx::to_vector<double>(row.in[i]), before[i]) << "input " << i << " changed";
}

INSTANTIATE_TEST_SUITE_P(Ops, BadInput, ::testing::ValuesIn(error_rows()),
                         [](const ::testing::TestParamInfo<ErrorRow>& i) { return i.param.name; });

TEST(Errors, MatmulMessageIsExact) {
  std::string m;
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [] {
        (void)fx::matmul(fx::zeros({3, 4}), fx::zeros({5, 6}));
      },
      {"fx::matmul"}, &m));
  EXPECT_EQ(m, "fx::matmul: (3, 4) @ (5, 6): inner dimensions 4 and 5 differ");
}

TEST(Errors, ScatterOutOfRangeLeavesTheBaseAndItsViewsIntact) {
  // The kernel fails midway through writing its output: the base it copied from is untouched,
  // and so is a strided view of it.
  auto base = fx::testing::randn({4, 6});
  auto view = fx::transpose(base);
  auto before = fx::to_vector<double>(base);
  auto index = fx::tensor({0, 1, 2, 9, 0, 1}, fx::i64).reshape({6, 1});
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)fx::scatter_add(view, 1, index, fx::ones({6, 1}, fx::f64));
      },
      {"fx::scatter_add", "index 9", "(6, 4)"}));
  EXPECT_EQ(fx::to_vector<double>(base), before);
  EXPECT_EQ(view.shape(), (fx::Shape{6, 4}));
  EXPECT_EQ(view.stride(0), 1);
}

TEST(Errors, DifferentiationErrorsNameTheTransformation) {
  auto x = fx::testing::randn({3});
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] { (void)fx::gradient([](const Tensor& x) { return x * 2.0; }, x); },
      {"fx::gradient", "one-element", "(3,)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] { (void)fx::withgradient([](const Tensor& x) { return x * 2.0; }, x); },
      {"fx::withgradient", "(3,)"}));
  EXPECT_TRUE(fx::testing::throws_mentioning(
      [&] {
        (void)fx::gradient([](const Tensor& x) { return fx::sum(x); }, fx::zeros({3}, fx::i64));
      },
      {"fx::gradient", "i64"}));
  auto [y, back] = fx::pullback([](const Tensor& x) { return x * 2.0; }, x);
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { (void)back(fx::zeros({4}, fx::f64)); },
                                             {"fx::pullback", "(4,)", "(3,)"}));
  EXPECT_TRUE(
      fx::testing::throws_mentioning([&] { (void)back(Tensor()); }, {"fx::pullback", "undefined"}));
  // A bad cotangent does not spoil the pullback.
  EXPECT_EQ(fx::to_vector<double>(back(fx::ones({3}, fx::f64))), (std::vector<double>{2, 2, 2}));
}

}  // namespace
