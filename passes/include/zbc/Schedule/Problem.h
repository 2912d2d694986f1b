//===- Problem.h - what a pipeline schedule is built for ---------*- C++ -*-===//
//
// The inputs every schedule builder, the simulator and the CLI share: ranks,
// stages and their placement, microbatches, per-stage times and activation
// memory, the communication delay and the per-rank activation budget. Plain C++:
// nothing here touches IR, so schedules are fast and unit-testable.
//
// Memory follows the Zero Bubble paper's accounting (../shared/SCHEDULES.md):
// a microbatch's F on a stage adds memB (M_B); its B adds memW - memB, so the
// microbatch then holds memW (M_W); its W frees memW. A fused BW frees memB.
// A recomputed microbatch (Note [Recomputation as an action]) keeps only
// memKeep after its F and gets the rest back from its R.
// Units are the caller's (bytes, or the paper's units); times likewise.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_PROBLEM_H
#define ZBC_SCHEDULE_PROBLEM_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zbc::sched {

/// The work of one stage on one microbatch, or one part of it: the one F/B/W
/// kind of the schedule library (the IR's zb::ComputeKind converts at the
/// edge, zbc/Analysis/ProgramTable.h). R runs a forward again to rebuild
/// what a recomputed F did not keep (Note [Recomputation as an action]).
enum class Kind : uint8_t { F, B, W, BW, R };
constexpr int kNumKinds = 5;
const char *kindName(Kind kind);

/// Note [Recomputation as an action]
/// A microbatch is recomputed on a stage when its rank's order has an
/// R(s, j): its F(s, j) then keeps only memKeep (the stage's inputs, or
/// with selective recomputation whatever else the policy keeps) and frees
/// the rest at once; R(s, j) runs the forward again, after F(s, j) and
/// before B or BW(s, j) on the same rank, and restores the whole stash
/// (memB), which the backward then uses as it would have F's. R is
/// scheduled like any other action: it takes its rank for `recompute` time
/// (by default F's), so placing it in a bubble costs nothing, and the
/// simulator and the verifier count its bytes where it runs. Whether a
/// (stage, microbatch) is recomputed is thus a property of the table, not
/// of the problem: the problem says what recomputation would cost.

/// Cost and memory of one stage (per microbatch). F is positive; B and W may
/// be 0 (a stage whose upstream needs no input gradient has no B work, Note
/// [No gradient upstream] in dialect/docs/ZB.md; one without parameters no W
/// work).
struct StageCost {
  double F = 1, B = 1, W = 1; // times
  double memB = 1;            // held after F (M_B)
  double memW = 1;            // held after B, until W (M_W)
  /// What F keeps of a recomputed microbatch until its R (at most memB):
  /// with full recomputation the stage's inputs.
  double memKeep = 0;
  /// How long R takes; negative: as long as F (a full recomputation).
  double recompute = -1;

  /// How long an action of `kind` takes on this stage (BW: B + W).
  double time(Kind kind) const;
  /// How an action of `kind` changes its rank's live activation memory
  /// (F holds M_B, or M_keep when `recomputed`; R restores the rest; B
  /// trades M_B for M_W; W frees M_W; BW frees M_B).
  double memoryDelta(Kind kind, bool recomputed = false) const;
};

/// How stages map to ranks.
enum class Placement {
  Linear,      // stages == ranks, stage s on rank s
  Interleaved, // stages == v * ranks, stage s on rank s % ranks (Megatron)
  V,           // stages == 2 * ranks, stage s on rank s for s < p, and on
               // rank 2p - 1 - s after (the V shape: rank 0 holds the first
               // and the last stage)
};
const char *placementName(Placement placement);

/// A scheduling problem.
struct Problem {
  int ranks = 1;                 // p
  int microbatches = 1;          // m
  int virtualStages = 1;         // v: stages per rank (interleaved, V)
  std::vector<StageCost> stages; // one per stage, ranks * virtualStages
  double comm = 0;               // delay on every cross-rank edge
  /// Per-rank activation budget (Note [Two memory limits]). 0: none.
  /// Unset: the schedule's default (zb-auto and zb-v have one,
  /// ScheduleInfo::defaultActivationBudget; the others none); buildSchedule
  /// resolves it before the builder runs.
  std::optional<double> activationBudget;

  int numStages() const { return static_cast<int>(stages.size()); }
  /// The budget in force: 0 when none.
  double budget() const { return activationBudget.value_or(0); }
  /// Checks sizes (against zbc/Support/Limits.h), signs and finiteness; the
  /// error names the field and the range accepted.
  llvm::Error validate() const;
};

/// Note [Two memory limits]
/// A schedule's activation budget is what it keeps in flight per rank (the
/// M_B and M_W of the microbatches between F and W: Problem::activationBudget,
/// zb-schedule's activation-budget, zbc schedule's --activation-budget); a
/// memory limit is a rank's whole memory (parameters, gradients, optimizer
/// state, temporaries and activations: zb-schedule's and
/// zb-verify-schedule's memory-limit, zbc compile's --mem-limit), which
/// zb-schedule turns into an activation budget (Note [Rank budget]). An
/// activation budget as written: "default" (the schedule's own: unset),
/// "none" (0) or an amount; these read and write it.
llvm::Expected<std::optional<double>>
parseActivationBudget(llvm::StringRef text);
std::string activationBudgetText(std::optional<double> budget);

/// Checks a problem's sizes before anything is allocated for them: ranks,
/// virtual stages per rank and microbatches at least 1 and at most the
/// ceilings of zbc/Support/Limits.h, and so are their products (stages,
/// stage-microbatch pairs). Takes int64 so that callers check what the
/// user wrote before narrowing it to Problem's ints.
llvm::Error checkProblemSize(int64_t ranks, int64_t virtualStages,
                             int64_t microbatches);

/// The rank holding each stage under `placement`.
std::vector<int> placeStages(Placement placement, int ranks, int numStages);

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_PROBLEM_H
