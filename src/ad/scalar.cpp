// The scalar tape's backward sweep and recording lifetime.
#include "fluxion/ad/scalar.hpp"

#include <atomic>
#include <memory>
#include <ostream>

namespace fx {
namespace ad {

thread_local constinit ScalarTape* active_scalar_tape = nullptr;
thread_local constinit uint32_t active_scalar_tape_id = 0;

void scalar_tape_mismatch() {
  detail::fail("fx::Real: a variable from another scalar gradient (finished, or an outer one "
               "captured by a nested gradient) was used; for higher derivatives of scalar code "
               "differentiate fx::Dual code in reverse (fx::hessian in scalar_derivatives.hpp) "
               "or differentiate tensors instead");
}

void ScalarTape::grow(size_t statements) {
  slot_store_.resize(statements);
  partial_store_.resize(statements);
  slots_ = slot_store_.data();
  partials_ = partial_store_.data();
  cap_ = uint32_t(statements);
}

namespace {
// Tapes are reused across gradient calls so steady-state loops do not allocate.
thread_local std::vector<std::unique_ptr<ScalarTape>> spare_tapes;
std::atomic<uint32_t> next_tape_id{0};  // global: a Real may cross threads
}  // namespace

const std::vector<double>& ScalarTape::adjoints(uint32_t out, double seed) {
  adj_.assign(size_t(n_) + 1, 0.0);
  if (out == 0) return adj_;
  double* w = adj_.data();
  w[out] = seed;
  // Statements after `out` cannot feed it; inputs (no operands) only feed the sink.
  for (size_t k = out; k >= 1; --k) {
    const double a = w[k];
    const Slots s = slots_[k - 1];
    const Partials p = partials_[k - 1];
    w[s.a] += a * p.da;
    w[s.b] += a * p.db;
  }
  w[0] = 0;
  return adj_;
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
