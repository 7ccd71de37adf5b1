// The convolution family against libtorch: conv1d/2d/3d (stride, asymmetric padding via a
// zero pad, dilation, groups), conv_transpose2d with output padding, max_pool2d, avg_pool2d,
// the adaptive pools, nearest and bilinear upsampling, pixel_shuffle and F.pad's modes. Each
// case compares the forward and the gradients of <f(inputs), r> for a random r with every
// input, in f32 (fluxion's oneDNN kernels against libtorch's) and in f64 (the reference loops).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn.hpp>
#include <fluxion/ops.hpp>

namespace {

namespace F = torch::nn::functional;
using FxFn = std::function<fx::Tensor(const std::vector<fx::Tensor>&)>;
using TorchFn = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

torch::Tensor to_torch(const fx::Tensor& t, torch::Dtype dt) {
  auto v = fx::to_vector<double>(t);
  std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
  return torch::from_blob(v.data(), dims, torch::kDouble).clone().to(dt);
}

std::vector<double> values(const torch::Tensor& t) {
  auto c = t.to(torch::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// max |a - b| / (atol + rtol |b|) <= 1, with the shapes equal.
::testing::AssertionResult close(const std::string& what, const std::vector<double>& a,
                                 const std::vector<double>& b, double tol) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure()
           << what << ": " << a.size() << " vs " << b.size() << " elements";
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= tol * (1 + std::abs(b[i]))))
      return ::testing::AssertionFailure()
             << what << "[" << i << "]: fluxion " << a[i] << ", libtorch " << b[i];
  return ::testing::AssertionSuccess();
}

void compare(const std::vector<fx::Shape>& shapes, const FxFn& f, const TorchFn& g) {
  for (fx::DType dt : {fx::f32, fx::f64}) {
    SCOPED_TRACE(dt == fx::f32 ? "f32" : "f64");
    const torch::Dtype tdt = dt == fx::f32 ? torch::kFloat : torch::kDouble;
    const double tol = dt == fx::f32 ? 2e-5 : 1e-11;
    fx::Generator gen(17);
    std::vector<fx::Tensor> xs;
    std::vector<torch::Tensor> ts;
    for (const fx::Shape& s : shapes) {
      xs.push_back(fx::randn(s, gen, dt));
      ts.push_back(to_torch(xs.back(), tdt).requires_grad_());
    }
    const fx::Tensor y = f(xs);
    const torch::Tensor ty = g(ts);
    ASSERT_EQ(std::vector<int64_t>(y.shape().begin(), y.shape().end()), ty.sizes().vec());
    EXPECT_TRUE(close("forward", fx::to_vector<double>(y), values(ty), tol));
    const fx::Tensor r = fx::randn(y.shape(), gen, dt);
    auto grads =
        fx::gradient([&](const std::vector<fx::Tensor>& in) { return fx::sum(f(in) * r); }, xs);
    (ty * to_torch(r, tdt)).sum().backward();
    for (size_t i = 0; i < xs.size(); ++i)
      EXPECT_TRUE(close("gradient " + std::to_string(i), fx::to_vector<double>(grads[i]),
                        values(ts[i].grad()), tol));
  }
}

TEST(ConvOracle, Conv1dDilatedStrided) {
  compare(
      {{2, 4, 11}, {6, 2, 3}, {6}},
      [](const auto& a) {
        return fx::conv(a[0], a[1], a[2],
                        {.stride = {2}, .padding = {2}, .dilation = {2}, .groups = 2});
      },
      [](const auto& a) { return torch::conv1d(a[0], a[1], a[2], 2, 2, 2, 2); });
}

TEST(ConvOracle, Conv2dAsymmetricPadding) {
  // torch pads asymmetrically only through F.pad: (left W, right W, top H, bottom H).
  compare(
      {{2, 3, 9, 8}, {5, 3, 3, 2}, {5}},
      [](const auto& a) {
        return fx::conv(a[0], a[1], a[2],
                        {.stride = {2, 1}, .padding = {1, 0}, .padding_hi = {2, 1}});
      },
      [](const auto& a) {
        auto p = F::pad(a[0], F::PadFuncOptions({0, 1, 1, 2}));
        return torch::conv2d(p, a[1], a[2], {2, 1});
      });
}

TEST(ConvOracle, Conv2dGroupsLarge) {
  compare(
      {{4, 8, 16, 16}, {16, 4, 3, 3}, {16}},
      [](const auto& a) { return fx::conv(a[0], a[1], a[2], {.padding = {1}, .groups = 2}); },
      [](const auto& a) { return torch::conv2d(a[0], a[1], a[2], 1, 1, 1, 2); });
}

TEST(ConvOracle, Conv3d) {
  compare(
      {{1, 2, 5, 6, 5}, {3, 2, 2, 3, 2}, {3}},
      [](const auto& a) {
        return fx::conv(a[0], a[1], a[2], {.stride = {1, 2, 1}, .padding = {1, 0, 1}});
      },
      [](const auto& a) {
        return torch::conv3d(a[0], a[1], a[2], {1, 2, 1}, {1, 0, 1});
      });
}

TEST(ConvOracle, ConvTranspose2dOutputPadding) {
  compare(
      {{2, 4, 5, 4}, {4, 3, 3, 3}, {6}},
      [](const auto& a) {
        return fx::conv_transpose(a[0], a[1], a[2], {.stride = {2}, .padding = {1}, .groups = 2},
                                  {1});
      },
      [](const auto& a) { return torch::conv_transpose2d(a[0], a[1], a[2], 2, 1, 1, 2); });
}

TEST(ConvOracle, MaxPool2d) {
  compare(
      {{2, 3, 9, 8}},
      [](const auto& a) {
        return fx::max_pool(a[0], {.kernel = {3, 2}, .stride = {2, 2}, .padding = {1, 1}});
      },
      [](const auto& a) {
        return torch::max_pool2d(a[0], {3, 2}, {2, 2}, {1, 1});
      });
}

TEST(ConvOracle, AvgPool2d) {
  for (bool include : {true, false}) {
    SCOPED_TRACE(include ? "count_include_pad" : "exclude padding");
    compare(
        {{2, 3, 9, 8}},
        [&](const auto& a) {
          return fx::avg_pool(
              a[0],
              {.kernel = {3, 3}, .stride = {2, 1}, .padding = {1}, .count_include_pad = include});
        },
        [&](const auto& a) {
          return torch::avg_pool2d(a[0], {3, 3}, {2, 1}, {1, 1}, false, include);
        });
  }
}

TEST(ConvOracle, AdaptivePools) {
  compare(
      {{2, 3, 7, 9}},
      [](const auto& a) {
        return fx::nn::AdaptiveMeanPool({3, 4})(a[0]);
      },
      [](const auto& a) {
        return torch::adaptive_avg_pool2d(a[0], {3, 4});
      });
  compare(
      {{2, 3, 7, 9}},
      [](const auto& a) {
        return fx::nn::AdaptiveMaxPool({3, 4})(a[0]);
      },
      [](const auto& a) {
        return std::get<0>(torch::adaptive_max_pool2d(a[0], {3, 4}));
      });
  compare(
      {{2, 3, 8, 4}},
      [](const auto& a) {
        return fx::nn::AdaptiveMeanPool({4, 2})(a[0]);
      },
      [](const auto& a) {
        return torch::adaptive_avg_pool2d(a[0], {4, 2});
      });
}

TEST(ConvOracle, UpsampleAndPixelShuffle) {
  compare(
      {{2, 3, 4, 5}},
      [](const auto& a) {
        return fx::nn::Upsample({2, 3})(a[0]);
      },
      [](const auto& a) {
        return F::interpolate(a[0], F::InterpolateFuncOptions()
                                        .scale_factor(std::vector<double>{2, 3})
                                        .mode(torch::kNearest));
      });
  compare(
      {{2, 3, 4, 5}},
      [](const auto& a) {
        return fx::nn::Upsample({2, 3}, fx::nn::UpsampleMode::bilinear)(a[0]);
      },
      [](const auto& a) {
        return F::interpolate(a[0], F::InterpolateFuncOptions()
                                        .scale_factor(std::vector<double>{2, 3})
                                        .mode(torch::kBilinear)
                                        .align_corners(false));
      });
  compare(
      {{2, 12, 3, 4}}, [](const auto& a) { return fx::nn::PixelShuffle(2)(a[0]); },
      [](const auto& a) { return torch::pixel_shuffle(a[0], 2); });
}

TEST(ConvOracle, PadModes) {
  using fx::nn::PadMode;
  struct Mode {
    PadMode ours;
    F::PadFuncOptions::mode_t theirs;
  };
  for (auto [ours, theirs] : std::vector<Mode>{{PadMode::zeros, torch::kConstant},
                                               {PadMode::reflect, torch::kReflect},
                                               {PadMode::replicate, torch::kReplicate},
                                               {PadMode::circular, torch::kCircular}}) {
    SCOPED_TRACE(int(ours));
    // Ours lists (low, high) from the first padded axis; torch from the last axis.
    compare(
        {{2, 3, 5, 6}},
        [&](const auto& a) {
          return fx::nn::pad(a[0], {1, 2, 3, 1}, ours);
        },
        [&](const auto& a) {
          return F::pad(a[0], F::PadFuncOptions({3, 1, 1, 2}).mode(theirs));
        });
  }
  compare(
      {{2, 3, 5}},
      [](const auto& a) {
        return fx::nn::pad(a[0], {2, 1}, PadMode::constant, 0.5);
      },
      [](const auto& a) {
        return F::pad(a[0], F::PadFuncOptions({2, 1}).value(0.5));
      });
}

}  // namespace
