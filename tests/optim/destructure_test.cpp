// fx::optim::destructure: a model's trainables as one flat vector, and back, differentiably.
#include <gtest/gtest.h>

#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/functors.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/optim/destructure.hpp>
#include <fluxion/testing.hpp>

namespace {

struct Layer {
  fx::Tensor w, b, count;  // count: integer state, not trainable
  double scale = 2;
  fx::Tensor running;
  FX_FIELDS(w, b, count)
  FX_STATE(running)
};

Layer make_layer(fx::Generator& gen) {
  return {fx::randn({2, 3}, gen, fx::f64), fx::randn({3}, gen, fx::f64), fx::tensor({5}, fx::i64),
          3.0, fx::ones({3}, fx::f64)};
}

fx::Tensor loss(const std::vector<Layer>& m, const fx::Tensor& x) {
  fx::Tensor h = x;
  for (const Layer& l : m) h = fx::tanh(fx::matmul(h, l.w) * l.scale + l.b + l.running);
  return fx::sum(fx::square(h));
}

std::vector<double> values(const fx::Tensor& t) { return fx::to_vector<double>(t); }

}  // namespace

TEST(Destructure, FlatVectorRoundTrips) {
  fx::Generator gen(1);
  std::vector<Layer> m{make_layer(gen), make_layer(gen)};
  m[1].w = fx::randn({3, 3}, gen, fx::f64).t();  // a transposed (strided) leaf
  auto [flat, rebuild] = fx::optim::destructure(m);
  EXPECT_EQ(flat.shape(), fx::Shape({6 + 3 + 9 + 3}));
  EXPECT_EQ(flat.dtype(), fx::f64);
  std::vector<double> expect;
  for (const fx::Tensor& t : fx::trainables(m))
    for (double v : values(t)) expect.push_back(v);
  EXPECT_EQ(values(flat), expect);
  auto m2 = rebuild(flat * 2.0);
  EXPECT_EQ(values(m2[1].w), values(m[1].w * 2.0));
  EXPECT_EQ(m2[1].w.shape(), m[1].w.shape());
  EXPECT_EQ(values(m2[0].count), (std::vector<double>{5}));  // not trainable: copied
  EXPECT_EQ(values(m2[0].running), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(m2[0].scale, 3.0);
  EXPECT_TRUE(fx::testing::throws_mentioning([&] { rebuild(fx::zeros({4}, fx::f64)); },
                                             {"destructure", "21"}));
}

TEST(Destructure, MixedPrecisionFlattensToF64AndRestoresDtypes) {
  std::vector<fx::Tensor> m{fx::tensor({1.5, 2.5}, fx::f32), fx::tensor({3.0}, fx::f64)};
  auto [flat, rebuild] = fx::optim::destructure(m);
  EXPECT_EQ(flat.dtype(), fx::f64);
  auto back = rebuild(flat);
  EXPECT_EQ(back[0].dtype(), fx::f32);
  EXPECT_EQ(values(back[0]), (std::vector<double>{1.5, 2.5}));
}

TEST(Destructure, GradientThroughRebuildIsTheFlattenedStructuralGradient) {
  fx::Generator gen(2);
  std::vector<Layer> m{make_layer(gen), make_layer(gen)};
  m[1].w = fx::randn({3, 3}, gen, fx::f64);
  fx::Tensor x = fx::randn({4, 2}, gen, fx::f64);
  auto [flat, rebuild] = fx::optim::destructure(m);
  fx::Tensor g_flat = fx::gradient([&](const fx::Tensor& v) { return loss(rebuild(v), x); }, flat);
  auto g_struct = fx::gradient([&](const std::vector<Layer>& mm) { return loss(mm, x); }, m);
  std::vector<double> expect;
  for (const fx::Tensor& t : fx::trainables(g_struct))
    for (double v : values(t)) expect.push_back(v);
  ASSERT_EQ(g_flat.numel(), int64_t(expect.size()));
  auto got = values(g_flat);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expect[i], 1e-12) << i;
  // And against finite differences of the flat function.
  EXPECT_TRUE(
      fx::testing::gradcheck([&](const fx::Tensor& v) { return loss(rebuild(v), x); }, flat));
}
