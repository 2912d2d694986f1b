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
struct CompileOptions;
namespace zb {
class PipelineOp;
class ProgramOp;
} // namespace zb

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

/// zb-schedule and zb-stage-costs with typed options (CompileOptions.h),
/// as the pipelines of Pipelines.h build them; `report` asks zb-schedule
/// for its remark.
std::unique_ptr<mlir::Pass> createZBSchedulePass(const CompileOptions &options,
                                                 bool report = false);
std::unique_ptr<mlir::Pass>
createZBStageCostsPass(const CompileOptions &options);

/// Note [Checkpointed backward] (CheckpointBackward.cpp), on every stage of
/// `pipeline`, which must have no zb.program yet: returns the stages
/// rewritten (0: none had a stash to rebuild). zb-checkpoint-backward runs
/// it; so does zb-schedule recompute=auto where nothing else fits.
mlir::FailureOr<int> checkpointBackward(zb::PipelineOp pipeline);

} // namespace zbc

#endif // ZBC_PASSES_PASSES_H
