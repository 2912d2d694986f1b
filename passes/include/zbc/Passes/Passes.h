//===- Passes.h - zbc compiler passes ----------------------------*- C++ -*-===//
//
// Declares the zbc passes (generated from Passes.td) and registerZBPasses().
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_PASSES_PASSES_H
#define ZBC_PASSES_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace zbc {
namespace zb {
class PipelineOp;
class ProgramOp;
} // namespace zb
namespace sched {
struct Problem;
} // namespace sched

#define GEN_PASS_DECL
#include "zbc/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "zbc/Passes/Passes.h.inc"

/// What zb-verify-schedule proved of a program.
struct ScheduleProof {
  int ranks = 0;
  size_t ops = 0;
  /// Per rank; empty when the program names no pipeline (no tensors to
  /// count).
  std::vector<int64_t> peakBytes;
  /// Per rank, the host bytes of offloaded stashes (Note [Offload in the
  /// IR]); all 0 where no rank offloads.
  std::vector<int64_t> hostPeakBytes;
};

/// zb-verify-schedule on one program, for tools that report the figures
/// (`zbc verify`, `zbc check`): errors go to the program's diagnostics.
/// `memoryLimit` (bytes per rank, 0: none) overrides the program's own.
mlir::LogicalResult verifyScheduleProgram(zb::ProgramOp program,
                                          ScheduleProof *proof = nullptr,
                                          int64_t memoryLimit = 0);

/// The scheduling problem zb-schedule solves for a split pipeline: per stage,
/// FLOPs as the F/B/W times and the activation bytes after F and after B
/// (StageAnalysis.h); `virtualStages` stages per rank; `activationBudget`
/// bytes per rank (Note [Two memory limits]; 0: none; nullopt: the
/// schedule's default). For tools that simulate or draw the program
/// zb-schedule made (`zbc compile`).
mlir::FailureOr<sched::Problem>
schedulingProblemOf(zb::PipelineOp pipeline, int64_t virtualStages,
                    int64_t microbatches, double comm,
                    std::optional<double> activationBudget);

/// Replaces `problem`'s stage costs with those of the JSON cost file at
/// `path` (zb-schedule's cost-file): each list one value for every stage or
/// one per stage, comm if given; its sizes, if it gives them, must be the
/// pipeline's. Errors go to the pipeline.
mlir::LogicalResult applyCostFile(zb::PipelineOp pipeline, llvm::StringRef path,
                                  sched::Problem &problem);

/// Note [Checkpointed backward] (CheckpointBackward.cpp), on every stage of
/// `pipeline`, which must have no zb.program yet: returns the stages
/// rewritten (0: none had a stash to rebuild). zb-checkpoint-backward runs
/// it; so does zb-schedule recompute=auto where nothing else fits.
mlir::FailureOr<int> checkpointBackward(zb::PipelineOp pipeline);

} // namespace zbc

#endif // ZBC_PASSES_PASSES_H
