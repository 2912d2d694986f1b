//===- MemoryPlan.h - one arena per rank, every buffer at a fixed offset -*- C++ -*-===//
//
// The static memory plan of a verified zb.program (zb-plan-memory), which the
// code generator lowers and the runtime allocates once, at start-up.
//
// Note [Memory plan]
// Each rank gets one arena: first the persistent part, every parameter of
// the rank's stages, its gradient accumulator, its optimizer state (SGD:
// "momentum.N"; AdamW: "exp_avg.N" and "exp_avg_sq.N", PyTorch's names) and
// the loss accumulator, each at its own offset for the whole run; then
// everything else packed together greedily by size (largest first, each at
// the lowest offset where nothing whose lifetime overlaps its own is placed;
// TFLite's "greedy by size") over one fine timeline: position k of the
// rank's order spans [k S, (k + 1) S), S one more than the longest body a
// compute runs, and op i of the body a compute at k runs (B's, then W's, for
// a fused BW of a split stage) is time k S + i. On it:
//   - every buffer of Note [Program memory] lives from its write (its recv
//     or data load: the start of its position; the op that yields it) to the
//     start of the position where it goes;
//   - every value of a body that no buffer holds (a temporary, a gradient or
//     loss before its accumulation at the end of the phase) lives from its op
//     to its last use, under the key scratchKey(phase, op, result), stage and
//     microbatch of its compute; each kernel workspace at its op;
//   - what a fused BW's B hands its W (B.I) lives from its op in B to its
//     last use in W.
// So a buffer a compute yields late can reuse the bytes of its temporaries
// that died before, and the arena comes close to the peak. A value yielded
// into a buffer (bufferOfYield) is written straight into it. Offsets are
// multiples of kArenaAlignment. The plan's peak live bytes are the
// verifier's figure (ProgramMemory's peak): the plan adds only padding and
// fragmentation, which the arena size shows beside it. A rank that offloads
// (Note [Offload in the IR]) has a second arena, of host memory, for the
// host copies, packed the same way over its order. Depends on this note:
// MemoryPlan.cpp, zb-plan-memory, convert-zb-to-emitc, the runtime's ledger.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_ANALYSIS_MEMORYPLAN_H
#define ZBC_ANALYSIS_MEMORYPLAN_H

#include "zbc/Analysis/ProgramMemory.h"

#include "mlir/Support/LogicalResult.h"
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
  /// When it is reserved, [from, until), on the plan's fine timeline (Note
  /// [Memory plan]); persistent entries: the whole step.
  int from = 0, until = 0;
};

struct RankPlan {
  std::vector<Placement> persistent; // params, grads, state, loss
  std::vector<Placement> buffers;    // per microbatch, scratch included
  int64_t arenaBytes = 0;
  int64_t peakBytes = 0; // the verifier's figure
  /// The host arena of the stashes it offloads (Note [Offload in the
  /// IR]): each host copy by (F.I key, stage, microbatch), on the rank's
  /// coarse timeline (positions).
  std::vector<Placement> hostBuffers;
  int64_t hostArenaBytes = 0, hostPeakBytes = 0;
};

/// The buffer (stage, key) that stage `stage` yields `key` into: an out.I
/// or d_in.I for a stage on the same rank is that stage's in.I or d_out.I,
/// anything else is the yielding stage's own key.
std::pair<int, std::string> bufferOfYield(int stage, llvm::StringRef key,
                                          const std::vector<int> &rankOfStage);

/// The plan's key of a body value of a `phase` phase (result `result` of
/// the body's op `op`, counting from 0), or with `result` -1, of that op's
/// workspace: "scratch.F.3.0", "scratch.B.5.ws".
std::string scratchKey(zb::ComputeKind phase, int op, int result);

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

/// The plan of every rank of a verified `program`, its memory accounted
/// here; fails (with an error on the program) where it names no pipeline
/// or its memory cannot be accounted.
llvm::FailureOr<std::vector<RankPlan>> planProgramMemory(zb::ProgramOp program);

} // namespace zbc

#endif // ZBC_ANALYSIS_MEMORYPLAN_H
