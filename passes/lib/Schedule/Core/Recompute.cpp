//===- Recompute.cpp - activation recomputation as a schedule lever -------===//
//
// The modes, the planned problem, the placement of R and the choice of
// stages under auto (Recompute.h).
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Recompute.h"
#include "zbc/Schedule/Simulator.h"
#include "Core/Support.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <optional>
#include <set>

using namespace zbc::sched;

const char *zbc::sched::recomputeModeName(RecomputeMode mode) {
  switch (mode) {
  case RecomputeMode::None:
    return "none";
  case RecomputeMode::Full:
    return "full";
  case RecomputeMode::Auto:
    return "auto";
  }
  return "?";
}

llvm::Expected<RecomputeMode>
zbc::sched::parseRecomputeMode(llvm::StringRef text) {
  for (RecomputeMode mode :
       {RecomputeMode::None, RecomputeMode::Full, RecomputeMode::Auto})
    if (text == recomputeModeName(mode))
      return mode;
  return fail("recompute mode must be 'none', 'full' or 'auto', got '" + text +
              "'");
}

llvm::Expected<Problem>
zbc::sched::plannedForRecompute(const Problem &problem,
                                const RecomputedStages &recomputed,
                                bool reserveForFusedBackward) {
  Problem planned = problem;
  double rebuilt = 0; // the largest stash an R puts back
  for (auto [s, cost] : llvm::enumerate(planned.stages)) {
    if (!recomputed[s])
      continue;
    const StageCost &original = problem.stages[s];
    rebuilt = std::max(rebuilt, original.memB - original.memKeep);
    // An R right before the backward: the pair takes R + B, and between F
    // and the backward the microbatch holds only what F kept.
    cost.B += original.time(Kind::R);
    cost.memB = original.memKeep;
    cost.memW = std::max(original.memW, original.memB);
    cost.memKeep = 0;
  }
  if (reserveForFusedBackward && problem.budget() > 0) {
    double left = problem.budget() - rebuilt;
    if (left <= 0)
      return fail("the activation budget " + formatNumber(problem.budget()) +
                  " leaves no room to recompute before a fused backward: an "
                  "R rebuilds up to " + formatNumber(rebuilt) +
                  " (M_B - M_keep of the largest stage) on top of what its "
                  "rank keeps in flight");
    planned.activationBudget = left;
  }
  return planned;
}

namespace {

bool fusesABackward(const ScheduleTable &table) {
  return llvm::any_of(table.ranks, [](const std::vector<Action> &rank) {
    return llvm::any_of(rank,
                        [](const Action &a) { return a.kind == Kind::BW; });
  });
}

/// Builds for one set of recomputed stages (none: as it is), the reserve
/// taken only when the plan without it went over (plannedForRecompute).
llvm::Expected<RecomputedTable> buildFor(const Problem &problem,
                                         const RecomputedStages &recomputed,
                                         PlannedBuild build) {
  auto attempt = [&](bool reserve) -> llvm::Expected<RecomputedTable> {
    llvm::Expected<Problem> planned =
        plannedForRecompute(problem, recomputed, reserve);
    if (!planned)
      return planned.takeError();
    llvm::Expected<ScheduleTable> table = build(*planned);
    if (!table)
      return table.takeError();
    recomputeBeforeEachBackward(*table, recomputed);
    return RecomputedTable{std::move(*table), recomputed, planned->budget(),
                           ""};
  };
  llvm::Expected<RecomputedTable> built = attempt(false);
  if (!built || problem.budget() <= 0 || !llvm::is_contained(recomputed, true) ||
      !fusesABackward(built->table))
    return built;
  llvm::Expected<SimResult> sim = simulate(problem, built->table);
  if (sim)
    return built;
  llvm::consumeError(sim.takeError());
  return attempt(true);
}

/// "stages 0-3 of 8" and the like, for the notes.
std::string describe(const RecomputedStages &recomputed) {
  std::string list;
  size_t count = 0;
  for (size_t s = 0; s < recomputed.size();) {
    if (!recomputed[s]) {
      ++s;
      continue;
    }
    size_t e = s;
    while (e + 1 < recomputed.size() && recomputed[e + 1])
      ++e;
    list += (list.empty() ? "" : ", ") + std::to_string(s) +
            (e > s ? "-" + std::to_string(e) : "");
    count += e - s + 1;
    s = e + 1;
  }
  return (count == 0   ? "no stage"
          : count == 1 ? "stage " + list
                       : "stages " + list) +
         " of " + std::to_string(recomputed.size());
}

std::string plannedNote(const RecomputedTable &built) {
  return "the builder's notes are of the order as planned (each recomputed "
         "backward taking R + B" +
         (built.plannedBudget > 0
              ? ", a budget of " + formatNumber(built.plannedBudget)
              : std::string()) +
         "), which R, free to start early, only shortens";
}

} // namespace

llvm::Expected<RecomputedTable>
zbc::sched::buildWithRecompute(const Problem &problem, RecomputeMode mode,
                               PlannedBuild build) {
  size_t numStages = problem.stages.size();
  if (mode == RecomputeMode::None) {
    llvm::Expected<ScheduleTable> table = build(problem);
    if (!table)
      return table.takeError();
    return RecomputedTable{std::move(*table), RecomputedStages(numStages, false),
                           problem.budget(), ""};
  }
  RecomputedStages every(numStages, true);
  llvm::Expected<RecomputedTable> full = buildFor(problem, every, build);
  if (mode == RecomputeMode::Full) {
    if (full)
      full->note = "recompute full: every forward keeps M_keep and an R "
                   "rebuilds its stash right before the backward; " +
                   plannedNote(*full);
    return full;
  }

  // auto: no stage, the first k ranks' stages, every stage; the shortest
  // that simulates within the budget.
  std::optional<RecomputedTable> best;
  double bestMakespan = 0;
  std::string tried;
  auto consider = [&](llvm::Expected<RecomputedTable> candidate,
                      const RecomputedStages &recomputed) {
    tried += std::string(tried.empty() ? "" : ", ") + describe(recomputed);
    if (!candidate) {
      llvm::consumeError(candidate.takeError());
      tried += " does not fit";
      return;
    }
    llvm::Expected<SimResult> sim = simulate(problem, candidate->table);
    if (!sim) {
      llvm::consumeError(sim.takeError());
      tried += " does not fit";
      return;
    }
    tried += " " + formatNumber(sim->makespan);
    auto count = [](const RecomputedStages &r) {
      return std::count(r.begin(), r.end(), true);
    };
    double tie = 1e-9 * std::max(1.0, bestMakespan);
    if (!best || sim->makespan < bestMakespan - tie ||
        (sim->makespan <= bestMakespan + tie &&
         count(recomputed) < count(best->recomputed))) {
      best = std::move(*candidate);
      bestMakespan = sim->makespan;
    }
  };
  // The ranks of the stages, from whichever set built.
  std::vector<int> rankOfStage;
  if (full)
    rankOfStage = full->table.rankOfStage;
  llvm::Expected<RecomputedTable> none =
      buildFor(problem, RecomputedStages(numStages, false), build);
  if (rankOfStage.empty() && none)
    rankOfStage = none->table.rankOfStage;
  if (rankOfStage.empty())
    return full.takeError(); // neither builds: say why with the lever on
  llvm::Error fullError = full ? llvm::Error::success() : full.takeError();
  consider(std::move(none), RecomputedStages(numStages, false));
  // Every prefix of ranks up to 16 of them; beyond, 16 evenly spaced ones.
  int p = problem.ranks;
  int step = std::max(1, p / 16);
  for (int k = step; k < p; k += step) {
    RecomputedStages first(numStages, false);
    for (size_t s = 0; s < numStages; ++s)
      first[s] = rankOfStage[s] < k;
    consider(buildFor(problem, first, build), first);
  }
  if (fullError) {
    tried += ", " + describe(every) + " does not fit";
  } else {
    consider(std::move(full), every);
  }
  if (!best) {
    if (fullError)
      return std::move(fullError);
    return fail("no set of recomputed stages fits the activation budget " +
                formatNumber(problem.budget()) + " (tried " + tried + ")");
  }
  llvm::consumeError(std::move(fullError));
  // The builder's notes must be the kept table's: build it again (builders
  // are deterministic).
  RecomputedStages chosen = best->recomputed;
  llvm::Expected<RecomputedTable> kept = buildFor(problem, chosen, build);
  if (!kept)
    return kept.takeError();
  kept->note = "recompute auto: " + describe(chosen) + " (makespan by set: " +
               tried + ")" +
               (llvm::is_contained(chosen, true) ? "; " + plannedNote(*kept)
                                                 : std::string());
  return kept;
}

void zbc::sched::recomputeBeforeEachBackward(
    ScheduleTable &table, const RecomputedStages &recomputed) {
  std::vector<bool> done = table.recomputedMask();
  auto isDone = [&](const Action &a) {
    return !done.empty() &&
           done[size_t(a.stage) * table.microbatches + a.microbatch];
  };
  auto isBackward = [&](const Action &a) {
    return (a.kind == Kind::B || a.kind == Kind::BW) &&
           recomputed[size_t(a.stage)];
  };
  std::set<std::pair<int, int>> overlaps;
  for (auto [r, actions] : llvm::enumerate(table.ranks)) {
    int rank = static_cast<int>(r);
    // Where each old action lands (one past the end maps to the new end),
    // for the overlaps and the pass-through cells.
    std::vector<int> moved(actions.size() + 1);
    std::vector<Action> placed;
    placed.reserve(actions.size() * 5 / 4 + 1);
    for (size_t i = 0; i < actions.size(); ++i) {
      const Action &a = actions[i];
      bool pairStarts = table.overlaps.count({rank, static_cast<int>(i)}) &&
                        i + 1 < actions.size();
      // R before the action that opens an overlapped pair, for the pair's
      // backward; else right before the backward itself.
      const Action *pairBackward = pairStarts ? &actions[i + 1] : nullptr;
      for (const Action *b : {pairBackward, &a}) {
        if (!b || !isBackward(*b) || isDone(*b))
          continue;
        bool inPair = b == &a && i > 0 &&
                      table.overlaps.count({rank, static_cast<int>(i) - 1});
        if (!inPair)
          placed.push_back(Action{Kind::R, b->stage, b->microbatch});
      }
      moved[i] = static_cast<int>(placed.size());
      placed.push_back(a);
    }
    moved[actions.size()] = static_cast<int>(placed.size());
    for (const auto &[at, next] : table.overlaps)
      if (at == rank)
        overlaps.insert({rank, moved[next]});
    if (r < table.passthrough.size())
      for (auto &[at, cell] : table.passthrough[r])
        at = moved[at];
    actions = std::move(placed);
  }
  table.overlaps = std::move(overlaps);
}
