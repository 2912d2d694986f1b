//===- Offload.h - activation offload as a schedule lever ---------*- C++ -*-===//
//
// How a schedule offloads (Note [Offload as actions], Problem.h): the modes
// `--offload` takes, where an offload's two copies go in its rank's order
// so that compute hides them, the microbatch-wise fit of an order to a
// budget by offloading, and the choices of `auto`. buildSchedule applies
// them (BuildOptions::offload), so every registered schedule can offload
// and none needs to know how.
//
// Copies are placed by the times of the order without them (its
// simulation): an O's fence goes before the first action that starts once
// the copy, begun when its F ends and queued behind the copies before it,
// would be over; its L goes as late as lets the copy end before the
// backward starts. Those times are estimates (a stall moves the rest);
// the simulator then charges the copies exactly, a stall shows in the
// makespan, and auto keeps the shortest candidate.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_OFFLOAD_H
#define ZBC_SCHEDULE_OFFLOAD_H

#include "zbc/Schedule/Recompute.h"

#include <string>
#include <vector>

namespace zbc::sched {

/// none: every stash stays on the device. full: every (stage, microbatch)
/// is offloaded after its F and reloaded before its backward (Megatron's
/// and PipeOffload's "offload everything"). auto: the microbatches whose
/// stash would take a rank over the activation budget are offloaded,
/// latest-needed first, on orders built for the budget and for more; the
/// shortest simulated candidate within the budget is kept
/// (buildWithOffload).
enum class OffloadMode { None, Full, Auto };
const char *offloadModeName(OffloadMode mode);
/// Reads "none", "full" or "auto"; anything else is an error listing them.
llvm::Expected<OffloadMode> parseOffloadMode(llvm::StringRef text);

/// Where one offload's copies go in its rank's order: O right before the
/// action at index `fenceBefore`, L right before the one at `reloadBefore`
/// (indices into the order without copies; one past the end: at the end),
/// fenceBefore <= reloadBefore, the O first when they are equal.
struct OffloadPlace {
  int stage, microbatch;
  int fenceBefore, reloadBefore;
};

/// Inserts the O and L of `places` (per rank) into `table`, which has no
/// copies yet, moving PyTorch's overlap and pass-through indices with the
/// actions.
void insertOffloads(ScheduleTable &table,
                    const std::vector<std::vector<OffloadPlace>> &places);

/// Places every (stage, microbatch) of `table` with a stash to move
/// (M_offload > 0): the copies hidden behind compute where the order's
/// times allow (see above). `problem` needs a copy bandwidth.
llvm::Expected<std::vector<std::vector<OffloadPlace>>>
placeEveryOffload(const Problem &problem, const ScheduleTable &table);

/// What a fit to the budget chose: per rank the places of the copies, and
/// the (stage, microbatch) pairs recomputed, indexed stage * microbatches +
/// microbatch (none unless R's were allowed).
struct LeverFit {
  std::vector<std::vector<OffloadPlace>> places;
  std::vector<bool> recomputed;
};

/// Which (stage, microbatch) pairs of `table` (a table without copies or
/// R) to offload, and where, or (with `mayRecompute`) to recompute, so
/// that every rank stays within `problem`'s budget: both levers in one
/// schedule, each microbatch kept, offloaded or recomputed. Walking each
/// rank's order, whenever live memory would pass the budget it relieves it
/// the cheapest way, until it fits: it puts off a reload placed early (to
/// hide its copy) whose backward comes later, offloads a microbatch in
/// flight, its fence at that point (the latest, so the copy has the
/// longest to run) and its reload after it, or recomputes one, its R right
/// before its backward. The cost of a choice is the stall it is expected
/// to cause by the order's times (the copy out queued behind the others
/// and not over by the fence, the copy back not over by the backward; an
/// R's time beyond the rank's wait before that backward, so an R in a
/// bubble is free); on a tie the microbatch needed last goes (Belady's
/// rule), a reload put off before a new offload and an offload before an
/// R. An error names the rank, the action and the microbatch where even
/// that is not enough. Without a budget nothing is chosen; without a copy
/// bandwidth only R's are (an error when they are not allowed).
llvm::Expected<LeverFit> fitByLevers(const Problem &problem,
                                     const ScheduleTable &table,
                                     bool mayRecompute);

/// A table built with offload, and what was chosen.
struct OffloadedTable {
  ScheduleTable table;
  /// One line for the build's notes (empty for none).
  std::string note;
};

/// Builds with `build` under `mode`: none as it is; full by placing every
/// offload in the order built for `problem`; auto by fitting to the budget
/// (fitByOffloading) orders built for the budget (the order without
/// offload wherever that fits), 1.5, 2 and 3 times it and no budget, and
/// orders planned as if a half or three quarters of each stash were
/// already off the device (less the largest such share, which a reload
/// brings back: so that a builder that plans memory spends the room on
/// more microbatches in flight, which offload can move, rather than on W
/// waiting, which it cannot), and keeping the shortest makespan within the
/// budget (on a tie, the fewer copies). With `alsoRecompute` (both levers
/// on auto) each of those orders is also fitted with copies and R's
/// together (fitByLevers), and the shortest of all is kept (on a tie, the
/// fewer offloaded and recomputed microbatches).
/// Without a budget auto offloads nothing: nothing asks it to.
llvm::Expected<OffloadedTable> buildWithOffload(const Problem &problem,
                                                OffloadMode mode,
                                                PlannedBuild build,
                                                bool alsoRecompute = false);

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_OFFLOAD_H
