// The group and layer normalisation kernels (src/nn/norm_kernels.cpp) split their groups or rows
// across the OpenMP team from 32768 values: on one thread and on two they give the same bits (the
// backward sums its per-sample or per-block terms of dscale and dbias in a fixed order whatever
// the split), and both match the composed form. The layers' own tests use inputs below that
// size, which run on one thread.
#include <gtest/gtest.h>
#include <omp.h>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/testing.hpp>

namespace {

struct Threads {
  int saved = omp_get_max_threads();
  explicit Threads(int n) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(saved); }
};

bool same_bits(const fx::Tensor& a, const fx::Tensor& b) {
  return fx::to_vector<double>(a) == fx::to_vector<double>(b);
}

TEST(NormThreads, GroupNormGivesTheSameBitsOnOneAndTwoThreads) {
  for (auto dtype : {fx::f32, fx::f64}) {
    for (int64_t groups : {int64_t(4), int64_t(16)}) {  // group norm, and instance norm's groups
      SCOPED_TRACE(std::string(fx::dtype_name(dtype)) + " groups " + std::to_string(groups));
      fx::Generator gen(11);
      auto gn = fx::nn::GroupNorm(16, groups, fx::identity, true, 1e-5, dtype);
      gn.scale = fx::randn({16}, gen, dtype), gn.bias = fx::randn({16}, gen, dtype);
      auto x = fx::randn({9, 16, 15, 17}, gen, dtype) * 2.0 + 0.5;  // 36720 values
      auto u = fx::randn(x.shape(), gen, dtype);
      auto loss = [&](const fx::nn::GroupNorm& m, const fx::Tensor& x) {
        return fx::sum(m(x) * u);
      };
      auto run = [&](int threads) {
        Threads th(threads);
        auto [gm, gx] = fx::gradient(loss, gn, x);
        return std::vector<fx::Tensor>{gn(x), gx, gm.scale, gm.bias};
      };
      const auto one = run(1), two = run(2);
      for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(same_bits(one[i], two[i])) << i;
      // And the values themselves, against the composed form.
      auto composed = [&](const fx::nn::GroupNorm& m, const fx::Tensor& x) {
        return fx::sum(
            fx::nn::detail::group_normalise_composed(x, groups, 16, 1e-5, m.scale, m.bias) * u);
      };
      auto [gm, gx] = fx::gradient(composed, gn, x);
      const double tol = dtype == fx::f64 ? 1e-10 : 1e-4;
      EXPECT_TRUE(fx::allclose(two[1], gx, tol, tol));
      EXPECT_TRUE(fx::allclose(two[2], gm.scale, tol, 10 * tol));
      EXPECT_TRUE(fx::allclose(two[3], gm.bias, tol, 10 * tol));
    }
  }
}

TEST(NormThreads, LayerNormGivesTheSameBitsOnOneAndTwoThreads) {
  for (auto dtype : {fx::f32, fx::f64}) {
    for (bool affine : {true, false}) {
      SCOPED_TRACE(std::string(fx::dtype_name(dtype)) + (affine ? " affine" : " plain"));
      fx::Generator gen(12);
      auto ln = fx::nn::LayerNorm(96, fx::identity, affine, 1e-5, dtype);
      if (affine) ln.scale = fx::randn({96}, gen, dtype), ln.bias = fx::randn({96}, gen, dtype);
      auto x = fx::randn({5, 83, 96}, gen, dtype) * 2.0 - 0.5;  // 415 rows: 7 blocks of 64
      auto u = fx::randn(x.shape(), gen, dtype);
      auto loss = [&](const fx::nn::LayerNorm& m, const fx::Tensor& x) {
        return fx::sum(m(x) * u);
      };
      auto run = [&](int threads) {
        Threads th(threads);
        auto [gm, gx] = fx::gradient(loss, ln, x);
        std::vector<fx::Tensor> out{ln(x), gx};
        if (affine) out.push_back(gm.scale), out.push_back(gm.bias);
        return out;
      };
      const auto one = run(1), two = run(2);
      for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(same_bits(one[i], two[i])) << i;
      auto composed = [&](const fx::nn::LayerNorm& m, const fx::Tensor& x) {
        return fx::sum(m.composed(x, 96) * u);
      };
      auto [gm, gx] = fx::gradient(composed, ln, x);
      const double tol = dtype == fx::f64 ? 1e-10 : 1e-4;
      EXPECT_TRUE(fx::allclose(two[1], gx, tol, tol));
      if (affine) {
        EXPECT_TRUE(fx::allclose(two[2], gm.scale, tol, 10 * tol));
        EXPECT_TRUE(fx::allclose(two[3], gm.bias, tol, 10 * tol));
      }
    }
  }
}

}  // namespace
