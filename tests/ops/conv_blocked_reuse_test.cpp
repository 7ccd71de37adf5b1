// The CPU convolution's reuse of blocked activations (src/backend/cpu/conv.cpp): the weight
// gradient takes x from the forward's reorder and dy from the data gradient's instead of
// reordering them again. These tests run the f32 oneDNN kernels where a reuse could go wrong (two
// inputs of one shape through one layer, an in-place update between the calls, another dy of the
// same shape, other calls in between) and compare each result with the reference backend's loops
// on the same tensors.
#include <gtest/gtest.h>

#include <fluxion/fluxion.hpp>
#include <fluxion/testing.hpp>

namespace {

using fx::Tensor;
using fx::testing::Backends;
using fx::testing::BackendScope;

// A depthwise layer (oneDNN's blocked layouts for x and dy) and a plain one.
struct Case {
  fx::Shape x, w;
  fx::ConvGeometry g;
};
const Case kCases[] = {
    {{4, 32, 9, 9}, {32, 1, 3, 3}, {.padding = {1}, .groups = 32}},
    {{3, 16, 8, 8}, {32, 16, 3, 3}, {.padding = {1}}},
};

Tensor reference(const std::function<Tensor()>& f) {
  BackendScope scope(Backends::reference);
  return f();
}

void expect_close(const Tensor& got, const Tensor& want, const char* what) {
  EXPECT_TRUE(fx::allclose(got, want, 1e-4, 1e-4)) << what;
}

TEST(ConvBlockedReuse, TwoInputsThroughOneLayerGetTheirOwnWeightGradients) {
  fx::Generator gen(1);
  for (const Case& c : kCases) {
    Tensor x1 = fx::randn(c.x, gen), x2 = fx::randn(c.x, gen), w = fx::randn(c.w, gen);
    Tensor y_shape = fx::conv(x1, w, Tensor(), c.g);
    Tensor u1 = fx::randn(y_shape.shape(), gen), u2 = fx::randn(y_shape.shape(), gen);
    // Both forwards share one primitive (one buffer for the blocked x): the second overwrites
    // the first's, and the first's weight gradient must not read it.
    auto loss = [&](const Tensor& w) {
      return fx::sum(fx::conv(x1, w, Tensor(), c.g) * u1) +
             fx::sum(fx::conv(x2, w, Tensor(), c.g) * u2);
    };
    Tensor g = fx::gradient(loss, w);
    expect_close(g, reference([&] { return fx::gradient(loss, w); }), "two inputs");
    // And each alone, in either order of the two.
    Tensor g2 =
        fx::gradient([&](const Tensor& w) { return fx::sum(fx::conv(x2, w, {}, c.g) * u2); }, w);
    Tensor g1 =
        fx::gradient([&](const Tensor& w) { return fx::sum(fx::conv(x1, w, {}, c.g) * u1); }, w);
    expect_close(g1 + g2, g, "the sum of the two alone");
    // The first's pullback run while the buffer holds the second's x.
    auto f = [&](const Tensor& x) {
      return fx::pullback([&](const Tensor& w) { return fx::conv(x, w, {}, c.g); }, w);
    };
    auto [y1, back1] = f(x1);
    auto [y2, back2] = f(x2);
    expect_close(std::move(back1)(u1), g1, "x1's pullback after x2's forward");
    expect_close(std::move(back2)(u2), g2, "then x2's");
  }
}

TEST(ConvBlockedReuse, AnInPlaceUpdateOfXAfterTheForwardIsSeen) {
  fx::Generator gen(2);
  for (const Case& c : kCases) {
    Tensor x = fx::randn(c.x, gen), w = fx::randn(c.w, gen);
    Tensor dy = fx::randn(fx::conv(x, w, Tensor(), c.g).shape(), gen);
    // A recorded forward keeps x's blocked copy ...
    (void)fx::gradient([&](const Tensor& w) { return fx::sum(fx::conv(x, w, {}, c.g) * dy); }, w);
    (void)fx::pullback([&](const Tensor& w) { return fx::conv(x, w, {}, c.g); }, w);
    x += fx::ones_like(x);  // ... which this update makes stale
    Tensor got = fx::conv_backward_weights(x, dy, w.shape(), c.g);
    expect_close(got, reference([&] { return fx::conv_backward_weights(x, dy, w.shape(), c.g); }),
                 "x updated in place");
  }
}

TEST(ConvBlockedReuse, TheDataGradientsDyIsReusedOnlyForThatDy) {
  fx::Generator gen(3);
  for (const Case& c : kCases) {
    Tensor x = fx::randn(c.x, gen), w = fx::randn(c.w, gen);
    const fx::Shape ys = fx::conv(x, w, Tensor(), c.g).shape();
    Tensor dy = fx::randn(ys, gen), other = fx::randn(ys, gen);
    auto weights = [&](const Tensor& d) {
      return reference([&] { return fx::conv_backward_weights(x, d, w.shape(), c.g); });
    };
    // Another dy of the same shape.
    (void)fx::conv_backward_data(dy, w, x.shape(), c.g);
    expect_close(fx::conv_backward_weights(x, other, w.shape(), c.g), weights(other), "other dy");
    // The same dy, updated in place in between.
    (void)fx::conv_backward_data(dy, w, x.shape(), c.g);
    dy *= fx::full_like(dy, 2.0);
    expect_close(fx::conv_backward_weights(x, dy, w.shape(), c.g), weights(dy), "dy updated");
    // Other convolutions in between.
    (void)fx::conv_backward_data(dy, w, x.shape(), c.g);
    Tensor z = fx::conv(fx::randn(c.x, gen), w, Tensor(), c.g);
    (void)fx::conv_backward_data(other, w, x.shape(), c.g);
    expect_close(fx::conv_backward_weights(x, dy, w.shape(), c.g), weights(dy), "calls between");
    // And the reuse itself: the pair a pullback makes.
    (void)fx::conv_backward_data(dy, w, x.shape(), c.g);
    expect_close(fx::conv_backward_weights(x, dy, w.shape(), c.g), weights(dy), "reused");
  }
}

}  // namespace
