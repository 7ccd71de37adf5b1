// FX_STATE: fields that are state, not parameters. Gradients, trainables and optimisers skip
// them; the full walkers visit them with their names.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fluxion/ad/reverse.hpp>
#include <fluxion/nn/functors.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/optim/rules.hpp>
#include <fluxion/optim/update.hpp>

namespace {

struct Norm {
  fx::Tensor scale, shift;
  fx::Tensor running_mean, steps;
  FX_FIELDS(scale, shift)
  FX_STATE(running_mean, steps)
};

struct Net {
  std::vector<Norm> norms;
  fx::Tensor w;
  FX_FIELDS(norms, w)
};

Norm make_norm(double base) {
  return {fx::full({2}, base, fx::f64), fx::full({2}, base + 1, fx::f64),
          fx::full({2}, base + 2, fx::f64), fx::full({1}, 7, fx::f64)};
}

// Uses the state in the forward pass, as a normalisation layer would.
fx::Tensor loss(const Net& n) {
  fx::Tensor s = fx::sum(n.w * n.w);
  for (const Norm& m : n.norms) s = s + fx::sum((m.scale + m.shift) * m.running_mean);
  return s;
}

std::vector<double> values(const fx::Tensor& t) { return fx::to_vector<double>(t); }

}  // namespace

TEST(StateFields, WalkersSeparateParametersFromState) {
  Net net{{make_norm(0), make_norm(10)}, fx::ones({3}, fx::f64)};
  std::vector<std::string> all, state;
  fx::for_each_named_leaf(net, [&](const std::string& path, fx::Tensor&) { all.push_back(path); });
  fx::for_each_named_state(
      net, [&](const std::string& path, const fx::Tensor&) { state.push_back(path); });
  EXPECT_EQ(all, (std::vector<std::string>{"norms.0.scale", "norms.0.shift", "norms.0.running_mean",
                                           "norms.0.steps", "norms.1.scale", "norms.1.shift",
                                           "norms.1.running_mean", "norms.1.steps", "w"}));
  EXPECT_EQ(state, (std::vector<std::string>{"norms.0.running_mean", "norms.0.steps",
                                             "norms.1.running_mean", "norms.1.steps"}));
  int n_state = 0, n_all = 0;
  fx::for_each_state_tensor(net, [&](fx::Tensor& t) {
    t = t * 2.0;
    ++n_state;
  });  // writable
  fx::for_each_leaf(std::as_const(net), [&](const fx::Tensor&) { ++n_all; });
  EXPECT_EQ(n_state, 4);
  EXPECT_EQ(n_all, 9);
  EXPECT_EQ(values(net.norms[1].running_mean), (std::vector<double>{24, 24}));
  EXPECT_EQ(values(net.norms[1].scale), (std::vector<double>{10, 10}));
  // trainables and the plain walkers see parameters only.
  EXPECT_EQ(fx::trainables(net).size(), 5u);
  EXPECT_EQ(fx::nn::parameter_count(net), 11);
}

TEST(StateFields, GradientLeavesStateUntouchedAndUpdateSkipsIt) {
  Net net{{make_norm(0), make_norm(10)}, fx::ones({3}, fx::f64)};
  const std::vector<double> mean0 = values(net.norms[0].running_mean);
  Net grad = fx::gradient(loss, net);
  // d/dscale = running_mean; the state fields of the gradient are the model's own, unchanged:
  // no gradient was taken with respect to them.
  EXPECT_EQ(values(grad.norms[0].scale), mean0);
  EXPECT_EQ(values(grad.norms[1].shift), (std::vector<double>{12, 12}));
  EXPECT_EQ(values(grad.w), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(values(grad.norms[0].running_mean), mean0);
  // Setting up and stepping an optimiser never touches state, even with a "gradient" there.
  auto opt = fx::optim::setup(fx::optim::Adam{.lr = 0.1}, net);
  EXPECT_EQ(opt.leaves.size(), 5u);
  EXPECT_EQ(opt.paths[2], "norms.1.scale");
  grad.norms[0].running_mean = fx::full({2}, 100.0, fx::f64);
  fx::optim::update(opt, net, grad);
  EXPECT_EQ(values(net.norms[0].running_mean), mean0);
  EXPECT_EQ(values(net.norms[0].steps), (std::vector<double>{7}));
  EXPECT_NE(values(net.norms[0].scale), (std::vector<double>{0, 0}));  // parameters moved
}

TEST(StateFields, AStructWithOnlyStateHasNoParameters) {
  struct Counter {
    fx::Tensor count;
    FX_STATE(count)
  };
  std::vector<Counter> cs{{fx::zeros({1}, fx::f64)}, {fx::ones({1}, fx::f64)}};
  EXPECT_TRUE(fx::trainables(cs).empty());
  std::vector<std::string> names;
  fx::for_each_named_leaf(cs, [&](const std::string& p, const fx::Tensor&) { names.push_back(p); });
  EXPECT_EQ(names, (std::vector<std::string>{"0.count", "1.count"}));
}
