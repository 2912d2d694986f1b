//===- Recompute.h - activation recomputation as a schedule lever -*- C++ -*-===//
//
// How a schedule recomputes (Note [Recomputation as an action], Problem.h):
// the modes `--recompute` takes, the problem a builder plans with when some
// stages are recomputed, the pass over a built table that places the R
// actions, the microbatch-wise fit of an order to a budget, and the
// choices of `auto`. buildSchedule applies them
// (BuildOptions::recompute), so every registered schedule can recompute and
// none needs to know how.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_RECOMPUTE_H
#define ZBC_SCHEDULE_RECOMPUTE_H

#include "zbc/Schedule/ScheduleTable.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace zbc::sched {

/// none: every F keeps its stash (M_B) until its backward. full: every
/// (stage, microbatch) is recomputed: F keeps M_keep and an R right before
/// the backward restores M_B (PyTorch's checkpointing of whole stages,
/// Megatron's full recomputation). selective: as full, with the costs of
/// a policy that rebuilds part of the stash (M_keep holds the rest, R is
/// cheaper: Note [Selective recomputation] in RecomputePlan.h, which the
/// zb-schedule pass writes; to the schedule library only the costs
/// differ). auto: what to recompute is chosen by building the schedule
/// several ways and keeping the shortest within the budget
/// (buildWithRecompute).
enum class RecomputeMode { None, Full, Selective, Auto };
const char *recomputeModeName(RecomputeMode mode);
/// Reads "none", "full", "selective" or "auto"; anything else is an error
/// listing them.
llvm::Expected<RecomputeMode> parseRecomputeMode(llvm::StringRef text);

/// Per stage, whether its microbatches are recomputed.
using RecomputedStages = std::vector<bool>;

/// The problem a builder plans with when the `recomputed` stages have an R
/// right before each backward: there F holds M_keep, the backward takes
/// R + B, and a split backward's B holds max(M_W, M_B) until its W, so that
/// the planned live memory bounds the real one from above after every
/// action (the peak of an R, M_B - M_keep over what is in flight, is reached
/// again by the planned B that follows it). A fused BW frees at once, so
/// its R's peak is not bounded that way: `reserveForFusedBackward` lowers
/// the budget by the largest stash an R rebuilds (max M_B - M_keep), an
/// error when that leaves no budget. `problem`'s budget is resolved
/// (buildSchedule does that first).
llvm::Expected<Problem> plannedForRecompute(const Problem &problem,
                                            const RecomputedStages &recomputed,
                                            bool reserveForFusedBackward);

/// Puts an R(s, j) right before every backward (B or BW) of `table` for
/// which `recompute(stage, microbatch)` holds and that has none, keeping
/// PyTorch's F-with-backward overlaps adjacent (the R goes before the pair)
/// and moving the overlap and pass-through indices with the actions.
void recomputeBeforeEachBackward(
    ScheduleTable &table,
    llvm::function_ref<bool(int stage, int microbatch)> recompute);

/// Which (stage, microbatch) pairs of `table` (a table without R) to
/// recompute, with R right before the backward, so that every rank stays
/// within `problem`'s budget; indexed stage * microbatches + microbatch.
/// Walking each rank's order, whenever live memory would pass the budget
/// it recomputes the microbatch in flight whose backward comes last
/// (Belady's rule: the stash that would sit longest), until it fits. An
/// error names the rank, the action and the microbatch where even that is
/// not enough. Without a budget nothing is recomputed.
llvm::Expected<std::vector<bool>> fitByRecomputing(const Problem &problem,
                                                   const ScheduleTable &table);

/// Builds a table for a problem (a registered builder).
using PlannedBuild =
    llvm::function_ref<llvm::Expected<ScheduleTable>(const Problem &)>;

/// A table built with recomputation, and what was chosen.
struct RecomputedTable {
  ScheduleTable table;
  /// The budget the order was planned for (0: none).
  double plannedBudget = 0;
  /// One line for the build's notes (empty for none).
  std::string note;
};

/// Builds with `build` under `mode`: none as it is; full with every stage
/// recomputed (planned without the reserve, and if the table fuses a
/// backward and goes over `problem`'s budget, again with it); auto by
/// building for no stage, the stages of ranks 0..k-1 for growing k (the
/// first ranks keep the most in flight) and every stage, simulating each
/// against `problem`, and keeping the shortest makespan within the budget
/// (on a tie, the fewer R actions). When no set fits, the error is
/// full recomputation's. With a budget, auto also builds the schedule
/// without the lever for 1.5, 2 and 3 times the budget (and the budget
/// itself, which a fixed order ignores) and fits each order to the budget
/// microbatch by microbatch (fitByRecomputing).
llvm::Expected<RecomputedTable> buildWithRecompute(const Problem &problem,
                                                   RecomputeMode mode,
                                                   PlannedBuild build);

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_RECOMPUTE_H
