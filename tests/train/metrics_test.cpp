#include <gtest/gtest.h>

#include <vector>

#include <fluxion/data/dataloader.hpp>
#include <fluxion/ops.hpp>
#include <fluxion/train/metrics.hpp>

TEST(Metrics, AccuracyCountsArgmaxMatchesForLabelsAndOnehot) {
  // A "model" that returns its input: scores are the rows themselves.
  auto identity = [](const fx::Tensor& x) { return x; };
  fx::Tensor scores = fx::from_vector(std::vector<float>{0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0},
                                      {4, 3});  // argmax 1, 0, 2, 1
  fx::Tensor labels = fx::tensor({1, 0, 0, 1}, fx::i64);
  EXPECT_DOUBLE_EQ(fx::train::accuracy(identity, scores, labels, 3), 0.75);
  EXPECT_DOUBLE_EQ(fx::train::accuracy(identity, scores, fx::data::onehot(labels, 3)), 0.75);
  EXPECT_THROW(fx::train::count_equal(fx::tensor({1}, fx::i64), fx::tensor({1, 2}, fx::i64)),
               fx::Error);
  fx::train::RunningMean m;
  m.add(1, 3);
  m.add(5, 1);
  EXPECT_DOUBLE_EQ(m.value(), 2.0);
}
