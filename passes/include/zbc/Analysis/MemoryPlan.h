//===- MemoryPlan.h - one arena per rank, every buffer at a fixed offset -*- C++ -*-===//
//
// The static memory plan of a verified zb.program (zb-plan-memory), which the
// code generator lowers and the runtime allocates once, at start-up.
//
// Note [Memory plan]
// Each rank gets one arena, laid out in three parts:
//   persistent: every parameter of the rank's stages, its gradient
//     accumulator, its optimizer state (SGD: "momentum.N"; AdamW:
//     "exp_avg.N" and "exp_avg_sq.N", PyTorch's names) and the loss
//     accumulator, each at its own offset for the whole run;
//   buffers: every buffer of Note [Program memory] (ProgramMemory.h), each
//     reserved over [firstWrite, until) of the rank's order, and each
//     compute's scratch ("scratch.F" of its stage and microbatch; a fused
//     BW of a split stage runs B, then W, in one, which also holds what B
//     hands W: planFusedScratch), reserved over its own position, all
//     packed together greedily by size (largest first, each
//     at the lowest offset where nothing whose interval overlaps its own is
//     placed; TFLite's "greedy by size"). Inside a scratch region, each
//     value of the phase sits at the offset planPhaseScratch packs from the
//     values' lifetimes in the body (kernel workspaces included).
// A value a phase yields into a buffer (F.I, B.I, a sent out.I or d_in.I, an
// in.I of a stage on the same rank) is written straight into that buffer, so
// it takes no scratch; a gradient and the loss are written to scratch and
// added into their accumulators at the end of the phase. Offsets are
// multiples of kArenaAlignment. The plan's peak live bytes are the
// verifier's figure (ProgramMemory's peak): the plan adds only padding and
// fragmentation, which the arena size shows beside it. Depends on this note:
// MemoryPlan.cpp, zb-plan-memory, convert-zb-to-emitc, the runtime's ledger.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_ANALYSIS_MEMORYPLAN_H
#define ZBC_ANALYSIS_MEMORYPLAN_H

#include "zbc/Analysis/ProgramMemory.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zbc {

/// Every offset in an arena is a multiple of this (a cache line, and what
/// vector loads of any width want).
constexpr int64_t kArenaAlignment = 64;

/// One placed buffer of a rank. Persistent entries have stage and
/// microbatch -1; a per-microbatch entry is (key, stage, microbatch), the
/// key as the stage's phases name it (Sent buffers by the yielding stage).
struct Placement {
  std::string key;
  int stage = -1, microbatch = -1;
  int64_t offset = 0, bytes = 0;
  /// The positions of the rank's order it is reserved over, [from, until);
  /// persistent entries: the whole order.
  int from = 0, until = 0;
};

struct RankPlan {
  std::vector<Placement> persistent; // params, grads, state, loss
  std::vector<Placement> buffers;    // per microbatch, scratch included
  int64_t arenaBytes = 0;
  int64_t peakBytes = 0; // the verifier's figure
};

/// Where each value of a phase body that lives in scratch sits, relative to
/// the scratch region; values yielded into buffers are absent. `bytes` is
/// the extent the layout needs.
struct PhaseScratch {
  llvm::DenseMap<mlir::Value, int64_t> offsetOf;
  /// Per op that needs a workspace (workspaceBytes), its offset.
  llvm::DenseMap<mlir::Operation *, int64_t> workspaceOf;
  int64_t bytes = 0;
};

/// True for the keys whose yielded value goes straight into a buffer of
/// Note [Program memory] rather than into scratch.
bool isYieldedIntoBuffer(llvm::StringRef key);

/// The scratch layout of one phase body (the value lifetimes of
/// ProgramMemory's temporaries, the values yielded into buffers left out).
PhaseScratch planPhaseScratch(zb::PhaseOp phase);

/// The scratch of a fused BW of a split stage: B's body, then W's, packed
/// as one sequence, so that what B hands W (its B.I) sits inside the region
/// too, from its op in B to its last use in W, as Note [Program memory]
/// counts it. `b` and `w` hold each body's offsets, `handedOver` the offset
/// of each B.I key.
struct FusedScratch {
  PhaseScratch b, w;
  llvm::StringMap<int64_t> handedOver;
  int64_t bytes = 0;
};
FusedScratch planFusedScratch(zb::StageOp stage);

/// The key of a compute's scratch region: "scratch.F", "scratch.BW", ...
std::string scratchKey(zb::ComputeKind kind);

/// The names of the optimizer state buffers of parameter `name`, one per
/// copy that optimizerCopies counts.
std::vector<std::string> optimizerStateKeys(llvm::StringRef optimizer,
                                            llvm::StringRef name);

/// The plan of every rank, from the memory the verifier computed for the
/// program (`memory`, from analyzeProgramMemory on the same program).
std::vector<RankPlan> planProgramMemory(zb::ProgramOp program,
                                        zb::PipelineOp pipeline,
                                        const ProgramModel &model,
                                        const std::vector<RankMemory> &memory);

} // namespace zbc

#endif // ZBC_ANALYSIS_MEMORYPLAN_H
