// Typed attributes (fluxion/ops/attrs.hpp): printing, comparing and hashing from the field list,
// a clear error when a rule reads another type, owned copies, and the tape and the graph keeping
// a list attribute (concat's sizes) valid after the caller's vector is gone.
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include <fluxion/fluxion.hpp>
#include <fluxion/testing.hpp>

namespace {

using fx::Attrs;
using fx::Tensor;

std::string printed(Attrs a) {
  std::ostringstream os;
  os << a;
  return os.str();
}

TEST(Attrs, PrintEveryFieldByName) {
  const fx::SliceAttrs s{.axis = 1, .start = 2, .length = 3, .step = 2, .shape = {4, 9}};
  EXPECT_EQ(printed(s), "axis=1 start=2 length=3 step=2 shape=(4, 9)");
  const std::vector<int64_t> sizes = {2, 5};
  EXPECT_EQ(printed(fx::ConcatAttrs{0, sizes}), "axis=0 sizes=[2,5]");
  EXPECT_EQ(printed(fx::DTypeAttrs{fx::f64}), "dtype=f64");
  EXPECT_EQ(printed(Attrs()), "");
}

TEST(Attrs, CompareAndHashFieldByField) {
  const fx::ReduceAttrs a{0b101, true, {2, 3, 4}}, b{0b101, true, {2, 3, 4}},
      c{0b101, false, {2, 3, 4}};
  EXPECT_TRUE(Attrs(a) == Attrs(b));
  EXPECT_EQ(fx::hash(a), fx::hash(b));
  EXPECT_FALSE(Attrs(a) == Attrs(c));
  EXPECT_NE(fx::hash(a), fx::hash(c));
  // Lists compare by content, not by where they point.
  const std::vector<int64_t> x = {1, 2, 3}, y = {1, 2, 3}, z = {1, 2, 4};
  EXPECT_TRUE(Attrs(fx::ConcatAttrs{1, x}) == Attrs(fx::ConcatAttrs{1, y}));
  EXPECT_EQ(fx::hash(fx::ConcatAttrs{1, x}), fx::hash(fx::ConcatAttrs{1, y}));
  EXPECT_FALSE(Attrs(fx::ConcatAttrs{1, x}) == Attrs(fx::ConcatAttrs{1, z}));
  // Another type never compares equal, even with the same bytes.
  EXPECT_FALSE(Attrs(fx::ScalarAttrs{0}) == Attrs(fx::ScalarPairAttrs{0, 0}));
  EXPECT_TRUE(Attrs() == Attrs());
}

TEST(Attrs, ReadingAnotherTypeIsANamedError) {
  const fx::ScalarAttrs s{2};
  const Attrs a = s;
  EXPECT_EQ(a.get<fx::ScalarAttrs>().s, 2);
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { (void)a.get<fx::ReduceAttrs>(); },
                                             {"ReduceAttrs", "ScalarAttrs"}));
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { (void)Attrs().get<fx::AxisAttrs>(); },
                                             {"AxisAttrs", "none"}));
}

TEST(Attrs, AStoreOwnsItsListAfterTheSourceIsGone) {
  fx::AttrStore store;
  {
    std::vector<int64_t> sizes = {7, 8, 9};
    store.assign(fx::ConcatAttrs{2, sizes});
    sizes.assign({0, 0, 0});
  }
  fx::AttrStore copy = store;
  store = fx::AttrStore();
  EXPECT_EQ(printed(copy.view()), "axis=2 sizes=[7,8,9]");
  EXPECT_TRUE(store.view().empty());
}

// concat's sizes are a list attribute: the tape must keep its own copy, since the public op's
// vector is gone by the time the backward pass reads them.
TEST(Attrs, TheTapeKeepsAListAttributeForTheBackwardPass) {
  Tensor a = fx::randn({2, 3}, fx::f64), b = fx::randn({4, 3}, fx::f64);
  auto f = [](const Tensor& a, const Tensor& b) {
    Tensor c = fx::concat({a, b * 2.0, a}, 0);
    return fx::sum(c * c);
  };
  auto [ga, gb] = fx::gradient(f, a, b);
  EXPECT_TRUE(fx::allclose(ga, a * 4.0, 1e-12, 1e-12));
  EXPECT_TRUE(fx::allclose(gb, b * 8.0, 1e-12, 1e-12));
}

TEST(Attrs, AGraphPrintsAndReplaysTypedAttributes) {
  Tensor x = fx::randn({3, 4});
  fx::Graph g = fx::trace(
      [](const Tensor& x) {
        return fx::sum(fx::concat({x, fx::slice(x, 1, 1, 3)}, 1), {1});
      },
      x);
  const std::string text = g.to_string();
  EXPECT_NE(text.find("{axis=1 sizes=[4,2]}"), std::string::npos) << text;
  EXPECT_NE(text.find("axis=1 start=1 length=2 step=1"), std::string::npos) << text;
  EXPECT_NE(text.find("axes=2 keepdims=0"), std::string::npos) << text;
  Tensor y = fx::randn({3, 4});
  EXPECT_TRUE(fx::allclose(g(y)[0], fx::sum(fx::concat({y, fx::slice(y, 1, 1, 3)}, 1), {1})));
}

}  // namespace
