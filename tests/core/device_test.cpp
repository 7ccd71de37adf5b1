// Devices: names, the meta device (shapes without data), fx::to, allocator registration and the
// error for inputs on different devices.
#include <gtest/gtest.h>

#include <cstdlib>

#include <fluxion/fluxion.hpp>

namespace fx {
namespace {

TEST(Device, NamesAndParsing) {
  EXPECT_EQ(device_name(Device::cpu), "cpu");
  EXPECT_EQ(device_name(Device::meta), "meta");
  EXPECT_EQ(device_name(cuda(1)), "cuda:1");
  EXPECT_EQ(parse_device("cuda:3"), cuda(3));
  EXPECT_EQ(parse_device("cuda"), cuda(0));
  EXPECT_EQ(parse_device("meta"), Device::meta);
  EXPECT_NE(cuda(0), cuda(1));
  EXPECT_THROW(parse_device("tpu"), Error);
  EXPECT_THROW(parse_device("cuda:x"), Error);
}

TEST(Device, MetaTensorsCarryShapesAndAllocateNoData) {
  const AllocatorStats before = allocator_stats();
  Tensor a = zeros({1000, 1000}, f32, Device::meta);
  Tensor b = randn({1000, 1000}).astype(f64);  // real data, for the comparison below
  const AllocatorStats mid = allocator_stats();
  Tensor m = to(b, Device::meta);
  Tensor c = matmul(a, transpose(m.astype(f32))) + 1.0;
  Tensor s = sum(exp(c), 1);
  const AllocatorStats after = allocator_stats();
  EXPECT_EQ(after.live_bytes, mid.live_bytes) << "meta ops allocated data";
  EXPECT_GT(after.meta_storages, before.meta_storages);
  EXPECT_EQ(s.device(), Device::meta);
  EXPECT_EQ(s.shape(), (Shape{1000}));
  EXPECT_EQ(s.dtype(), f32);
  EXPECT_THROW(s.item(), Error);
  EXPECT_THROW(to_vector<float>(s), Error);
  EXPECT_THROW(to(s, Device::cpu), Error);  // no data to copy
  std::ostringstream os;
  os << s;
  EXPECT_NE(os.str().find("meta"), std::string::npos);
}

TEST(Device, GradientsOnMetaTensorsGiveShapes) {
  Tensor w = ones({4, 3}, f32, Device::meta);
  Tensor g = gradient([](const Tensor& v) { return sum(tanh(v) * v); }, w);
  EXPECT_EQ(g.device(), Device::meta);
  EXPECT_EQ(g.shape(), w.shape());
}

TEST(Device, ModelsMoveAndOutputsizeNeedsNoData) {
  Generator gen(1);
  auto model = nn::Chain(nn::Dense(784, 128, relu, gen), nn::Dense(128, 10, identity, gen));
  auto meta = to(model, Device::meta);
  EXPECT_EQ(std::get<0>(meta.layers).weight.device(), Device::meta);
  EXPECT_EQ(std::get<0>(model.layers).weight.device(), Device::cpu);
  const AllocatorStats before = allocator_stats();
  EXPECT_EQ(nn::outputsize(model, {32, 784}), (Shape{32, 10}));
  EXPECT_EQ(allocator_stats().live_bytes, before.live_bytes);
  EXPECT_THROW(nn::outputsize(model, {32, 100}), Error);  // wrong feature count: the shape rule
}

// A stand-in backend's allocator (host memory posing as cuda) to exercise registration and the
// mixed-device error without a GPU.
class HostPosingAsCuda : public Allocator {
 public:
  void* allocate(size_t n, Device) override {
    ++live;
    return std::malloc(n ? n : 1);
  }
  void deallocate(void* p, size_t, Device) override {
    --live;
    std::free(p);
  }
  int live = 0;
};

TEST(Device, AllocatorRegistrationAndMixedDeviceErrors) {
  EXPECT_THROW(Tensor::empty({2}, f32, cuda(0)), Error);  // no backend in this build
  EXPECT_THROW(to(ones({2}), cuda(0)), Error);
  HostPosingAsCuda fake;
  register_allocator(DeviceKind::cuda, &fake);
  {
    Tensor g = Tensor::empty({2, 3}, f32, cuda(1));
    EXPECT_EQ(fake.live, 1);
    EXPECT_EQ(g.device(), cuda(1));
    try {
      add(ones({2, 3}), g);
      ADD_FAILURE() << "expected fx::Error";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("fx::add"), std::string::npos) << m;
      EXPECT_NE(m.find("cuda:1"), std::string::npos) << m;
      EXPECT_NE(m.find("cpu"), std::string::npos) << m;
    }
    EXPECT_THROW(to(g, Device::cpu), Error);  // no transfer registered
  }
  EXPECT_EQ(fake.live, 0);
  register_allocator(DeviceKind::cuda, nullptr);
  EXPECT_THROW(register_allocator(DeviceKind::cpu, &fake), Error);
}

}  // namespace
}  // namespace fx
