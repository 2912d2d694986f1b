//===- Registry.h - the named schedules ---------------------------*- C++ -*-===//
//
// Every schedule zbc knows, by name: what it is, where it comes from, its
// bubble and peak memory, and the function that builds it. `buildSchedule`
// is the one entry point: it validates the problem, builds, verifies the
// table and simulates it, so no schedule bypasses the checks. Adding a
// schedule: dialect/docs/ZB.md, "Adding a schedule".
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_REGISTRY_H
#define ZBC_SCHEDULE_REGISTRY_H

#include "zbc/Schedule/Offload.h"
#include "zbc/Schedule/Recompute.h"
#include "zbc/Schedule/Simulator.h"

#include "llvm/ADT/StringRef.h"

#include <functional>
#include <optional>
#include <vector>

namespace zbc::sched {

/// Knobs some schedules read; the others ignore them.
struct BuildOptions {
  /// zb-auto: refine/certify the heuristic with the ILP (CBC) for at most
  /// this many seconds (0: heuristic only).
  double exactSeconds = 0;
  /// Recompute (Recompute.h): the builder plans with plannedForRecompute's
  /// problem and an R goes right before each recomputed backward; under
  /// auto, buildWithRecompute chooses the stages. Builders never see it:
  /// buildSchedule applies it.
  RecomputeMode recompute = RecomputeMode::None;
  /// Offload (Offload.h): under full every stash is copied to host memory
  /// and back; under auto buildWithOffload fits orders to the budget by
  /// offloading. A microbatch is recomputed or offloaded, never both: with
  /// recompute, an error, except both on auto, where offload auto also fits
  /// with R's (fitByLevers: each microbatch kept, offloaded or recomputed)
  /// and buildSchedule keeps the shorter of that and recompute auto.
  OffloadMode offload = OffloadMode::None;
};

/// What a builder returns besides the table: notes for the user, e.g. the
/// exact mode's bound and gap.
struct BuildReport {
  std::vector<std::string> notes;
};

using BuildFn = std::function<llvm::Expected<ScheduleTable>(
    const Problem &, const BuildOptions &, BuildReport &)>;

struct ScheduleInfo {
  const char *name;      // kebab-case, e.g. "zb-h1"
  const char *summary;   // one line
  const char *source;    // paper or system it comes from
  const char *bubble;    // closed form or description
  const char *memory;    // peak activation memory
  Placement placement;   // how it places stages
  bool usesVirtual;      // reads Problem::virtualStages (interleaved)
  BuildFn build;
  /// The limit the schedule plans for when the problem leaves it unset, and
  /// how it is derived ("2p max(M_B, M_W)"); null: none (no limit).
  double (*defaultActivationBudget)(const Problem &) = nullptr;
  const char *defaultBudgetRule = nullptr;
};

/// Note [Stages per rank]
/// The stages each rank holds under `info`, decided here alone: 1 for a
/// linear schedule, 2 for a V; for an interleaved one what was `requested`
/// (--virtual), else the model's `modelStages` shared evenly by `ranks`
/// where both are known, else 1. A request the schedule cannot run, and
/// model stages the ranks cannot share, are errors that say why ("has 6
/// stages, which 4 ranks ...": the caller names the model).
llvm::Expected<int64_t>
resolveStagesPerRank(const ScheduleInfo &info, std::optional<int64_t> requested,
                     std::optional<int64_t> modelStages = std::nullopt,
                     std::optional<int64_t> ranks = std::nullopt);

/// All registered schedules, sorted by name: zbc's own and those added by
/// registerSchedule.
const std::vector<ScheduleInfo> &registeredSchedules();
/// The schedule called `name`, or null.
const ScheduleInfo *lookupSchedule(llvm::StringRef name);

/// Adds a schedule of one's own (zbc/DSL/Schedule.h writes them; a plugin
/// registers them when zbc loads it). Its strings must outlive the process
/// (string literals, or registerSchedule's copies in ScheduleDSL.cpp).
/// Registration happens before schedules are looked up: it invalidates
/// pointers lookupSchedule returned. A name already registered is an error.
llvm::Error registerSchedule(ScheduleInfo info);

struct BuiltSchedule {
  /// The problem as built: its activation budget resolved (never unset), so
  /// the table, the simulation and every writer agree on it.
  Problem problem;
  /// Where the limit came from: "given", "none" (0, or unset for a schedule
  /// without a default) or the default's rule ("zb-auto default: 2p
  /// max(M_B, M_W)").
  std::string budgetOrigin;
  ScheduleTable table;
  SimResult sim;
  BuildReport report;
};

/// Validates `problem` for schedule `name`, resolves an unset activation
/// budget to the schedule's default (or none), builds (with recomputation
/// or offload when `options` asks: buildWithRecompute, buildWithOffload),
/// verifies and simulates against
/// `problem` itself.
/// An unknown name is an error that lists the registered ones.
llvm::Expected<BuiltSchedule> buildSchedule(llvm::StringRef name,
                                            const Problem &problem,
                                            const BuildOptions &options = {});

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_REGISTRY_H
