// Storage: a reference-counted buffer on one device, shared by every view of a tensor.
//
//   fx::Storage* s = fx::Storage::create(1024, fx::Device::cpu);   // refs == 1
//   s->retain(); s->release(); s->release();                         // freed (back to the cache)
//
// Buffers up to kInlineBytes live inside the Storage object itself, so scalar-sized tensors cost
// one pooled object and no allocator call. Larger buffers come from a per-thread caching allocator
// (size classes, reused across steps) so a steady-state training loop does not call malloc.
// `version` counts in-place writes; AD uses it to detect overwritten values.
//
// Devices: a kind and an ordinal (`fx::Device::cpu`, `fx::cuda(1)`, `fx::Device::meta`). Each
// kind's buffers come from its `Allocator` (registered by its backend); the CPU's is the caching
// allocator below, called directly because it is on every op's path. A `meta` storage holds no
// data at all: meta tensors carry shape and dtype only, and ops on them run shape rules only.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fx {

enum class DeviceKind : uint8_t { cpu, cuda, meta };
inline constexpr int kNumDeviceKinds = 3;

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  uint8_t ordinal = 0;

  static const Device cpu;   // the host
  static const Device meta;  // shapes and dtypes only, no data
  friend constexpr bool operator==(Device, Device) = default;
  bool has_data() const { return kind != DeviceKind::meta; }
};
inline constexpr Device Device::cpu{DeviceKind::cpu, 0};
inline constexpr Device Device::meta{DeviceKind::meta, 0};
constexpr Device cuda(int ordinal = 0) { return {DeviceKind::cuda, uint8_t(ordinal)}; }

const char* device_kind_name(DeviceKind k);
std::string device_name(Device d);  // "cpu", "cuda:1", "meta"
// Parses device_name's output ("cuda" means "cuda:0"); throws fx::Error otherwise.
Device parse_device(const std::string& name);

// Where a device kind's buffers come from. A backend registers one per kind it serves; the CPU's
// is built in. allocate(0) may return any pointer that deallocate accepts.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes, Device device) = 0;
  virtual void deallocate(void* data, size_t nbytes, Device device) = 0;
};
// Installs `a` (not owned; must outlive every storage it made) for a kind other than cpu and meta.
void register_allocator(DeviceKind kind, Allocator* a);

// What an interpreter attaches to a storage that holds no data of its own: fx::vmap's batched
// value (the tensor with the batch axis) hangs here, so that every handle on the logical value
// (views made by AD's bookkeeping included) finds it. Owned and deleted by the storage.
struct StorageExtra {
  virtual ~StorageExtra() = default;
};

struct Storage {
  static constexpr size_t kInlineBytes = 128;  // 16 doubles: an LSTM cell's gate row

  std::atomic<int32_t> refs{1};
  Device device = Device::cpu;
  uint64_t version = 0;
  size_t nbytes = 0;
  void* data = nullptr;
  StorageExtra* extra = nullptr;  // only on a placeholder (create_placeholder)
  alignas(64) unsigned char inline_buf[kInlineBytes];

  static Storage* create(size_t nbytes, Device device = Device::cpu);
  // A storage on `device` with no data that owns `extra`: the handle of a value whose data lives
  // elsewhere (a value batched by fx::vmap). Reading its data is an fx::Error.
  static Storage* create_placeholder(Device device, StorageExtra* extra);
  void retain() { refs.fetch_add(1, std::memory_order_relaxed); }
  void release() {
    // Sole owner: no atomic read-modify-write needed (see TensorImpl::release).
    if (refs.load(std::memory_order_acquire) == 1 ||
        refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
      destroy(this);
  }

 private:
  static void destroy(Storage* s);
};

// Statistics of the caching allocator of the calling thread (for tests and benchmarks).
struct AllocatorStats {
  uint64_t system_allocs = 0;  // calls that reached the system allocator
  uint64_t cache_hits = 0;     // requests served from the cache
  size_t cached_bytes = 0;     // bytes held for reuse
  // Bytes of tensor data alive (created here, not yet destroyed) and their high-water mark since
  // the last reset_peak_bytes(). Per thread: a buffer freed on another thread is counted there.
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
  // Storages made on the meta device (they hold no bytes and never reach any allocator).
  uint64_t meta_storages = 0;
};
AllocatorStats allocator_stats();
void reset_peak_bytes();  // peak_bytes = live_bytes (measure the peak of one computation)
bool allocator_caches();  // false in sanitizer builds, where every buffer goes to malloc/free
void empty_cache();       // returns every cached buffer of this thread to the system

}  // namespace fx
