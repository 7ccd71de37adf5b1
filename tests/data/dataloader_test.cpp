#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include <fluxion/data/dataloader.hpp>
#include <fluxion/ops.hpp>

namespace {

// x row i is (10 i, 10 i + 1, 10 i + 2); y[i] = i, so a batch shows which samples it holds and
// whether rows stayed paired with their labels.
struct Toy {
  fx::Tensor x, y;
  explicit Toy(int64_t n) {
    std::vector<float> xs;
    for (int64_t i = 0; i < n; ++i)
      for (int j = 0; j < 3; ++j) xs.push_back(float(10 * i + j));
    x = fx::from_vector(xs, {n, 3});
    y = fx::arange(n, fx::i64);
  }
};

// Labels of every batch of one epoch, batch by batch; checks x/y pairing on the way.
std::vector<std::vector<int64_t>> epoch(fx::data::DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto [x, y] : loader) {
    auto ys = fx::to_vector<int64_t>(y);
    auto xs = fx::to_vector<float>(x);
    EXPECT_EQ(x.shape(), (fx::Shape{int64_t(ys.size()), 3}));
    for (size_t k = 0; k < ys.size(); ++k) EXPECT_EQ(xs[3 * k + 2], float(10 * ys[k] + 2));
    out.push_back(ys);
  }
  return out;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& bs) {
  std::vector<int64_t> all;
  for (auto& b : bs) all.insert(all.end(), b.begin(), b.end());
  return all;
}

std::vector<size_t> sizes(const std::vector<std::vector<int64_t>>& bs) {
  std::vector<size_t> s;
  for (auto& b : bs) s.push_back(b.size());
  return s;
}

}  // namespace

TEST(DataLoader, KeepsThePartialLastBatchInOrder) {
  Toy t(10);
  fx::data::DataLoader loader(t.x, t.y, {.batch = 4});
  EXPECT_EQ(loader.size(), 3);
  auto bs = epoch(loader);
  EXPECT_EQ(sizes(bs), (std::vector<size_t>{4, 4, 2}));
  std::vector<int64_t> want(10);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(flat(bs), want);
}

TEST(DataLoader, DropLastDropsOnlyAPartialBatch) {
  Toy t(10);
  fx::data::DataLoader loader(t.x, t.y, {.batch = 4, .drop_last = true});
  EXPECT_EQ(loader.size(), 2);
  EXPECT_EQ(sizes(epoch(loader)), (std::vector<size_t>{4, 4}));
  fx::data::DataLoader exact(t.x, t.y, {.batch = 5, .drop_last = true});
  EXPECT_EQ(sizes(epoch(exact)), (std::vector<size_t>{5, 5}));
  fx::data::DataLoader too_big(t.x, t.y, {.batch = 11, .drop_last = true});
  EXPECT_EQ(too_big.size(), 0);
  EXPECT_TRUE(epoch(too_big).empty());
}

TEST(DataLoader, ShuffledEpochsCoverEverySampleOnceAndDiffer) {
  Toy t(103);
  fx::data::DataLoader loader(t.x, t.y, {.batch = 16, .shuffle = true, .seed = 7});
  std::vector<int64_t> prev;
  for (int e = 0; e < 3; ++e) {
    auto bs = epoch(loader);
    EXPECT_EQ(sizes(bs).back(), 103u % 16);
    auto all = flat(bs);
    EXPECT_NE(all, prev);
    prev = all;
    std::sort(all.begin(), all.end());
    for (int64_t i = 0; i < 103; ++i) ASSERT_EQ(all[size_t(i)], i);
  }
  EXPECT_EQ(loader.epoch(), 3);
}

TEST(DataLoader, ShuffleIsDeterministicPerSeedAndEpoch) {
  Toy t(50);
  fx::data::DataLoader a(t.x, t.y, {.batch = 8, .shuffle = true, .seed = 1});
  fx::data::DataLoader b(t.x, t.y, {.batch = 8, .shuffle = true, .seed = 1});
  fx::data::DataLoader c(t.x, t.y, {.batch = 8, .shuffle = true, .seed = 2});
  auto a0 = flat(epoch(a)), a1 = flat(epoch(a));
  EXPECT_EQ(a0, flat(epoch(b)));
  EXPECT_EQ(a1, flat(epoch(b)));
  EXPECT_NE(a0, flat(epoch(c)));
  std::vector<int64_t> identity(50);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(a0, identity);
  // Resuming at epoch 1 reproduces epoch 1 without replaying epoch 0.
  fx::data::DataLoader r(t.x, t.y, {.batch = 8, .shuffle = true, .seed = 1});
  r.set_epoch(1);
  EXPECT_EQ(flat(epoch(r)), a1);
}

TEST(DataLoader, BatchesAreFreshCopies) {
  Toy t(6);
  for (auto [x, y] : fx::data::DataLoader(t.x, t.y, {.batch = 6})) {
    EXPECT_FALSE(x.same_storage(t.x));
    x.data<float>()[0] = -1;
  }
  EXPECT_EQ(fx::to_vector<float>(t.x)[0], 0.0f);
}

TEST(DataLoader, TakesADatasetAndStridedOrHigherRankInputs) {
  // x as a transposed view (not contiguous), y one-hot (2-d), images 4-d.
  fx::Tensor xt = fx::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {2, 3}).t();  // (3, 2)
  fx::Tensor y = fx::data::onehot(fx::tensor({2, 0, 1}, fx::i64), 3);
  fx::data::DataLoader loader(fx::data::Dataset{xt, y}, {.batch = 2});
  std::vector<float> xs;
  std::vector<int64_t> ys;
  for (auto [x, yb] : loader) {
    for (float v : fx::to_vector<float>(x)) xs.push_back(v);
    for (int64_t v : fx::to_vector<int64_t>(fx::data::onecold(yb))) ys.push_back(v);
  }
  EXPECT_EQ(xs, (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(ys, (std::vector<int64_t>{2, 0, 1}));

  fx::Tensor img = fx::arange(0, 5 * 2 * 3 * 3, 1).reshape({5, 2, 3, 3});
  fx::data::DataLoader il(img, fx::arange(5, fx::i64), {.batch = 2, .shuffle = true, .seed = 3});
  for (auto [x, yb] : il) {
    auto ids = fx::to_vector<int64_t>(yb);
    auto v = fx::to_vector<float>(x);
    ASSERT_EQ(x.shape()[1], 2);
    for (size_t k = 0; k < ids.size(); ++k) EXPECT_EQ(v[18 * k + 17], float(18 * ids[k] + 17));
  }
}

TEST(DataLoader, BadInputsThrow) {
  Toy t(4);
  EXPECT_THROW(fx::data::DataLoader(t.x, fx::arange(5, fx::i64)), fx::Error);
  EXPECT_THROW(fx::data::DataLoader(t.x, t.y, {.batch = 0}), fx::Error);
  EXPECT_THROW(fx::data::DataLoader(fx::scalar(1), fx::scalar(1)), fx::Error);
  EXPECT_THROW(fx::data::DataLoader(t.x, fx::Tensor()), fx::Error);
  fx::data::DataLoader ok(t.x, t.y, {.batch = 2});
  EXPECT_THROW(ok.batch(2), fx::Error);
  try {
    fx::data::DataLoader(t.x, fx::arange(5, fx::i64));
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("(4, 3)"), std::string::npos) << e.what();
  }
}

TEST(DataLoader, EmptyDataGivesNoBatches) {
  fx::data::DataLoader loader(fx::zeros({0, 3}), fx::zeros({0}, fx::i64), {.shuffle = true});
  EXPECT_EQ(loader.size(), 0);
  EXPECT_TRUE(epoch(loader).empty());
}

TEST(OneHot, RoundTripsThroughOnecold) {
  fx::Tensor labels = fx::tensor({3, 0, 9, 9, 1}, fx::i64);
  fx::Tensor h = fx::data::onehot(labels, 10);
  EXPECT_EQ(h.shape(), (fx::Shape{5, 10}));
  EXPECT_EQ(h.dtype(), fx::f32);
  EXPECT_EQ(fx::sum(h).item(), 5.0);
  EXPECT_EQ(fx::to_vector<float>(h)[3], 1.0f);
  EXPECT_EQ(fx::to_vector<int64_t>(fx::data::onecold(h)), fx::to_vector<int64_t>(labels));
  fx::Tensor l32 = fx::from_vector(std::vector<int32_t>{1, 0, 2, 2}, {2, 2});
  fx::Tensor h32 = fx::data::onehot(l32, 3);  // any leading shape
  EXPECT_EQ(h32.shape(), (fx::Shape{2, 2, 3}));
  EXPECT_EQ(fx::to_vector<int64_t>(fx::data::onecold(h32)), (std::vector<int64_t>{1, 0, 2, 2}));
}

TEST(OneHot, OutOfRangeLabelsAndFloatLabelsThrow) {
  try {
    fx::data::onehot(fx::tensor({1, 10}, fx::i64), 10);
    ADD_FAILURE();
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("label 10 at index 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fx::data::onehot(fx::tensor({-1}, fx::i64), 10), fx::Error);
  EXPECT_THROW(fx::data::onehot(fx::tensor({1.0}), 10), fx::Error);
}

TEST(OneCold, TakesTheFirstMaximumAndReadsViews) {
  fx::Tensor s = fx::from_vector(std::vector<double>{1, 5, 5, -1, -2, -3}, {2, 3});
  EXPECT_EQ(fx::to_vector<int64_t>(fx::data::onecold(s)), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(fx::to_vector<int64_t>(fx::data::onecold(s.t())), (std::vector<int64_t>{0, 0, 0}));
  fx::Tensor n = fx::from_vector(std::vector<float>{1, NAN, 3}, {1, 3});
  EXPECT_EQ(fx::data::onecold(n).item(), 1);
  EXPECT_EQ(fx::data::onecold(fx::tensor({0.5, 2.5})).ndim(), 0);
}
