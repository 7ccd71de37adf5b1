#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <fluxion/nn/chain.hpp>
#include <fluxion/nn/dense.hpp>
#include <fluxion/nn/outputsize.hpp>
#include <fluxion/nn/scale.hpp>
#include <fluxion/nn/show.hpp>
#include <fluxion/ops.hpp>

namespace {

// A normalisation-like layer with non-trainable state and no fx_describe: printed by its type
// name and tensor shapes.
struct Norm {
  fx::Tensor scale = fx::ones({3});
  fx::Tensor running_mean = fx::zeros({3});
  FX_FIELDS(scale)
  FX_STATE(running_mean)
  fx::Tensor operator()(const fx::Tensor& x) const { return (x - running_mean) * scale; }
};

// A block that holds a sub-layer and a tensor of its own.
struct Gated {
  fx::nn::Dense inner = fx::nn::Dense(3, 3);
  fx::Tensor gate = fx::ones({1});
  FX_FIELDS(inner, gate)
};

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST(Show, ChainListsEachLayerWithItsCountAndTheTotal) {
  auto model = fx::nn::Chain(fx::nn::Dense(3, 4, fx::relu), fx::nn::Dense(4, 2));
  // Dense(3 => 4): 12 + 4 parameters; Dense(4 => 2): 8 + 2; 26 f32 values are 104 bytes.
  const std::string expected =
      "Chain(\n"
      "  Dense(3 => 4, relu),  # 16 parameters\n"
      "  Dense(4 => 2),        # 10 parameters\n"
      ")                       # Total: 4 arrays, 26 parameters, 104 bytes\n";
  EXPECT_EQ(fx::nn::summary(model), expected);
  std::ostringstream os;
  os << model;
  EXPECT_EQ(os.str(), expected);
}

TEST(Show, NestedChainsFunctionsStateAndUserStructs) {
  auto model = fx::nn::Chain(
      fx::nn::Chain(fx::nn::Dense(2, 3, fx::tanh, /*bias=*/false)), fx::Activation(fx::softmax),
      [](const fx::Tensor& x) { return x * 2.0; }, Norm{});
  EXPECT_EQ(fx::nn::summary(model),
            "Chain(\n"
            "  Chain(\n"
            "    Dense(2 => 3, tanh; bias=false),    # 6 parameters\n"
            "  ),\n"
            "  softmax,\n"
            "  <lambda>,\n"
            "  Norm(scale=(3,), running_mean=(3,)),  # 3 parameters, plus 3 non-trainable\n"
            ")                                       # Total: 2 trainable arrays, 9 parameters, "
            "plus 1 non-trainable array, 3 values, 48 bytes\n");
}

TEST(Show, BlockWithItsOwnTensorAndSingleLayers) {
  EXPECT_EQ(fx::nn::summary(Gated{}),
            "Gated(\n"
            "  Dense(3 => 3),  # 12 parameters\n"
            "  gate (1,),      # 1 parameter\n"
            ")                 # Total: 3 arrays, 13 parameters, 52 bytes\n");
  EXPECT_EQ(fx::nn::summary(fx::nn::Dense(3, 4, fx::gelu)),
            "Dense(3 => 4, gelu)  # 16 parameters\n");
  EXPECT_EQ(fx::nn::summary(fx::nn::Scale(5, fx::sigmoid, false)),
            "Scale(5, sigmoid; bias=false)  # 5 parameters\n");
  std::vector<fx::nn::Dense> layers = {fx::nn::Dense(1, 1), fx::nn::Dense(1, 2)};
  EXPECT_EQ(fx::nn::summary(layers),
            "Dense(1 => 1),  # 2 parameters\n"
            "Dense(1 => 2),  # 4 parameters\n"
            "# Total: 4 arrays, 6 parameters, 24 bytes\n");
}

TEST(Show, IntegerTensorsAreCountedAsNonTrainable) {
  struct Counter {
    fx::Tensor w = fx::ones({2});
    fx::Tensor seen = fx::zeros({1}, fx::i64);
    FX_FIELDS(w, seen)
  };
  EXPECT_EQ(fx::nn::summary(Counter{}),
            "Counter(w=(2,), seen=(1,) i64)  # 2 parameters, plus 1 non-trainable\n");
}

TEST(Show, FlagsNaNAndInfByField) {
  auto w = fx::tensor({1.0, kNaN, 3.0, 4.0}).reshape({2, 2});
  auto b = fx::tensor({kInf, 0.0});
  auto model = fx::nn::Chain(fx::nn::Dense(w, b), fx::nn::Dense(2, 1));
  std::string s = fx::nn::summary(model);
  EXPECT_NE(s.find("Dense(2 => 2),  # 6 parameters  (NaN in weight, Inf in bias)\n"),
            std::string::npos)
      << s;
  // The second layer is finite: its line carries no flag.
  EXPECT_NE(s.find("Dense(2 => 1),  # 3 parameters\n"), std::string::npos) << s;

  // Both in one tensor, -Inf too; and in non-trainable state.
  auto both = fx::nn::Dense(fx::tensor({kNaN, -kInf}).reshape({1, 2}));
  EXPECT_EQ(fx::nn::summary(both),
            "Dense(2 => 1; bias=false)  # 2 parameters  (NaN in weight, Inf in weight)\n");
  Norm norm;
  norm.running_mean = fx::tensor({0.0, kNaN, 0.0});
  EXPECT_NE(fx::nn::summary(norm).find("(NaN in running_mean)"), std::string::npos);

  std::string table = fx::nn::parameter_table(model);
  EXPECT_NE(table.find("layers.0.weight  (2, 2)  4  NaN\n"), std::string::npos) << table;
  EXPECT_NE(table.find("layers.0.bias    (2,)    2  Inf\n"), std::string::npos) << table;
}

TEST(Show, MetaModelIsCountedWithoutReadingValues) {
  auto model = fx::nn::Chain(fx::nn::Dense(3, 4, fx::relu), fx::nn::Dense(4, 2), Norm{});
  auto meta = fx::to(model, fx::Device::meta);
  ASSERT_EQ(std::get<0>(meta.layers).weight.device(), fx::Device::meta);
  ASSERT_EQ(std::get<2>(meta.layers).running_mean.device(), fx::Device::meta);
  // Same text as on the CPU: counts and sizes come from shapes; nothing is read (reading a meta
  // tensor throws).
  EXPECT_EQ(fx::nn::summary(meta), fx::nn::summary(model));
  EXPECT_NE(fx::nn::summary(meta).find("Total: 5 trainable arrays, 29 parameters, plus 1 "
                                       "non-trainable array, 3 values, 128 bytes"),
            std::string::npos)
      << fx::nn::summary(meta);
  EXPECT_NO_THROW(fx::nn::parameter_table(meta));
  // outputsize runs the model on meta: the state must have moved too (a CPU running_mean would
  // meet a meta input and throw).
  auto stateful = fx::nn::Chain(fx::nn::Dense(3, 3), Norm{});
  EXPECT_EQ(fx::nn::outputsize(stateful, {5, 3}), (fx::Shape{5, 3}));
}

TEST(Show, ParameterTableListsPathsStateAndTotal) {
  auto model = fx::nn::Chain(fx::nn::Dense(784, 256, fx::relu), fx::nn::Dense(256, 10), Norm{});
  std::string s = fx::nn::parameter_table(model);
  EXPECT_EQ(s,
            "layers.0.weight        (256, 784)  200704\n"
            "layers.0.bias          (256,)      256\n"
            "layers.1.weight        (10, 256)   2560\n"
            "layers.1.bias          (10,)       10\n"
            "layers.2.scale         (3,)        3\n"
            "layers.2.running_mean  (3,)        3 state\n"
            "Total: 5 trainable arrays, 203533 parameters, plus 1 non-trainable array, "
            "3 values, 795.062 KiB\n");
}

TEST(Show, ActivationNames) {
  EXPECT_EQ(fx::activation_name(fx::relu), "relu");
  EXPECT_EQ(fx::activation_name(fx::Activation(fx::leakyrelu)), "leakyrelu");
  EXPECT_EQ(fx::activation_name([](const fx::Tensor& x) { return x; }), "");
}
