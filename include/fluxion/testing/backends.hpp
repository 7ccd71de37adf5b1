// Choosing and watching backends in tests: run code on the reference (oracle) kernels only, and
// count which primitives ran and which backend served each kernel call.
//
//   #include <gtest/gtest.h>
//   fx::Tensor x = fx::randn({1000});
//   fx::Tensor fast = fx::tanh(x);                             // default dispatch: tuned first
//   fx::Tensor slow;
//   {
//     fx::testing::BackendScope scope(fx::testing::Backends::reference);
//     slow = fx::tanh(x);                                      // the reference kernel only
//     EXPECT_EQ(scope.kernel_calls(fx::tanh_p, fx::testing::kTunedRank), 0);
//   }
//   EXPECT_TRUE(fx::allclose(fast, slow));
//
// While a scope is alive every built-in primitive's forward and CPU kernels are replaced by
// counting trampolines (restored when the scope ends), so the counts also show which primitives
// a piece of code applies: views have no kernel, but they do run their forward. One scope at a
// time, on one thread: this is a test fixture, not a runtime feature.
#pragma once
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "fluxion/ops/create.hpp"
#include "fluxion/ops/elementwise.hpp"
#include "fluxion/ops/primitives.hpp"

namespace fx::testing {

// Rank of the tuned CPU backend (tried first); the reference backend closes the list.
inline constexpr int kTunedRank = 0;

enum class Backends {
  all,        // the normal dispatch order (tuned kernels, then the reference)
  reference,  // only the last kernel of each CPU list: the reference backend
};

namespace detail {

struct SpyState {
  bool active = false;
  std::vector<Primitive*> prims;
  std::vector<std::array<std::array<KernelFn, kMaxBackends>, kNumDevices>> kernels;
  std::vector<ForwardFn> forwards;
  std::vector<ForwardNFn> forwards_n;  // primitives with several outputs
  std::vector<std::array<int64_t, kMaxBackends>> kernel_calls;
  std::vector<int64_t> forward_calls;

  int index(const Primitive& p) const {
    for (size_t i = 0; i < prims.size(); ++i)
      if (prims[i] == &p) return int(i);
    return -1;
  }
};

inline SpyState& spy() {
  static SpyState s;
  return s;
}

template <int Rank>
bool kernel_trampoline(const KernelCall& c) {
  SpyState& s = spy();
  int i = s.index(c.prim);
  KernelFn k = i < 0 ? nullptr : s.kernels[size_t(i)][size_t(c.out.device().kind)][Rank];
  if (!k || !k(c)) return false;
  ++s.kernel_calls[size_t(i)][Rank];
  return true;
}

inline Tensor forward_trampoline(const Primitive& p, std::span<const Tensor> in, Attrs attrs) {
  SpyState& s = spy();
  int i = s.index(p);
  ++s.forward_calls[size_t(i)];
  return s.forwards[size_t(i)](p, in, attrs);
}

inline void forward_n_trampoline(const Primitive& p, std::span<const Tensor> in, Attrs attrs,
                                 Tensor* out) {
  SpyState& s = spy();
  int i = s.index(p);
  ++s.forward_calls[size_t(i)];
  s.forwards_n[size_t(i)](p, in, attrs, out);
}

template <size_t... R>
constexpr std::array<KernelFn, kMaxBackends> trampolines(std::index_sequence<R...>) {
  return {&kernel_trampoline<int(R)>...};
}

}  // namespace detail

class BackendScope {
 public:
  explicit BackendScope(Backends use = Backends::all) {
    detail::SpyState& s = detail::spy();
    FX_CHECK(!s.active, "fx::testing::BackendScope: scopes do not nest");
    // Dispatch registers the backends on first use; make sure that has happened, or the
    // registration would later overwrite the trampolines (and restoring would undo it).
    (void)fx::neg(fx::scalar(0));
    s.active = true;
    auto all = builtin_primitives();
    s.prims.assign(all.begin(), all.end());
    s.kernels.assign(all.size(), {});
    s.forwards.assign(all.size(), nullptr);
    s.forwards_n.assign(all.size(), nullptr);
    s.kernel_calls.assign(all.size(), {});
    s.forward_calls.assign(all.size(), 0);
    constexpr auto tramp = detail::trampolines(std::make_index_sequence<kMaxBackends>{});
    for (size_t i = 0; i < all.size(); ++i) {
      Primitive& p = *all[i];
      s.forwards[i] = p.forward;
      s.forwards_n[i] = p.forward_n;
      if (p.forward) p.forward = &detail::forward_trampoline;
      if (p.forward_n) p.forward_n = &detail::forward_n_trampoline;
      for (int d = 0; d < kNumDevices; ++d) {
        int last = -1;
        for (int r = 0; r < kMaxBackends; ++r) {
          s.kernels[i][size_t(d)][size_t(r)] = p.kernels[d][r];
          if (p.kernels[d][r]) last = r;
        }
        const bool reference_only = use == Backends::reference && d == int(DeviceKind::cpu);
        for (int r = 0; r < kMaxBackends; ++r) {
          bool keep = p.kernels[d][r] && (!reference_only || r == last);
          p.kernels[d][r] = keep ? tramp[size_t(r)] : nullptr;
        }
      }
    }
  }
  ~BackendScope() {
    detail::SpyState& s = detail::spy();
    for (size_t i = 0; i < s.prims.size(); ++i) {
      Primitive& p = *s.prims[i];
      p.forward = s.forwards[i];
      p.forward_n = s.forwards_n[i];
      for (int d = 0; d < kNumDevices; ++d)
        for (int r = 0; r < kMaxBackends; ++r) p.kernels[d][r] = s.kernels[i][size_t(d)][size_t(r)];
    }
    s.active = false;
  }
  BackendScope(const BackendScope&) = delete;
  BackendScope& operator=(const BackendScope&) = delete;

  // Kernel calls of p accepted by the backend of the given rank since the scope began.
  int64_t kernel_calls(const Primitive& p, int rank) const {
    int i = detail::spy().index(p);
    return i < 0 ? 0 : detail::spy().kernel_calls[size_t(i)][size_t(rank)];
  }
  // Applications of p (its forward, kernel or view) since the scope began.
  int64_t forward_calls(const Primitive& p) const {
    int i = detail::spy().index(p);
    return i < 0 ? 0 : detail::spy().forward_calls[size_t(i)];
  }
  // Whether a backend of the given rank has a CPU kernel for p (outside any masking).
  bool has_kernel(const Primitive& p, int rank) const {
    int i = detail::spy().index(p);
    return i >= 0 && detail::spy().kernels[size_t(i)][size_t(DeviceKind::cpu)][size_t(rank)];
  }
};

}  // namespace fx::testing
