// <fluxion/fluxion.hpp> alone gives all of fluxion: this file includes nothing else of it and uses
// one name from every public header (scripts/check_headers.sh checks that each is reachable).
#include <gtest/gtest.h>

#include <fluxion/fluxion.hpp>

namespace {

struct Affine {
  fx::Tensor w, b;
  FX_FIELDS(w, b)  // core/fields.hpp
};

TEST(Umbrella, OneNameFromEveryPublicHeader) {
  // core: dtype, error, shape, storage, tensor
  EXPECT_STREQ(fx::dtype_name(fx::f64), "f64");
  EXPECT_THROW(fx::detail::fail("umbrella"), fx::Error);
  EXPECT_EQ(fx::normalize_index(-1, 0, fx::Shape{3}, "umbrella"), 2);
  fx::Storage* s = fx::Storage::create(16, fx::Device::cpu);
  s->release();
  fx::Tensor x = fx::tensor({0.5, -1.0, 2.0}, fx::f64);

  // ops: create, elementwise, reduce, view, index, linalg, complex, fft, inplace, primitives
  fx::Tensor y = fx::zeros({3}, fx::f64);
  y += fx::select(fx::matmul(x.reshape({1, 3}), fx::ones({3, 3}, fx::f64)), 0, 0);
  EXPECT_FALSE(fx::any(fx::isnan(y)).item<bool>());
  EXPECT_EQ(fx::gather(x, 0, fx::tensor({-1}, fx::i64)).item(), 2.0);
  EXPECT_EQ(fx::abs(fx::fft(fx::complex(x, x))).shape(), x.shape());
  EXPECT_FALSE(fx::builtin_primitives().empty());
  EXPECT_STREQ(fx::tanh_p.name, "tanh");  // primitive.hpp's Primitive, through primitives.hpp

  // ad: reverse, forward, tape, custom, checkpoint, anomaly, scalar AD and its helpers
  auto f = [](const fx::Tensor& v) { return fx::sum(fx::tanh(v)); };
  fx::Tensor g = fx::gradient(f, x);
  EXPECT_EQ(g.shape(), x.shape());
  auto [fy, dfy] = fx::jvp(f, x, fx::ones_like(x));
  EXPECT_EQ(dfy.ndim(), 0);
  EXPECT_GT(fx::ad::tape_stats().nodes_recorded, 0u);  // ad/tape.hpp: the gradient above recorded
  auto twice = fx::custom_rule(
      "twice", [](const fx::Tensor& v) { return v * 2.0; },
      [](const fx::Tensor&, const fx::Tensor&, const fx::Tensor& dy) { return dy * 2.0; });
  EXPECT_TRUE(fx::allclose(fx::gradient([&](const fx::Tensor& v) { return fx::sum(twice(v)); }, x),
                           fx::full_like(x, 2.0)));
  EXPECT_TRUE(fx::allclose(fx::checkpointed(f, x), f(x)));
  {
    fx::detect_anomaly anomaly;
    EXPECT_TRUE(fx::anomaly_detection_enabled());
  }
  EXPECT_DOUBLE_EQ(fx::gradient([](auto t) { return t * t; }, 3.0), 6.0);  // scalar
  EXPECT_DOUBLE_EQ(fx::nth_derivative<2>([](auto t) { return t * t * t; }, 1.0), 6.0);
  fx::Dual<double, 1> d(2.0);
  EXPECT_DOUBLE_EQ(fx::value(d * d), 4.0);
  std::vector<double> a{1, 2}, b{3, 4};
  EXPECT_DOUBLE_EQ(fx::dot_product(a, b), 11.0);  // scalar_reduce
  EXPECT_DOUBLE_EQ(fx::preaccumulated_sum(3, [](size_t i) { return double(i); }), 3.0);
  auto zz = fx::derivative_holomorphic([](auto z) { return z * z; }, std::complex<double>(1, 1));
  EXPECT_DOUBLE_EQ(zz.real(), 2.0);  // complex_scalar

  // nn: layers, activations, losses, init, functors
  fx::Generator gen(1);
  auto model =
      fx::nn::Chain(fx::nn::Dense(3, 4, fx::relu, gen), fx::nn::Dense(4, 2, fx::identity, gen));
  EXPECT_EQ(fx::nn::parameter_count(model), 3 * 4 + 4 + 4 * 2 + 2);
  EXPECT_EQ(fx::nn::glorot_uniform({2, 3}, gen).shape(), (fx::Shape{2, 3}));
  fx::Tensor batch = fx::testing::randn({5, 3}, {.seed = 3});  // testing/helpers
  fx::Tensor labels = fx::tensor({0, 1, 1, 0, 1}, fx::i64);
  auto [loss, grad] = fx::withgradient(
      [&](const auto& m) { return fx::logitcrossentropy(m(batch), labels); }, model);
  EXPECT_TRUE(std::isfinite(loss.item()));
  EXPECT_EQ(fx::softmax(batch).shape(), batch.shape());

  // optim: rules, update, the per-element loop
  auto opt = fx::optim::setup(fx::optim::Adam(1e-3), model);
  fx::optim::update(opt, model, grad);
  fx::Tensor p = fx::ones({2}), dp = fx::ones({2});
  fx::optim::foreach_element("umbrella", p, dp, [](auto& v, auto dv) { v -= dv; });
  EXPECT_EQ(fx::to_vector<float>(p), (std::vector<float>{0, 0}));

  // data and train
  fx::data::Dataset ds{batch, labels};
  fx::data::DataLoader loader(ds, {.batch = 2});
  EXPECT_EQ(loader.size(), 3);
  const int64_t rows[] = {-1};
  EXPECT_EQ(fx::data::take_rows(labels, rows).item(), 1.0);
  EXPECT_STREQ(fx::data::kFashionMnistDir, "/usr/share/datasets/fashion-mnist");  // idx.hpp
  EXPECT_THROW(fx::data::read_gmm("/nonexistent/gmm.txt"), fx::Error);            // adbench.hpp
  double acc = fx::train::accuracy(model, batch, labels);
  EXPECT_GE(acc, 0.0);
  fx::train::RunningMean mean;
  mean.add(2.0, 1.0);
  EXPECT_DOUBLE_EQ(mean.value(), 2.0);
  static_assert(std::is_class_v<fx::train::ProgressBar>);  // progress.hpp
  auto [dl, dg] = fx::train::data_parallel_withgradient(
      [](const auto& m, const fx::Tensor& xb, const fx::Tensor& yb) {
        return fx::logitcrossentropy(m(xb), yb);
      },
      model, batch, labels);
  EXPECT_TRUE(std::isfinite(dl.item()));

  // testing: gradcheck and backend scopes
  EXPECT_TRUE(fx::testing::gradcheck(f, x));
  fx::testing::BackendScope scope(fx::testing::Backends::reference);
  (void)fx::tanh(x);
  EXPECT_EQ(scope.kernel_calls(fx::tanh_p, fx::testing::kTunedRank), 0);
  (void)Affine{};
}

}  // namespace
