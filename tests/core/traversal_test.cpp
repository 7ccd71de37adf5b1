// fx::zip_leaves, the one lockstep traversal, and fx::zip_tensors, the same walk with only the
// tensor leaves passed on: which leaves each visits, in which order, and the errors for
// structures that do not match.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fluxion/core/leaves.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

struct Inner {
  fx::Tensor w;
  double scale = 2;
  std::string name = "inner";
  FX_FIELDS(w, scale, name)
};

struct Outer {
  std::vector<Inner> layers;
  std::optional<fx::Tensor> bias;
  std::map<std::string, fx::Tensor> extra;
  std::tuple<int, fx::Tensor> pair;
  FX_FIELDS(layers, bias, extra, pair)
};

Outer make(double base) {
  auto t = [&](double v) { return fx::full({2}, base + v, fx::f64); };
  return Outer{{Inner{t(1)}, Inner{t(2)}}, t(3), {{"a", t(4)}, {"b", t(5)}}, {7, t(6)}};
}

double first(const fx::Tensor& t) { return fx::to_vector<double>(t)[0]; }

}  // namespace

TEST(Traversal, ZipTensorsVisitsOnlyTensorsInFieldOrderAndInLockstep) {
  Outer x = make(0), y = make(10);
  std::vector<double> xs, ys;
  fx::zip_tensors(
      [&](const fx::Tensor& a, const fx::Tensor& b) {
        xs.push_back(first(a));
        ys.push_back(first(b));
      },
      x, y);
  EXPECT_EQ(xs, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(ys, (std::vector<double>{11, 12, 13, 14, 15, 16}));
}

TEST(Traversal, ZipLeavesAlsoVisitsNumbersAndStrings) {
  Outer x = make(0);
  int tensors = 0, doubles = 0, strings = 0, ints = 0;
  fx::zip_leaves(
      [&](auto& leaf) {
        using L = std::remove_cvref_t<decltype(leaf)>;
        if constexpr (std::is_same_v<L, fx::Tensor>) ++tensors;
        else if constexpr (std::is_same_v<L, double>) ++doubles;
        else if constexpr (std::is_same_v<L, std::string>) ++strings;
        else if constexpr (std::is_same_v<L, int>) ++ints;
      },
      x);
  EXPECT_EQ(tensors, 6);
  EXPECT_EQ(doubles, 2);
  EXPECT_EQ(strings, 2);
  EXPECT_EQ(ints, 1);
  // zip_tensors writes through the same walk: each tensor replaced, the numbers untouched.
  fx::zip_tensors([](fx::Tensor& t) { t = t * 2.0; }, x);
  EXPECT_EQ(first(x.layers[1].w), 4);
  EXPECT_EQ(first(std::get<1>(x.pair)), 12);
  EXPECT_EQ(x.layers[0].scale, 2);
}

TEST(Traversal, MismatchedStructuresThrowNamingTheWalk) {
  Outer x = make(0), y = make(0);
  auto noop = [](auto&...) {};
  y.layers.pop_back();
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::zip_tensors(noop, x, y); },
                                             {"zip_leaves", "sizes 2 and 1"}));
  y = make(0);
  y.bias.reset();
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::zip_tensors(noop, x, y); },
                                             {"zip_leaves", "optional"}));
  y = make(0);
  y.extra.erase("b");
  y.extra["c"] = fx::zeros({2}, fx::f64);
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { fx::zip_leaves(noop, x, y); },
                                             {"zip_leaves", "map key"}));
}
