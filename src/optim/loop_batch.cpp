// fx::optim::detail::LoopBatch: one optimisation step's per-leaf loops in one parallel region.
#include <omp.h>

#include <algorithm>
#include <utility>

#include "fluxion/optim/elementwise.hpp"

namespace fx::optim::detail {
namespace {
thread_local LoopBatch* open_batch = nullptr;
}  // namespace

LoopBatch::LoopBatch() : outer_(open_batch) { open_batch = this; }

LoopBatch::~LoopBatch() {
  if (open_batch == this) open_batch = outer_;
}

LoopBatch* LoopBatch::current() { return open_batch; }

void LoopBatch::add(int64_t n, const void* param, Loop run) {
  loops_.push_back({n, param, std::move(run)});
}

void LoopBatch::run() {
  if (open_batch == this) open_batch = outer_;  // what the loops call runs at once
  std::vector<Entry> loops = std::move(loops_);
  loops_.clear();
  const bool any_large =
      std::any_of(loops.begin(), loops.end(), [](const Entry& e) { return e.n >= kParallelMin; });
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (!any_large || threads <= 1) {
    for (Entry& e : loops) e.run(0, e.n);
    return;
  }
  // Owners of the small loops, by elements so far; a parameter named twice (tied leaves) keeps
  // its first loop's thread, so its steps stay in order.
  std::vector<int> owner(loops.size(), -1);
  std::vector<int64_t> load(size_t(threads), 0);
  for (size_t i = 0; i < loops.size(); ++i) {
    if (loops[i].n >= kParallelMin) continue;
    for (size_t j = 0; j < i && owner[i] < 0; ++j)
      if (owner[j] >= 0 && loops[j].param == loops[i].param) owner[i] = owner[j];
    if (owner[i] < 0) owner[i] = int(std::min_element(load.begin(), load.end()) - load.begin());
    load[size_t(owner[i])] += loops[i].n;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    for (size_t i = 0; i < loops.size(); ++i) {
      Entry& e = loops[i];
      if (e.n >= kParallelMin) e.run(e.n * t / nt, e.n * (t + 1) / nt);
      else if (owner[i] % nt == t) e.run(0, e.n);
    }
  }
}

}  // namespace fx::optim::detail
