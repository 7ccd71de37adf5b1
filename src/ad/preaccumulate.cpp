// Preaccumulated sums on the scalar tape: each term is swept as soon as it is recorded, into the
// adjoint entries of the values it read; the finished sum is one statement over those entries.
#include "fluxion/ad/preaccumulate.hpp"

#include <algorithm>
#include <atomic>

namespace fx {
namespace ad {

namespace {
// Term ids come from the same space as recording ids would, but need not be globally unique:
// they only have to differ from the recording's id and from earlier terms' ids while the
// recording lives. A thread-local counter (skipping 0) is enough.
uint32_t next_term_id() {
  // Term ids: [2^30, 2^31 - 1), apart from the recordings' (scalar.cpp) and kConsumedTapeId.
  static thread_local uint32_t counter = 0x40000000u;
  if (++counter >= kConsumedTapeId) counter = 0x40000000u;
  return counter;
}
}  // namespace

bool SumPreaccumulation::available() {
  return active_scalar_tape != nullptr && !active_scalar_tape->summing_;
}

SumPreaccumulation::SumPreaccumulation(ScalarTape& tape)
    : tape_(tape),
      start_(tape.size()),
      start_ops_(tape.operations()),
      base_id_(active_scalar_base_id()) {
  tape_.clean_adjoints();  // the terms' contributions accumulate in a clean buffer
  tape_.summing_ = true;
}

SumPreaccumulation::~SumPreaccumulation() {
  if (open_) discard();
  tape_.summing_ = false;
  set_active_scalar_ids(base_id_, base_id_);
}

void SumPreaccumulation::begin_term() {
  uint32_t id;
  do id = next_term_id();
  while (id == base_id_);
  set_active_scalar_ids(id, base_id_);
}

void SumPreaccumulation::end_term(const Real& term) {
  const uint32_t out = term.index();
  if (out != 0) term.check_same_tape();
  set_active_scalar_ids(base_id_, base_id_);
  // Variables are numbered in order, so one made by a term is the last, above the sum's start.
  FX_CHECK(tape_.vars_.empty() || tape_.vars_.back().end <= start_ + 1,
           "fx::preaccumulated_sum: a term created a variable (make variables before the sum)");
  value_ += term.value();
  if (out != 0) {
    if (tape_.adj_.size() < tape_.size() + 1) tape_.adj_.resize(tape_.size() + 1, 0.0);
    // The lowest earlier entry this term can have reached: its operands below the term's own
    // statements. (idx - 1 makes the sink, index 0, the largest value, so min skips it.)
    uint32_t low = std::min<uint32_t>(lowest_, out - 1);
    const uint32_t* idx = tape_.idx_;
    for (size_t j = start_ops_; j < tape_.operations(); ++j) low = std::min(low, idx[j] - 1u);
    lowest_ = low;
    tape_.sweep(out, uint32_t(start_), 1.0);
  }
  tape_.truncate(start_, start_ops_);
}

Real SumPreaccumulation::finish() {
  open_ = false;
  tape_.summing_ = false;
  const uint32_t lo = lowest_ + 1, hi = uint32_t(start_);  // entries [lo, hi] may hold sums
  if (lowest_ == UINT32_MAX || lo > hi) return Real(value_);
  double* w = tape_.adj_.data();
  size_t count = 0;
  for (uint32_t k = lo; k <= hi; ++k) count += w[k] != 0;
  if (count == 0) return Real(value_);
  tape_.reserve(count);
  uint32_t* ip = tape_.idx_ + tape_.ops_n_;
  double* mp = tape_.mul_ + tape_.ops_n_;
  for (uint32_t k = lo; k <= hi; ++k) {
    if (w[k] == 0) continue;
    *ip++ = k;
    *mp++ = w[k];
    w[k] = 0;
  }
  tape_.ops_n_ += count;
  const size_t s = ++tape_.n_;
  tape_.end_[s] = uint32_t(tape_.ops_n_);
  return Real(value_, uint32_t(s));
}

void SumPreaccumulation::discard() {
  open_ = false;
  if (lowest_ != UINT32_MAX) {
    double* w = tape_.adj_.data();
    for (uint32_t k = lowest_ + 1; k <= start_ && k < tape_.adj_.size(); ++k) w[k] = 0;
  }
  // Statements of an unfinished term (their adjoints were never touched) go too.
  tape_.truncate(start_, start_ops_);
}

}  // namespace ad
}  // namespace fx
