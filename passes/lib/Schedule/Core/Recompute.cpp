//===- Recompute.cpp - activation recomputation as a schedule lever -------===//
//
// The modes, the planned problem, the placement of R, the microbatch-wise
// fit of an order to a budget and the choices of auto (Recompute.h).
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Recompute.h"
#include "zbc/Schedule/Simulator.h"
#include "Core/Support.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <set>

using namespace zbc::sched;

const char *zbc::sched::recomputeModeName(RecomputeMode mode) {
  switch (mode) {
  case RecomputeMode::None:
    return "none";
  case RecomputeMode::Full:
    return "full";
  case RecomputeMode::Selective:
    return "selective";
  case RecomputeMode::Auto:
    return "auto";
  }
  return "?";
}

llvm::Expected<RecomputeMode>
zbc::sched::parseRecomputeMode(llvm::StringRef text) {
  for (RecomputeMode mode :
       {RecomputeMode::None, RecomputeMode::Full, RecomputeMode::Selective,
        RecomputeMode::Auto})
    if (text == recomputeModeName(mode))
      return mode;
  return fail("recompute mode must be 'none', 'full', 'selective' or 'auto', "
              "got '" + text + "'");
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
    recomputeBeforeEachBackward(
        *table, [&](int stage, int) { return bool(recomputed[stage]); });
    return RecomputedTable{std::move(*table), planned->budget(), ""};
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
    return RecomputedTable{std::move(*table), problem.budget(), ""};
  }
  RecomputedStages every(numStages, true);
  llvm::Expected<RecomputedTable> full = buildFor(problem, every, build);
  if (mode == RecomputeMode::Full || mode == RecomputeMode::Selective) {
    // Selective differs in the costs alone: a cheaper R, a larger M_keep.
    if (full)
      full->note = std::string("recompute ") + recomputeModeName(mode) +
                   ": every forward keeps M_keep and an R rebuilds " +
                   (mode == RecomputeMode::Full ? "its stash"
                                                : "the rest of its stash") +
                   " right before the backward; " + plannedNote(*full);
    return full;
  }

  // auto: no stage, the first k ranks' stages, every stage, and orders
  // built for more memory fitted microbatch by microbatch; the shortest
  // that simulates within the budget.
  struct Plan {
    RecomputedStages stages;
    double relaxedBudget = 0; // > 0: microbatch-wise on this budget's order
  };
  // The last order built for a relaxed budget, so that a fixed order (which
  // ignores the budget) is fitted once.
  std::vector<std::vector<Action>> lastRelaxedOrder;
  bool repeated = false;
  auto realise = [&](const Plan &plan) -> llvm::Expected<RecomputedTable> {
    if (plan.relaxedBudget <= 0)
      return buildFor(problem, plan.stages, build);
    Problem relaxed = problem;
    relaxed.activationBudget = plan.relaxedBudget;
    llvm::Expected<ScheduleTable> table = build(relaxed);
    if (!table)
      return table.takeError();
    repeated = table->ranks == lastRelaxedOrder;
    lastRelaxedOrder = table->ranks;
    llvm::Expected<std::vector<bool>> chosen =
        fitByRecomputing(problem, *table);
    if (!chosen)
      return chosen.takeError();
    int m = problem.microbatches;
    recomputeBeforeEachBackward(*table, [&](int stage, int microbatch) {
      return bool((*chosen)[size_t(stage) * m + microbatch]);
    });
    return RecomputedTable{std::move(*table), plan.relaxedBudget, ""};
  };
  auto describePlan = [&](const Plan &plan, const ScheduleTable *table) {
    if (plan.relaxedBudget <= 0)
      return describe(plan.stages);
    std::string what = "the order for " + formatNumber(plan.relaxedBudget);
    if (table)
      what += " with " + std::to_string(table->count(Kind::R)) + " of " +
              std::to_string(numStages * problem.microbatches) +
              " microbatches recomputed";
    return what;
  };
  std::optional<Plan> best;
  double bestMakespan = 0;
  size_t bestR = 0;
  std::string tried;
  auto consider = [&](llvm::Expected<RecomputedTable> candidate,
                      const Plan &plan) {
    tried += std::string(tried.empty() ? "" : ", ");
    if (!candidate) {
      llvm::consumeError(candidate.takeError());
      tried += describePlan(plan, nullptr) + " does not fit";
      return;
    }
    tried += describePlan(plan, &candidate->table);
    llvm::Expected<SimResult> sim = simulate(problem, candidate->table);
    if (!sim) {
      llvm::consumeError(sim.takeError());
      tried += " does not fit";
      return;
    }
    tried += " " + formatNumber(sim->makespan);
    size_t r = candidate->table.count(Kind::R);
    double tie = 1e-9 * std::max(1.0, bestMakespan);
    if (!best || sim->makespan < bestMakespan - tie ||
        (sim->makespan <= bestMakespan + tie && r < bestR)) {
      best = plan;
      bestMakespan = sim->makespan;
      bestR = r;
    }
  };
  // The ranks of the stages, from whichever set built.
  std::vector<int> rankOfStage;
  if (full)
    rankOfStage = full->table.rankOfStage;
  Plan none{RecomputedStages(numStages, false)};
  llvm::Expected<RecomputedTable> noneTable = realise(none);
  if (rankOfStage.empty() && noneTable)
    rankOfStage = noneTable->table.rankOfStage;
  if (rankOfStage.empty())
    return full.takeError(); // neither builds: say why with the lever on
  llvm::Error fullError = full ? llvm::Error::success() : full.takeError();
  consider(std::move(noneTable), none);
  // Every prefix of ranks up to 16 of them; beyond, 16 evenly spaced ones.
  int p = problem.ranks;
  int step = std::max(1, p / 16);
  for (int k = step; k < p; k += step) {
    Plan first{RecomputedStages(numStages, false)};
    for (size_t s = 0; s < numStages; ++s)
      first.stages[s] = rankOfStage[s] < k;
    consider(realise(first), first);
  }
  if (fullError)
    tried += ", " + describe(every) + " does not fit";
  else
    consider(std::move(full), Plan{every});
  if (problem.budget() > 0)
    for (double factor : {1.0, 1.5, 2.0, 3.0}) {
      Plan relaxed{RecomputedStages(numStages, false),
                   factor * problem.budget()};
      llvm::Expected<RecomputedTable> fitted = realise(relaxed);
      if (repeated && fitted) // the same order as the last factor's
        continue;
      consider(std::move(fitted), relaxed);
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
  llvm::Expected<RecomputedTable> kept = realise(*best);
  if (!kept)
    return kept.takeError();
  std::string planned =
      !kept->table.hasRecompute() ? ""
      : best->relaxedBudget > 0
          ? "; the builder's notes are of the order as built for the budget " +
                formatNumber(best->relaxedBudget) + ", before the R actions"
          : "; " + plannedNote(*kept);
  kept->note = "recompute auto: " + describePlan(*best, &kept->table) +
               " (makespan by choice: " + tried + ")" + planned;
  return kept;
}

llvm::Expected<std::vector<bool>>
zbc::sched::fitByRecomputing(const Problem &problem,
                             const ScheduleTable &table) {
  int m = table.microbatches;
  auto key = [&](const Action &a) { return size_t(a.stage) * m + a.microbatch; };
  std::vector<bool> chosen(size_t(table.numStages()) * m, false);
  if (problem.budget() <= 0)
    return chosen;
  // The same tolerance as the simulator's check.
  double limit = problem.budget() * (1 + 1e-9);
  // Per (stage, microbatch) of the rank at hand: where its stash is next
  // needed (its R goes there: the backward, or the overlapped pair holding
  // it), and whether that point has passed.
  std::vector<int> neededAt(chosen.size(), -1);
  std::vector<bool> due(chosen.size(), false);
  for (auto [r, actions] : llvm::enumerate(table.ranks)) {
    int rank = static_cast<int>(r);
    int n = static_cast<int>(actions.size());
    for (int i = 0; i < n; ++i)
      if (isBackward(actions[i].kind))
        neededAt[key(actions[i])] =
            i > 0 && table.overlaps.count({rank, i - 1}) ? i - 1 : i;
    // In flight and still keeping its stash, the latest-needed first.
    std::priority_queue<std::pair<int, size_t>> keeping;
    double live = 0;
    auto fit = [&](int at) -> llvm::Error {
      while (live > limit) {
        while (!keeping.empty() && (due[keeping.top().second] ||
                                    chosen[keeping.top().second]))
          keeping.pop();
        if (keeping.empty()) {
          const Action &a = actions[at];
          return fail("rank " + llvm::Twine(rank) + ": " + table.name(a) +
                      " (action " + llvm::Twine(at) + ", microbatch " +
                      llvm::Twine(a.microbatch) + ") needs live memory " +
                      formatNumber(live) + ", over the activation budget " +
                      formatNumber(problem.budget()) +
                      " even with every other microbatch in flight "
                      "recomputed");
        }
        size_t victim = keeping.top().second;
        keeping.pop();
        chosen[victim] = true;
        const StageCost &cost = problem.stages[victim / m];
        live -= cost.memB - cost.memKeep; // its F keeps only M_keep
      }
      return llvm::Error::success();
    };
    for (int i = 0; i < n; ++i) {
      // The stashes needed from here on: rebuilt when recomputed.
      for (int k = i; k <= std::min(i + 1, n - 1); ++k) {
        const Action &b = actions[k];
        if (!isBackward(b.kind) || neededAt[key(b)] != i || due[key(b)])
          continue;
        due[key(b)] = true;
        if (chosen[key(b)]) {
          live += problem.stages[b.stage].memoryDelta(Kind::R, true);
          if (llvm::Error error = fit(i))
            return std::move(error);
        }
      }
      const Action &a = actions[i];
      live += problem.stages[a.stage].memoryDelta(a.kind, chosen[key(a)]);
      if (a.kind == Kind::F)
        keeping.push({neededAt[key(a)], key(a)});
      if (llvm::Error error = fit(i))
        return std::move(error);
    }
  }
  return chosen;
}

void zbc::sched::recomputeBeforeEachBackward(
    ScheduleTable &table,
    llvm::function_ref<bool(int stage, int microbatch)> recompute) {
  std::vector<bool> done = table.recomputedMask();
  auto needsR = [&](const Action &a) {
    return isBackward(a.kind) && recompute(a.stage, a.microbatch) &&
           !table.isRecomputed(done, a);
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
        if (!b || !needsR(*b))
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
