// The scalar tape's growth, reverse sweep and recording lifetime.
#include "fluxion/ad/scalar.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <ostream>

namespace fx {
namespace ad {

thread_local constinit ScalarTape* active_scalar_tape = nullptr;
thread_local constinit unsigned long long active_scalar_ids = 0;

void scalar_tape_mismatch() {
  detail::fail(
      "fx::Real: a value from another scalar gradient (a finished one, or an outer "
      "one captured by a nested gradient whose arguments are plain numbers: pass the "
      "outer gradient's number type, e.g. the captured fx::Real, so the inner gradient "
      "differentiates through it), from a finished term of fx::preaccumulated_sum, or "
      "one read after it was std::move'd into an operation was used");
}

namespace {
// Moves the first `keep` elements into a new uninitialised array of `cap` (no zero-filling:
// every slot is written before it is read).
template <class T>
void regrow(std::unique_ptr<T[]>& store, T*& ptr, size_t keep, size_t cap) {
  std::unique_ptr<T[]> bigger(new T[cap]);
  if (keep) std::memcpy(bigger.get(), store.get(), keep * sizeof(T));
  store = std::move(bigger);
  ptr = store.get();
}
constexpr uint32_t kMaxIndex = 0xFFFFFFF0u;
}  // namespace

ScalarTape::ScalarTape() {
  ops_cap_ = 1 << 17;
  stmt_cap_ = ops_cap_ + 2;
  regrow(end_store_, end_, 0, stmt_cap_);
  regrow(idx_store_, idx_, 0, ops_cap_);
  regrow(mul_store_, mul_, 0, ops_cap_);
  end_[0] = 0;
}

void ScalarTape::grow(size_t ops, size_t statements) {
  // Indices and operand offsets are 32-bit: a tape past 4e9 entries is an error, not a wrap.
  FX_CHECK(uint64_t(n_) + 2 < kMaxIndex && uint64_t(ops_n_) + ops < kMaxIndex,
           "fx::Real: the scalar tape is full (", n_, " statements, ", ops_n_,
           " operands); differentiate smaller pieces or use tensors");
  if (ops_n_ + ops > ops_cap_) {
    size_t cap = std::min<size_t>(std::max<size_t>(2 * ops_cap_, ops_n_ + ops), kMaxIndex);
    regrow(idx_store_, idx_, ops_n_, cap);
    regrow(mul_store_, mul_, ops_n_, cap);
    ops_cap_ = cap;
  }
  // Restore reserve()'s invariant: more statement room than operand room (plus one for a
  // variable). The statement stack's unused tail is never touched, so it costs address space only.
  const size_t need = n_ + statements + (ops_cap_ - ops_n_) + 2;
  if (stmt_cap_ < need) {
    FX_CHECK(need < kMaxIndex, "fx::Real: the scalar tape is full (", n_, " statements)");
    regrow(end_store_, end_, n_ + 1, std::min<size_t>(std::max(need, 2 * stmt_cap_), kMaxIndex));
    stmt_cap_ = std::min<size_t>(std::max(need, 2 * stmt_cap_), kMaxIndex);
  }
}

uint32_t ScalarTape::variables(size_t count) {
  FX_CHECK(uint64_t(n_) + count + 2 < kMaxIndex, "fx::Real: the scalar tape is full (", n_,
           " statements and ", count, " more variables)");
  if (stmt_cap_ - n_ <= ops_cap_ - ops_n_ + 1 + count) grow(0, count);
  const uint32_t first = uint32_t(n_ + 1);
  std::fill(end_ + first, end_ + first + count, uint32_t(ops_n_));
  n_ += count;
  if (!vars_.empty() && vars_.back().end == first) vars_.back().end = uint32_t(n_ + 1);
  else vars_.push_back({first, uint32_t(n_ + 1)});
  return first;
}

void ScalarTape::zero_variable_adjoints() {
  double* w = adj_.data();
  const size_t n = adj_.size();
  for (const VariableRun& r : vars_)
    if (r.first < n) std::fill(w + r.first, w + std::min<size_t>(r.end, n), 0.0);
  swept_ = false;
}

void ScalarTape::clear() {
  if (swept_) zero_variable_adjoints();
  n_ = 0;
  ops_n_ = 0;
  vars_.clear();
}

void ScalarTape::clean_adjoints() {
  // Invariant: between sweeps adj_ is zero except at variables of the last sweep (re-zeroed
  // here through vars_), so no pass over the whole buffer is needed.
  if (swept_) zero_variable_adjoints();
  if (adj_.size() < n_ + 1) adj_.resize(n_ + 1, 0.0);
}

void ScalarTape::sweep(uint32_t out, uint32_t stop, double seed) {
  double* w = adj_.data();
  const uint32_t* end = end_;
  const uint32_t* idx = idx_;
  const double* mul = mul_;
  w[out] += seed;
  // Statements after `out` cannot feed it. A statement's adjoint is complete when the sweep
  // reaches it; it is read, zeroed (leaving the buffer clean) and spread over its operands.
  // Variables (no operands) keep theirs; so do a block's later statements until the sweep
  // reaches the block's first (kLowerTriangularBlock), which takes and zeroes them all. No test
  // for a zero adjoint: on GMM the mispredicted branch cost more (14 vs 11 ms) than the
  // multiply-adds by zero it saved.
  // Pointers to statement k's adjoint and end, walked down together (one induction variable).
  double* wk = w + out;
  const double* const wstop = w + stop;
  const uint32_t* ek = end + out;
  uint32_t hi = *ek;
  for (; wk > wstop; --wk, --ek) {
    const uint32_t lo = ek[-1];
    if (lo != hi) {
      const double a = *wk;
      *wk = 0;
      if (hi - lo == 1) {
        // One operand (x - c, exp(x), a copy) is the commonest statement: first and alone. A
        // block has at least three.
        w[idx[lo]] += a * mul[lo];
      } else if (idx[lo] == kLowerTriangularBlock) [[unlikely]] {
        sweep_lower_triangular_block(w, uint32_t(wk - w), idx + lo, mul + lo, a);
      } else {
        // Operands four at a time, then the one to three left: straight-line code keeps the
        // loop's exit branch, unpredictable as counts vary, to one per four operands.
        // Sequential updates, so an operand that appears twice (x * x) accumulates twice.
        uint32_t j = lo;
        for (; hi - j >= 4; j += 4) {
          w[idx[j]] += a * mul[j];
          w[idx[j + 1]] += a * mul[j + 1];
          w[idx[j + 2]] += a * mul[j + 2];
          w[idx[j + 3]] += a * mul[j + 3];
        }
        switch (hi - j) {
          case 3: w[idx[j + 2]] += a * mul[j + 2]; [[fallthrough]];
          case 2: w[idx[j + 1]] += a * mul[j + 1]; [[fallthrough]];
          case 1: w[idx[j]] += a * mul[j]; break;
          default: break;
        }
      }
    }
    hi = lo;
  }
  w[0] = 0;  // the sink constants wrote to
}

const std::vector<double>& ScalarTape::adjoints(uint32_t out, double seed) {
  clean_adjoints();
  swept_ = true;
  if (out != 0) sweep(out, 0, seed);
  return adj_;
}

namespace {
// Tapes are reused across gradient calls so steady-state loops do not allocate.
thread_local std::vector<std::unique_ptr<ScalarTape>> spare_tapes;
// The same for the Reals of vector arguments; a few per thread (a call has as many as it has
// vector arguments), the largest kept when there are more.
thread_local std::vector<std::vector<Real>> spare_real_buffers;
constexpr size_t kMaxSpareRealBuffers = 8;
std::atomic<uint32_t> next_tape_id{0};  // global: a Real may cross threads
}  // namespace

std::vector<Real> take_real_buffer() {
  if (spare_real_buffers.empty()) return {};
  std::vector<Real> b = std::move(spare_real_buffers.back());
  spare_real_buffers.pop_back();
  return b;
}

void give_real_buffer(std::vector<Real>&& buffer) {
  if (buffer.capacity() == 0) return;
  if (spare_real_buffers.size() < kMaxSpareRealBuffers) {
    spare_real_buffers.push_back(std::move(buffer));
    return;
  }
  auto smallest =
      std::min_element(spare_real_buffers.begin(), spare_real_buffers.end(),
                       [](const auto& a, const auto& b) { return a.capacity() < b.capacity(); });
  if (smallest->capacity() < buffer.capacity()) *smallest = std::move(buffer);
}

void ScalarRecording::variables(const double* x, size_t n, Real* out) {
  if (n == 0) return;
  const uint32_t first = tape_->variables(n), id = active_scalar_tape_id();
  for (size_t i = 0; i < n; ++i) out[i] = Real(x[i], first + uint32_t(i), id);
}

ScalarRecording::ScalarRecording()
    : outer_(active_scalar_tape),
      outer_id_(active_scalar_tape_id()),
      outer_base_id_(active_scalar_base_id()) {
  if (spare_tapes.empty()) {
    tape_ = new ScalarTape();
  } else {
    tape_ = spare_tapes.back().release();
    spare_tapes.pop_back();
  }
  tape_->clear();
  active_scalar_tape = tape_;
  uint32_t id;
  // Recording ids: [1, 2^30) (0 means "none"; higher ids are preaccumulated terms' and
  // kConsumedTapeId, in the 31 bits of a Real's tape word).
  do id = (next_tape_id.fetch_add(1, std::memory_order_relaxed) + 1) & 0x3FFFFFFFu;
  while (id == 0);
  set_active_scalar_ids(id, id);
}

ScalarRecording::~ScalarRecording() {
  active_scalar_tape = outer_;
  set_active_scalar_ids(outer_id_, outer_base_id_);
  spare_tapes.emplace_back(tape_);
}

}  // namespace ad

std::ostream& operator<<(std::ostream& os, const Real& x) { return os << x.value(); }

}  // namespace fx
