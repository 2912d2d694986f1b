//===- StageAnalysis.h - work and memory of a pipeline stage ------*- C++ -*-===//
//
// What a scheduler needs to know about each zb.stage: the cost of its F, B
// and W phases (or fused BW), the activation memory one microbatch holds
// after F and after B, and its parameter bytes. Memory follows from the
// phase keys: a per-microbatch tensor is held from the phase that produces
// (or receives) it until the last phase that reads it (PhaseKeys.h).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_ANALYSIS_STAGEANALYSIS_H
#define ZBC_ANALYSIS_STAGEANALYSIS_H

#include "zbc/Analysis/CostModel.h"

#include "mlir/Support/LogicalResult.h"

#include <cstdint>

namespace zbc::zb {
class StageOp;
} // namespace zbc::zb

namespace zbc {

struct StageFigures {
  int64_t index = 0;
  bool split = false; // B and W are separate phases
  OpCost forward;     // F
  OpCost inputGrad;   // B (or all of BW when not split)
  OpCost weightGrad;  // W (zero when not split)
  /// Activation bytes one microbatch holds once F is done (read later by
  /// B/W/BW), and once B is done (read later by W; 0 when not split).
  int64_t bytesAfterF = 0;
  int64_t bytesAfterB = 0;
  /// What one microbatch holds once F is done when it is recomputed: the
  /// inputs (in.I, data) a backward or its R reads, and the stash its R
  /// does not rebuild (Note [Selective recomputation] in RecomputePlan.h);
  /// the schedule's M_keep.
  int64_t bytesKeptForRecompute = 0;
  /// The R: the ops of F that rebuild the stash.
  OpCost recompute;
  /// What an offload moves (Note [Offload in the IR] in ProgramMemory.h):
  /// every F.I a later phase reads; the schedule's M_offload.
  int64_t bytesStashed = 0;
  int64_t paramBytes = 0;

  /// The phase whose FLOP count saturated ("F", "B", "W", "BW"), or null.
  const char *saturatedPhase() const;
};

StageFigures analyzeStage(zb::StageOp stage);

/// Emits an error on `stage` and fails if a FLOP count of `figures`
/// saturated (a model too large to cost in int64), so no consumer of the
/// cost model works on a clamped number.
mlir::LogicalResult verifyCostable(zb::StageOp stage,
                                   const StageFigures &figures);

} // namespace zbc

#endif // ZBC_ANALYSIS_STAGEANALYSIS_H
