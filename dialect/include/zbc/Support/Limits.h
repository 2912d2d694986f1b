//===- Limits.h - the largest sizes zbc accepts, and checked sizes -*- C++ -*-===//
//
// One home for every ceiling on user input, so the IR verifiers, the passes,
// the schedule library and the command line agree on what is accepted, and
// every message can say the largest size accepted. Inputs are checked against
// these before anything is allocated for them.
//
// Why these numbers: every schedule, the simulator and the IR hold all
// actions of a step at once (up to three per (stage, microbatch) pair). At
// 2^21 pairs a schedule builds in at most about 25 s (zb-v; most in a few)
// and a gigabyte; far beyond any pipeline anyone runs (p = 64, m = 1024 is
// 2^16 pairs). Some builders are quadratic in the number of ranks (zb-v and
// dualpipe-v warm up rank by rank, zb-auto's bound sums over the ranks
// below each rank), so ranks stop at 2^12 and stages at 2^13, where the
// worst of them still takes seconds; microbatches may go to 2^20. Every
// product of two ceilings fits int64 and every index fits `int`. Amounts (times,
// costs, memory) are capped at 1e30 so that sums over all actions of a step
// stay finite in double. Tensors are capped at 2^50 bytes (1 PiB), so sums
// of tensor sizes in int64 bytes never overflow either.
//
// Plain C++: no LLVM or MLIR, usable from the runtime too.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SUPPORT_LIMITS_H
#define ZBC_SUPPORT_LIMITS_H

#include <cstdint>
#include <optional>

namespace zbc::limits {

/// Pipeline ranks p.
constexpr int64_t kMaxRanks = int64_t(1) << 12;
/// Pipeline stages (ranks x virtual stages per rank).
constexpr int64_t kMaxStages = int64_t(1) << 13;
/// Microbatches per training step m.
constexpr int64_t kMaxMicrobatches = int64_t(1) << 20;
/// (stage, microbatch) pairs per step: stages x microbatches.
constexpr int64_t kMaxStageMicrobatches = int64_t(1) << 21;
/// Any time, cost, memory amount or limit.
constexpr double kMaxAmount = 1e30;
/// Bytes of one tensor.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 50;
/// Nesting depth of a JSON document (a cost file needs 2) and of IR text
/// (brackets of every kind; zb models need about 8). Both parsers recurse
/// per level (NestingDepth.h).
constexpr int kMaxJSONDepth = 64;
constexpr int kMaxIRDepth = 256;
/// Seconds for a solver's time budget (`--exact`): one day.
constexpr double kMaxSolverSeconds = 86400;

/// a * b, or nullopt when it overflows int64 (or either is negative).
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t product;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &product))
    return std::nullopt;
  return product;
}

/// a + b, or nullopt when it overflows int64 (or either is negative).
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &sum))
    return std::nullopt;
  return sum;
}

} // namespace zbc::limits

#endif // ZBC_SUPPORT_LIMITS_H
