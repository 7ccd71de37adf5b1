// Pools for TensorImpl/Storage objects and a per-thread caching allocator for data buffers.
//
// Why per thread: the hot path (one small op) must not take a lock. A buffer freed on another
// thread simply joins that thread's cache. Sanitizer builds define FLUXION_NO_POOL so that every
// object goes straight to malloc/free and ASan sees each use-after-free.
#include <cstdlib>
#include <new>

#include "fluxion/core/error.hpp"
#include "fluxion/core/storage.hpp"
#include "fluxion/core/tensor.hpp"

namespace fx {
namespace {

constexpr size_t kAlign = 64;
constexpr int kNumClasses = 48;                      // size classes 2^6 .. 2^53
constexpr size_t kMaxCachedBytes = size_t(1) << 31;  // per thread
constexpr size_t kMaxPooledObjects = 1 << 16;

struct FreeNode {
  FreeNode* next;
};

// Plain-old-data so thread_local access needs no guard; cached memory of a finished thread is
// reclaimed by the OS at exit.
struct ThreadCache {
  FreeNode* bins[kNumClasses];
  size_t cached_bytes;
  FreeNode* impls;
  size_t nimpls;
  FreeNode* storages;
  size_t nstorages;
  AllocatorStats stats;
};
thread_local ThreadCache tc;

int size_class(size_t n) {
  int c = 0;
  size_t cap = kAlign;
  while (cap < n) {
    cap <<= 1;
    ++c;
  }
  return c;
}
size_t class_bytes(int c) { return kAlign << c; }

void* system_alloc(size_t n) {
  ++tc.stats.system_allocs;
  void* p = std::aligned_alloc(kAlign, (n + kAlign - 1) / kAlign * kAlign);
  if (!p) throw std::bad_alloc();
  return p;
}

#ifndef FLUXION_NO_POOL
void* cache_alloc(size_t n, int& cls) {
  cls = size_class(n);
  FreeNode* f = tc.bins[cls];
  if (f) {
    tc.bins[cls] = f->next;
    tc.cached_bytes -= class_bytes(cls);
    ++tc.stats.cache_hits;
    return f;
  }
  return system_alloc(class_bytes(cls));
}
void cache_free(void* p, size_t n) {
  int cls = size_class(n);
  if (tc.cached_bytes + class_bytes(cls) > kMaxCachedBytes) {
    std::free(p);
    return;
  }
  auto* f = static_cast<FreeNode*>(p);
  f->next = tc.bins[cls];
  tc.bins[cls] = f;
  tc.cached_bytes += class_bytes(cls);
}

template <class T>
T* pool_new(FreeNode*& head, size_t& count) {
  if (head) {
    void* p = head;
    head = head->next;
    --count;
    return new (p) T;  // default-init: only member initializers run, no zeroing of the whole object
  }
  return new T;
}
template <class T>
void pool_delete(T* p, FreeNode*& head, size_t& count) {
  if (count >= kMaxPooledObjects) {
    delete p;
    return;
  }
  p->~T();
  auto* f = reinterpret_cast<FreeNode*>(p);
  f->next = head;
  head = f;
  ++count;
}
#else
void* cache_alloc(size_t n, int&) { return system_alloc(n); }
void cache_free(void* p, size_t) { std::free(p); }
template <class T>
T* pool_new(FreeNode*&, size_t&) {
  return new T;
}
template <class T>
void pool_delete(T* p, FreeNode*&, size_t&) {
  delete p;
}
#endif

Allocator* device_allocators[kNumDeviceKinds] = {};

// Storage of a device other than the CPU: meta holds nothing, others ask their backend.
Storage* create_off_host(Storage* s, size_t nbytes, Device device) {
  if (device.kind == DeviceKind::meta) {
    ++tc.stats.meta_storages;
    s->data = nullptr;
    return s;
  }
  Allocator* a = device_allocators[int(device.kind)];
  if (!a) {
    pool_delete(s, tc.storages, tc.nstorages);
    detail::fail("fx: no allocator for device ", device_name(device),
                 " (this build of fluxion has no backend for it)");
  }
  s->data = a->allocate(nbytes, device);
  return s;
}

}  // namespace

void register_allocator(DeviceKind kind, Allocator* a) {
  FX_CHECK(kind != DeviceKind::cpu && kind != DeviceKind::meta, "fx::register_allocator: the ",
           device_kind_name(kind), " allocator is built in");
  device_allocators[int(kind)] = a;
}

Storage* Storage::create(size_t nbytes, Device device) {
  Storage* s = pool_new<Storage>(tc.storages, tc.nstorages);
  s->device = device;
  s->nbytes = nbytes;
  if (device.kind != DeviceKind::cpu) [[unlikely]]
    return create_off_host(s, nbytes, device);
  // Two adds and a compare: cheap enough to keep always on (memory tests read the peak).
  tc.stats.live_bytes += int64_t(nbytes);
  if (tc.stats.live_bytes > tc.stats.peak_bytes) tc.stats.peak_bytes = tc.stats.live_bytes;
  if (nbytes <= kInlineBytes) {
    s->data = s->inline_buf;
  } else {
    int cls;
    s->data = cache_alloc(nbytes, cls);
  }
  return s;
}

Storage* Storage::create_placeholder(Device device, StorageExtra* extra) {
  Storage* s = pool_new<Storage>(tc.storages, tc.nstorages);
  s->device = device;
  s->nbytes = 0;
  s->data = nullptr;
  s->extra = extra;
  return s;
}

void Storage::destroy(Storage* s) {
  if (s->device.kind != DeviceKind::cpu) [[unlikely]] {
    delete s->extra;
    if (s->data) device_allocators[int(s->device.kind)]->deallocate(s->data, s->nbytes, s->device);
    pool_delete(s, tc.storages, tc.nstorages);
    return;
  }
  tc.stats.live_bytes -= int64_t(s->nbytes);
  if (s->data != s->inline_buf) {
    if (s->extra) [[unlikely]]  // a placeholder: no buffer (tested here, off the inline path)
      delete s->extra;
    else cache_free(s->data, s->nbytes);
  }
  pool_delete(s, tc.storages, tc.nstorages);
}

TensorImpl* TensorImpl::create() { return pool_new<TensorImpl>(tc.impls, tc.nimpls); }

void TensorImpl::destroy(TensorImpl* p) {
  if (p->storage) p->storage->release();
  pool_delete(p, tc.impls, tc.nimpls);
}

AllocatorStats allocator_stats() {
  AllocatorStats s = tc.stats;
  s.cached_bytes = tc.cached_bytes;
  return s;
}

void reset_peak_bytes() { tc.stats.peak_bytes = tc.stats.live_bytes; }

bool allocator_caches() {
#ifdef FLUXION_NO_POOL
  return false;
#else
  return true;
#endif
}

void empty_cache() {
  for (auto& bin : tc.bins) {
    while (bin) {
      FreeNode* n = bin->next;
      std::free(bin);
      bin = n;
    }
  }
  tc.cached_bytes = 0;
}

const char* device_kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::cuda: return "cuda";
    case DeviceKind::meta: return "meta";
  }
  return "?";
}

std::string device_name(Device d) {
  std::string s = device_kind_name(d.kind);
  if (d.kind == DeviceKind::cuda) s += ":" + std::to_string(int(d.ordinal));
  return s;
}

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::cpu;
  if (name == "meta") return Device::meta;
  if (name == "cuda") return cuda(0);
  if (name.rfind("cuda:", 0) == 0 && name.size() > 5 && name.size() <= 8 &&
      name.find_first_not_of("0123456789", 5) == std::string::npos) {
    const int ordinal = std::stoi(name.substr(5));
    if (ordinal < 256) return cuda(ordinal);
  }
  detail::fail("fx::parse_device: unknown device '", name, "' (cpu, meta, cuda, cuda:N)");
}

}  // namespace fx
