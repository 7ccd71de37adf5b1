// The CPU backend's tuning constants in one place: the sizes at which a kernel goes to threads or
// hands a product to oneDNN or OpenBLAS, and its block and tile sizes. They were chosen on 2-core
// x86-64 VMs (Intel Xeon, AMD EPYC); another machine may want others, and this is the place.
//
//   if (n >= kParallelMin) ...          // loops.hpp's team_for: threads from 32768 elements
//
// Each line says what chose the value: a benchmark of bench/ and the `name=` it prints, a timing
// taken by hand (the commit that set the value describes it; no bench/ program reproduces it), or
// that it was not measured. The comment where a constant is used says why it exists.
#pragma once
#include <cstddef>
#include <cstdint>

namespace fx::backend::cpu {

// ---- When to use threads

// Elements below which an OpenMP team costs more than it saves (team_for, split_range callers).
// Not measured: the first CPU backend's value (commit f269749). The optimiser keeps its own copy,
// fx::optim::detail::kParallelMin (include/fluxion/optim/elementwise.hpp, a public header).
inline constexpr int64_t kParallelMin = int64_t(1) << 15;
// A 2-d layout with a transposed operand goes to threads from a quarter of that (loops.hpp).
// Timed by hand: a 128 x 128 activation's pullback (commit 3064690).
inline constexpr int64_t kTiledParallelMin = kParallelMin / 4;
// The relu pass after oneDNN's matmul primitive splits rows from 4096 output elements.
// Not measured on its own: set to where the primitive itself split (commit f301743).
inline constexpr int64_t kReluEpilogueParallelMin = kParallelMin / 8;
// scatter_add/index_add split the outermost non-broadcast dimension with at least this many
// entries per thread (index.cpp). Not measured.
inline constexpr int64_t kScatterSplitMinPerThread = 8;
// Products (m n k multiply-adds) from which C's rows are split across the team, and the fewest
// rows (or columns) per thread (matmul.cpp gemm_threads). The 2-thread speedup of MLP training
// epochs, what bench/train_mlp prints as fluxion_speedup_t2_vs_t1 (commit 611daff); the two were
// set together, kGemmRowsMin not measured on its own.
inline constexpr int64_t kParallelGemm = int64_t(1) << 17;
inline constexpr int64_t kGemmRowsMin = 4;
// linear's fused pullback gives each thread at least this many columns of dz and rows of dx.
// Timed by hand on bench/train_mlp's model: its 10-wide last layer took 12.9 us per pullback on
// two threads against 11.3 us on one (commit 7bf5def).
inline constexpr int64_t kLinearSplitMin = 16;
// Rows of out per task when threads split the narrow batched product (matmul.cpp).
// Not measured (commit f8facf4 took the GEMM split size for when to split at all).
inline constexpr int64_t kNarrowRowsPerTask = 256;

// ---- Which library runs a product

// f32 products of more than kOnednnMinGemm and at most kOnednnMaxGemm multiply-adds go to
// oneDNN's sgemm, the rest to OpenBLAS (matmul.cpp). Upper bound: each library called directly,
// as bench/matmul does (matmul_t1_n512_openblas_gflops 2-8% above _onednn_gflops); lower bound
// timed by hand in MLP training, the classifier layer's pullback (commit dfe810d).
inline constexpr int64_t kOnednnMinGemm = int64_t(1) << 18;
inline constexpr int64_t kOnednnMaxGemm = int64_t(1) << 26;
// Dense-shaped products x @ W^T (m n k) that go through oneDNN's matmul primitive with the bias
// fused (onednn_matmul.cpp). Lower bound: the 2-thread speedup of MLP training epochs (as
// bench/train_mlp's fluxion_speedup_t2_vs_t1) rose 0.02-0.03 with it at about 50^3 (commit
// 9d9423c); the upper bound is kOnednnMaxGemm's.
inline constexpr int64_t kPrimitiveMinWork = int64_t(1) << 17;
inline constexpr int64_t kPrimitiveMaxWork = int64_t(1) << 26;
// Primitives each thread keeps (a model's distinct layer shapes, both thread counts). Not measured.
inline constexpr size_t kPrimitiveCacheEntries = 32;
// 2-d products of at most this many multiply-adds run as a plain loop, not a BLAS call.
// bench/lstm_overhead, lstm_layers*_fluxion_ns_per_op (its 4-wide cells, commit d2395e0).
inline constexpr int64_t kTinyGemm = 512;
// m n k up to which OpenBLAS uses its small-matrix kernels (about 100^3): A B^T products this small
// have B transposed into scratch so they reach them. OpenBLAS's own range, not measured here.
inline constexpr int64_t kSmallGemm = 1000000;
// ... and only with at least this many rows of A. Not measured (commit 102e37e).
inline constexpr int64_t kPackBMinRows = 8;
// The narrow product kernel takes outputs of at most kNarrowCols columns with an inner dimension
// of at most kNarrowInner (matmul.cpp). bench/adbench_gmm, gmm_*_d10_K*_fluxion_gradient_s (1.55x
// at K25/K100; D = 16 ran 20% slower than OpenBLAS, hence 12; commit f8facf4).
inline constexpr int64_t kNarrowCols = 12;
inline constexpr int64_t kNarrowInner = 16;
// Rows of out the narrow kernel keeps in registers for N columns. Timed by hand on the GMM's
// products: 4 rows of 10 spilled registers and ran 1.3x slower (commit f8facf4).
template <int N>
inline constexpr int kNarrowBlock = N <= 4   ? 8
                                    : N <= 8 ? 4
                                             : 3;

// ---- Block and tile sizes, short-row paths

// Square tiles (elements per side) for 2-d layouts with a transposed operand (loops.hpp).
// Timed by hand (commit 3064690); not varied since.
inline constexpr int64_t kTransposeTile = 32;
// Output bytes per concat tile, kept in cache while every input writes its part (index.cpp).
// Not measured (commit 72a4f7c).
inline constexpr int64_t kConcatTileBytes = 64 << 10;
// Elements of the buffer a row repeated down a column of short rows is laid out in (x - mu,
// elementwise.cpp). bench/adbench_gmm, gmm_*_d10_K5_fluxion_gradient_s (2x at K5 on that op,
// commit eb97e64); the length itself not varied.
inline constexpr int64_t kRepeatedRowRun = 256;
// Innermost rows shorter than kShortRow are swapped with a dimension at least kLongRowFactor
// times longer (loops.hpp prefer_long_rows). bench/adbench_gmm, gmm_*_d2_K*_fluxion_gradient_s
// (rows of 2; rows of 10 ran slower swapped, commit 102e37e).
inline constexpr int64_t kShortRow = 5;
inline constexpr int64_t kLongRowFactor = 4;
// Rows shorter than this that prefer_long_rows left run a column per call (loops.hpp
// fold_short_rows). bench/adbench_gmm, gmm_*_d10_* (1.5x on such ops, commit f61c833).
inline constexpr int64_t kFoldBelow = 16;
// Sums: rows below kShortRun values take the short-row paths, rows of kShortRun..kFixedRowMax a
// fixed-width loop (reduce.cpp). bench/adbench_gmm, gmm_*_d10_K*_fluxion_gradient_s (D = 10;
// commits 102e37e, eb97e64).
inline constexpr int64_t kShortRun = 8;
inline constexpr int64_t kFixedRowMax = 16;
// Outputs per block when a sum of a few terms adds term j of every output at once: sized to stay
// in L1 across the j sweeps (reduce.cpp). Not measured.
inline constexpr int64_t kShortSumBlock = 1024;
// Values per exp call when logsumexp (forward) and logitcrossentropy batch short rows
// (reduce.cpp). Timed by hand: a 128 x 10 logitcrossentropy with its gradient, 11.1 -> 7.3 us
// (commit 2648798; bench/train_mlp's loss). The value itself not varied.
inline constexpr int64_t kLogsumexpBatchValues = 2048;
// Elements of a row per exp call in logsumexp's pullback (reduce.cpp). Not measured.
inline constexpr int64_t kLogsumexpChunk = 256;

}  // namespace fx::backend::cpu
