// AllocatorStats::live_bytes / peak_bytes: tensor data alive on this thread and its high-water
// mark since fx::reset_peak_bytes().
#include <gtest/gtest.h>

#include <fluxion/core/storage.hpp>
#include <fluxion/ops.hpp>

TEST(PeakBytes, TracksLiveDataAndItsMaximum) {
  const int64_t base = fx::allocator_stats().live_bytes;
  fx::reset_peak_bytes();
  EXPECT_EQ(fx::allocator_stats().peak_bytes, base);
  {
    fx::Tensor a = fx::zeros({1000}, fx::f64);  // 8000 bytes
    EXPECT_EQ(fx::allocator_stats().live_bytes, base + 8000);
    { fx::Tensor b = fx::zeros({500}, fx::f32); }  // 2000 bytes, freed at once
    EXPECT_EQ(fx::allocator_stats().peak_bytes, base + 10000);
  }
  EXPECT_EQ(fx::allocator_stats().live_bytes, base);
  EXPECT_EQ(fx::allocator_stats().peak_bytes, base + 10000);
  fx::reset_peak_bytes();
  EXPECT_EQ(fx::allocator_stats().peak_bytes, base);
}
