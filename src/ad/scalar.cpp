// The scalar tape's backward sweep and recording lifetime.
#include "fluxion/ad/scalar.hpp"

#include <atomic>
#include <memory>
#include <ostream>

namespace fx {
namespace ad {

thread_local ScalarTape* active_scalar_tape = nullptr;
thread_local uint32_t active_scalar_tape_id = 0;

namespace {
// Tapes are reused across gradient calls so steady-state loops do not allocate.
thread_local std::vector<std::unique_ptr<ScalarTape>> spare_tapes;
std::atomic<uint32_t> next_tape_id{0};  // global: a Real may cross threads
}  // namespace

const std::vector<double>& ScalarTape::adjoints(uint32_t out, double seed) {
  std::vector<double>& adj = adj_;
  adj.assign(ends.size() + 1, 0.0);
  if (out == 0) return adj;
  adj[out] = seed;
  const Operand* ops = operands.data();
  for (size_t k = ends.size(); k >= 1; --k) {
    double a = adj[k];
    if (a == 0) continue;
    uint32_t begin = k >= 2 ? ends[k - 2] : 0;
    for (uint32_t j = begin; j < ends[k - 1]; ++j) adj[ops[j].index] += a * ops[j].partial;
  }
  return adj;
}

ScalarRecording::ScalarRecording() : outer_(active_scalar_tape), outer_id_(active_scalar_tape_id) {
  if (spare_tapes.empty()) {
    tape_ = new ScalarTape();
  } else {
    tape_ = spare_tapes.back().release();
    spare_tapes.pop_back();
  }
  tape_->clear();
  active_scalar_tape = tape_;
  do active_scalar_tape_id = next_tape_id.fetch_add(1, std::memory_order_relaxed) + 1;
  while (active_scalar_tape_id == 0);  // 0 means "none"
}

ScalarRecording::~ScalarRecording() {
  active_scalar_tape = outer_;
  active_scalar_tape_id = outer_id_;
  spare_tapes.emplace_back(tape_);
}

}  // namespace ad

std::ostream& operator<<(std::ostream& os, const Real& x) { return os << x.value(); }

}  // namespace fx
