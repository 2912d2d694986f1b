//===- Offload.cpp - activation offload as a schedule lever ---------------===//
//
// The modes, the places of the copies, the microbatch-wise fit of an order
// to a budget and the choices of auto (Offload.h).
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Offload.h"
#include "zbc/Schedule/Simulator.h"
#include "Core/Support.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <optional>
#include <limits>
#include <set>

using namespace zbc::sched;

const char *zbc::sched::offloadModeName(OffloadMode mode) {
  switch (mode) {
  case OffloadMode::None:
    return "none";
  case OffloadMode::Full:
    return "full";
  case OffloadMode::Auto:
    return "auto";
  }
  return "?";
}

llvm::Expected<OffloadMode> zbc::sched::parseOffloadMode(llvm::StringRef text) {
  for (OffloadMode mode : {OffloadMode::None, OffloadMode::Full, OffloadMode::Auto})
    if (text == offloadModeName(mode))
      return mode;
  return fail("offload mode must be 'none', 'full' or 'auto', got '" + text +
              "'");
}

void zbc::sched::insertOffloads(
    ScheduleTable &table,
    const std::vector<std::vector<OffloadPlace>> &places) {
  std::set<std::pair<int, int>> overlaps;
  for (auto [r, actions] : llvm::enumerate(table.ranks)) {
    int rank = static_cast<int>(r);
    int n = static_cast<int>(actions.size());
    // The copies going before each action (n: at the end), every O before
    // every L so that a place's memory never peaks between them.
    std::vector<std::vector<Action>> before(n + 1);
    if (r < places.size()) {
      for (const OffloadPlace &p : places[r])
        before[p.fenceBefore].push_back({Kind::O, p.stage, p.microbatch});
      for (const OffloadPlace &p : places[r])
        before[p.reloadBefore].push_back({Kind::L, p.stage, p.microbatch});
    }
    std::vector<int> moved(n + 1);
    std::vector<Action> placed;
    for (int i = 0; i <= n; ++i) {
      llvm::append_range(placed, before[i]);
      moved[i] = static_cast<int>(placed.size());
      if (i < n)
        placed.push_back(actions[i]);
    }
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

namespace {

/// The times of one rank's order without copies, and where a copy may go
/// in it (Offload.h).
class RankPlanner {
public:
  RankPlanner(const Problem &problem, const ScheduleTable &table, int rank,
              const std::vector<TimedAction> &line)
      : problem(problem), table(table), rank(rank), line(line),
        n(static_cast<int>(line.size())) {}

  int size() const { return n; }
  const TimedAction &at(int i) const { return line[i]; }
  double copyTime(int i) const {
    return problem.duration(Kind::O, line[i].action.stage);
  }

  /// Where the stash of the backward at `k` is needed: before the pair
  /// when the backward is the second of an overlapped pair.
  int neededAt(int k) const { return splitsPair(k) ? k - 1 : k; }

  /// The fence of an O whose copy ends at `copyEnd`, after its F at `f`:
  /// the first place in (f, cap] where the next action starts once the
  /// copy is over; the latest place up to `cap` when none is; -1 when
  /// there is no place.
  int fence(int f, double copyEnd, int cap) const {
    int x = std::max(f + 1, firstStartingAt(copyEnd));
    for (; x <= cap; ++x)
      if (!splitsPair(x))
        return x;
    return latestFence(f, cap);
  }

  /// The place of an L in [lo, k] whose copy must end by `deadline` (at
  /// most the start of the action at `k`, which needs the stash): the
  /// latest whose preceding action ends early enough; `lo` (or the first
  /// place after it) when none is; -1 when there is no place.
  int reload(int lo, int k, double deadline) const {
    double issue = deadline - copyTime(k);
    for (int x = std::min(k, lastEndingBy(issue) + 1); x >= lo; --x)
      if (!splitsPair(x))
        return x;
    for (int x = lo; x <= k; ++x)
      if (!splitsPair(x))
        return x;
    return -1;
  }
  int reload(int lo, int k) const { return reload(lo, k, line[k].start); }

  /// The latest place in (f, cap] that splits no overlapped pair, or -1:
  /// the fence of an O chosen at `cap`.
  int latestFence(int f, int cap) const {
    for (int x = cap; x > f; --x)
      if (!splitsPair(x))
        return x;
    return -1;
  }

  /// When an L placed before the action at `x` may start: once the action
  /// before it has ended.
  double issueTime(int x) const { return x > 0 ? line[x - 1].end : 0; }

  /// The stall an R of the action at `x`'s stage is expected to cost right
  /// before it: its time beyond the rank's wait there (an R fills a bubble
  /// for free, as Mario places it).
  double rebuildStall(int x, int stage) const {
    double idle = line[x].start - issueTime(x);
    return std::max(0.0, problem.duration(Kind::R, stage) - idle);
  }

private:
  /// Whether a copy before the action at `x` would split an overlapped
  /// pair (PyTorch's OVERLAP_F_B keeps its two actions adjacent).
  bool splitsPair(int x) const {
    return x > 0 && x < n && table.overlaps.count({rank, x - 1});
  }
  /// A rank runs its actions one after another, so starts and ends rise
  /// along its order.
  int firstStartingAt(double t) const {
    auto it = std::partition_point(line.begin(), line.end(),
                                   [&](const TimedAction &a) {
                                     return a.start < t - tolerance(t);
                                   });
    return static_cast<int>(it - line.begin());
  }
  int lastEndingBy(double t) const {
    auto it = std::partition_point(line.begin(), line.end(),
                                   [&](const TimedAction &a) {
                                     return a.end <= t + tolerance(t);
                                   });
    return static_cast<int>(it - line.begin()) - 1;
  }
  static double tolerance(double t) { return 1e-9 * std::max(1.0, std::abs(t)); }

  const Problem &problem;
  const ScheduleTable &table;
  int rank;
  const std::vector<TimedAction> &line;
  int n;
};

llvm::Error needsLink(const Problem &problem) {
  if (problem.copyBandwidth > 0)
    return llvm::Error::success();
  return fail("offload needs a copy bandwidth (--copy-bandwidth, the cost "
              "file's copy_bandwidth): the rate at which a rank copies "
              "between device and host memory");
}

/// The simulated times of `table` (without copies or R), whatever its
/// memory, which the places of its copies and R's follow.
llvm::Expected<SimResult> timesToPlaceBy(const Problem &problem,
                                         const ScheduleTable &table) {
  Problem unbounded = problem;
  unbounded.activationBudget = 0;
  return simulate(unbounded, table);
}

/// Per rank, the index of each (stage, microbatch)'s backward.
std::vector<int> backwardIndex(const std::vector<Action> &actions, int m,
                               size_t pairs) {
  std::vector<int> at(pairs, -1);
  for (auto [i, a] : llvm::enumerate(actions))
    if (isBackward(a.kind))
      at[size_t(a.stage) * m + a.microbatch] = static_cast<int>(i);
  return at;
}

} // namespace

llvm::Expected<std::vector<std::vector<OffloadPlace>>>
zbc::sched::placeEveryOffload(const Problem &problem,
                              const ScheduleTable &table) {
  if (llvm::Error error = needsLink(problem))
    return std::move(error);
  llvm::Expected<SimResult> times = timesToPlaceBy(problem, table);
  if (!times)
    return times.takeError();
  int m = table.microbatches;
  size_t pairs = size_t(table.numStages()) * m;
  std::vector<std::vector<OffloadPlace>> places(table.numRanks());
  for (auto [r, actions] : llvm::enumerate(table.ranks)) {
    RankPlanner plan(problem, table, static_cast<int>(r), times->timeline[r]);
    std::vector<int> back = backwardIndex(actions, m, pairs);
    // Fences in the order of the forwards, each copy queued behind the
    // last (the device-to-host queue runs them in that order).
    double toHostFree = 0;
    for (auto [i, a] : llvm::enumerate(actions)) {
      if (a.kind != Kind::F || problem.stages[a.stage].offloaded() <= 0)
        continue;
      int f = static_cast<int>(i);
      int k = plan.neededAt(back[size_t(a.stage) * m + a.microbatch]);
      double copyEnd =
          std::max(plan.at(f).end, toHostFree) + plan.copyTime(f);
      int fenceAt = plan.fence(f, copyEnd, k);
      if (fenceAt < 0)
        continue; // its backward overlaps its F: no room for the copies
      toHostFree = copyEnd;
      places[r].push_back({a.stage, a.microbatch, fenceAt, -1});
    }
    // Reloads from the last backward back, each copy ending before the
    // next one starts (the host-to-device queue runs them in order).
    std::vector<size_t> byBackward(places[r].size());
    for (size_t i = 0; i < byBackward.size(); ++i)
      byBackward[i] = i;
    auto neededOf = [&](const OffloadPlace &p) {
      return plan.neededAt(back[size_t(p.stage) * m + p.microbatch]);
    };
    llvm::sort(byBackward, [&](size_t x, size_t y) {
      return neededOf(places[r][x]) > neededOf(places[r][y]);
    });
    double nextIssue = std::numeric_limits<double>::infinity();
    for (size_t index : byBackward) {
      OffloadPlace &place = places[r][index];
      int k = neededOf(place);
      place.reloadBefore = plan.reload(
          place.fenceBefore, k, std::min(plan.at(k).start, nextIssue));
      nextIssue = std::min(nextIssue, plan.issueTime(place.reloadBefore));
    }
    llvm::erase_if(places[r],
                   [](const OffloadPlace &p) { return p.reloadBefore < 0; });
  }
  return places;
}

llvm::Expected<LeverFit> zbc::sched::fitByLevers(const Problem &problem,
                                                 const ScheduleTable &table,
                                                 bool mayRecompute) {
  int m = table.microbatches;
  size_t pairs = size_t(table.numStages()) * m;
  LeverFit chosen{std::vector<std::vector<OffloadPlace>>(table.numRanks()),
                  std::vector<bool>(pairs, false)};
  if (problem.budget() <= 0)
    return chosen;
  if (llvm::Error error = needsLink(problem)) {
    if (!mayRecompute)
      return std::move(error);
    llvm::consumeError(std::move(error)); // no copies: R alone relieves
  }
  llvm::Expected<SimResult> times = timesToPlaceBy(problem, table);
  if (!times)
    return times.takeError();
  bool mayOffload = problem.copyBandwidth > 0;
  auto &places = chosen.places;
  // What each relief takes off the device while the microbatch waits.
  auto offloadable = [&](size_t pair) {
    return mayOffload ? problem.stages[pair / m].offloaded() : 0.0;
  };
  auto rebuildable = [&](size_t pair) {
    const StageCost &cost = problem.stages[pair / m];
    return mayRecompute ? cost.memB - cost.memKeep : 0.0;
  };
  // The same tolerance as the simulator's check.
  double limit = problem.budget() * (1 + 1e-9);
  for (auto [r, actions] : llvm::enumerate(table.ranks)) {
    int rank = static_cast<int>(r);
    RankPlanner plan(problem, table, rank, times->timeline[r]);
    int n = plan.size();
    std::vector<int> back = backwardIndex(actions, m, pairs);
    std::vector<int> forwardAt(pairs, -1);
    auto neededOf = [&](size_t pair) { return plan.neededAt(back[pair]); };
    // Microbatches in flight with their stash on the device: those never
    // offloaded or recomputed (pairs) and those reloaded early (indices
    // into places[r]), filtered lazily once their backward has begun.
    std::vector<size_t> keeping, reloaded;
    // The stashes coming back before each action: reloads (indices into
    // places[r]) and R's (pairs).
    std::vector<std::vector<size_t>> reloadsBefore(n + 1), rebuildsBefore(n + 1);
    // When the device-to-host queue is free, by the order's times: fences
    // are chosen in the order of the walk, which is the queue's.
    double toHostFree = 0;
    double live = 0;
    // The stall a choice is expected to cost: its copy out not over when
    // the action at `at` starts, and its copy back not over when its
    // backward starts if issued right after that action.
    auto reloadStall = [&](int k, int at) {
      return std::max(0.0, plan.at(at).end + plan.copyTime(k) -
                               plan.at(k).start);
    };
    auto fit = [&](int at) -> llvm::Error {
      while (live > limit) {
        // The cheapest relief: put off an early reload, offload a
        // microbatch in flight or recompute it; on a tie the one needed
        // last (Belady's rule), a reload put off before a new offload (no
        // new copy) and an offload before an R (no new compute).
        double bestCost = std::numeric_limits<double>::infinity();
        int bestNeeded = -1;
        std::optional<size_t> postpone, offload, recompute;
        auto better = [&](double cost, int k) {
          if (!(cost < bestCost || (cost == bestCost && k > bestNeeded)))
            return false;
          bestCost = cost, bestNeeded = k;
          postpone.reset(), offload.reset(), recompute.reset();
          return true;
        };
        llvm::erase_if(reloaded, [&](size_t index) {
          const OffloadPlace &p = places[r][index];
          return neededOf(size_t(p.stage) * m + p.microbatch) <= at;
        });
        for (size_t index : reloaded) {
          const OffloadPlace &p = places[r][index];
          int k = neededOf(size_t(p.stage) * m + p.microbatch);
          if (better(reloadStall(k, at), k))
            postpone = index;
        }
        llvm::erase_if(keeping, [&](size_t pair) {
          return neededOf(pair) <= at ||
                 (offloadable(pair) <= 0 && rebuildable(pair) <= 0);
        });
        for (size_t pair : keeping) {
          int f = forwardAt[pair], k = neededOf(pair);
          // An O needs a place for its fence: none yet inside an
          // overlapped pair.
          if (offloadable(pair) > 0 && plan.latestFence(f, at) >= 0) {
            double copyEnd =
                std::max(plan.at(f).end, toHostFree) + plan.copyTime(f);
            if (better(std::max(0.0, copyEnd - plan.at(at).start) +
                           reloadStall(k, at),
                       k))
              offload = pair;
          }
          if (rebuildable(pair) > 0 &&
              better(plan.rebuildStall(k, int(pair / m)), k))
            recompute = pair;
        }
        if (postpone) {
          OffloadPlace &place = places[r][*postpone];
          llvm::erase_if(reloaded, [&](size_t i) { return i == *postpone; });
          place.reloadBefore = plan.reload(at + 1, bestNeeded);
          live -= problem.stages[place.stage].offloaded();
          reloadsBefore[place.reloadBefore].push_back(*postpone);
          continue;
        }
        if (recompute) {
          // Its F keeps M_keep from the start; the R before its backward
          // brings the rest back.
          size_t pair = *recompute;
          llvm::erase_if(keeping, [&](size_t p) { return p == pair; });
          chosen.recomputed[pair] = true;
          live -= rebuildable(pair);
          rebuildsBefore[bestNeeded].push_back(pair);
          continue;
        }
        if (!offload) {
          const Action &a = actions[at];
          return fail("rank " + llvm::Twine(rank) + ": " + table.name(a) +
                      " (action " + llvm::Twine(at) + ", microbatch " +
                      llvm::Twine(a.microbatch) + ") needs live memory " +
                      formatNumber(live) + ", over the activation budget " +
                      formatNumber(problem.budget()) +
                      " even with every other microbatch in flight " +
                      (mayRecompute ? "recomputed or offloaded" : "offloaded"));
        }
        size_t pair = *offload;
        llvm::erase_if(keeping, [&](size_t p) { return p == pair; });
        int f = forwardAt[pair];
        toHostFree = std::max(plan.at(f).end, toHostFree) + plan.copyTime(f);
        // The fence as late as the budget allows, so the copy has the
        // longest to run; the reload as late as hides its copy.
        places[r].push_back({static_cast<int>(pair / m),
                             static_cast<int>(pair % m),
                             plan.latestFence(f, at),
                             plan.reload(at + 1, bestNeeded)});
        live -= problem.stages[pair / m].offloaded();
        reloadsBefore[places[r].back().reloadBefore].push_back(
            places[r].size() - 1);
      }
      return llvm::Error::success();
    };
    for (int i = 0; i < n; ++i) {
      for (size_t index : reloadsBefore[i]) {
        live += problem.stages[places[r][index].stage].offloaded();
        reloaded.push_back(index);
      }
      for (size_t pair : rebuildsBefore[i])
        live += rebuildable(pair);
      if (llvm::Error error = fit(i))
        return std::move(error);
      const Action &a = actions[i];
      live += problem.stages[a.stage].memoryDelta(a.kind);
      if (llvm::Error error = fit(i))
        return std::move(error);
      // Kept after the fit: a microbatch cannot leave before its F ends.
      if (a.kind == Kind::F) {
        size_t pair = size_t(a.stage) * m + a.microbatch;
        forwardAt[pair] = i;
        keeping.push_back(pair);
      }
    }
  }
  return chosen;
}

llvm::Expected<OffloadedTable>
zbc::sched::buildWithOffload(const Problem &problem, OffloadMode mode,
                             PlannedBuild build, bool alsoRecompute) {
  if (mode != OffloadMode::None)
    if (llvm::Error error = needsLink(problem))
      return std::move(error);
  if (mode == OffloadMode::None ||
      (mode == OffloadMode::Auto && problem.budget() <= 0)) {
    llvm::Expected<ScheduleTable> table = build(problem);
    if (!table)
      return table.takeError();
    return OffloadedTable{std::move(*table),
                          mode == OffloadMode::Auto
                              ? "offload auto: no activation budget to fit, "
                                "so nothing is offloaded"
                              : ""};
  }
  if (mode == OffloadMode::Full) {
    llvm::Expected<ScheduleTable> table = build(problem);
    if (!table)
      return table.takeError();
    llvm::Expected<std::vector<std::vector<OffloadPlace>>> places =
        placeEveryOffload(problem, *table);
    if (!places)
      return places.takeError();
    insertOffloads(*table, *places);
    std::string note = "offload full: every stash goes to host memory after "
                       "its F and comes back before its backward (" +
                       std::to_string(table->count(Kind::O)) + " offloads)";
    return OffloadedTable{std::move(*table), std::move(note)};
  }

  // auto: orders built for the budget and for more (0: none), and orders
  // planned as if part of each stash were already off the device (so that
  // a builder that plans memory keeps more microbatches in flight, not more
  // W waiting), each fitted to the budget; the shortest within it.
  struct Plan {
    double budgetFactor; // the budget the order is built for, over the real
    double stashShare;   // how much of M_offload the plan keeps on device
  };
  const Plan plans[] = {{1, 1},   {1.5, 1}, {2, 1},   {3, 1},
                        {0, 1},   {1, 0.5}, {1, 0.25}};
  auto orderFor = [&](const Plan &plan) -> llvm::Expected<ScheduleTable> {
    Problem planned = problem;
    // What the plan leaves out comes back for each backward: the budget
    // holds the largest such share apart, as a reload will need it.
    double reserve = 0;
    for (StageCost &cost : planned.stages) {
      double moved = (1 - plan.stashShare) * cost.offloaded();
      reserve = std::max(reserve, moved);
      cost.memB -= moved;
      cost.memKeep = std::min(cost.memKeep, cost.memB);
      cost.memOffload = -1;
    }
    planned.activationBudget =
        plan.budgetFactor * problem.budget() - (plan.budgetFactor ? reserve : 0);
    if (plan.budgetFactor && *planned.activationBudget <= 0)
      return fail("no room left for the plan");
    return build(planned);
  };
  // An order fitted with copies alone, or with copies and R's
  // (fitByLevers).
  auto fitted = [&](ScheduleTable table,
                    bool recomputes) -> llvm::Expected<ScheduleTable> {
    llvm::Expected<LeverFit> fit = fitByLevers(problem, table, recomputes);
    if (!fit)
      return fit.takeError();
    insertOffloads(table, fit->places);
    int m = problem.microbatches;
    recomputeBeforeEachBackward(table, [&](int stage, int microbatch) {
      return bool(fit->recomputed[size_t(stage) * m + microbatch]);
    });
    return table;
  };
  auto describe = [&](const Plan &plan, bool recomputes) {
    std::string what = plan.budgetFactor == 0
                           ? std::string("the order for no budget")
                           : "the order for " +
                                 formatNumber(plan.budgetFactor *
                                              problem.budget());
    if (plan.stashShare < 1)
      what += " planned with " + formatNumber(100 * (1 - plan.stashShare)) +
              "% of each stash off the device";
    if (recomputes)
      what += " (copies and R)";
    return what;
  };
  auto levered = [&](const ScheduleTable &table) {
    size_t copies = table.count(Kind::O), rebuilt = table.count(Kind::R);
    std::string what;
    if (copies)
      what += std::to_string(copies) + " offloaded";
    if (rebuilt)
      what += (copies ? " and " : "") + std::to_string(rebuilt) + " recomputed";
    return std::make_pair(copies + rebuilt, what);
  };
  std::optional<std::pair<Plan, bool>> best;
  double bestMakespan = 0;
  size_t bestLevered = 0;
  std::string tried, firstError;
  std::vector<std::vector<Action>> lastOrder;
  for (const Plan &plan : plans) {
    auto noFit = [&](llvm::Error error) {
      std::string why = llvm::toString(std::move(error));
      if (firstError.empty())
        firstError = why;
      tried += " does not fit";
    };
    llvm::Expected<ScheduleTable> order = orderFor(plan);
    if (!order) {
      tried += std::string(tried.empty() ? "" : ", ") + describe(plan, false);
      noFit(order.takeError());
      continue;
    }
    if (order->ranks == lastOrder)
      continue; // the same order as the last plan's
    lastOrder = order->ranks;
    for (bool recomputes : {false, true}) {
      if (recomputes && !alsoRecompute)
        continue;
      llvm::Expected<ScheduleTable> candidate = fitted(*order, recomputes);
      tried += std::string(tried.empty() ? "" : ", ") +
               describe(plan, recomputes);
      if (!candidate) {
        noFit(candidate.takeError());
        continue;
      }
      llvm::Expected<SimResult> sim = simulate(problem, *candidate);
      if (!sim) {
        llvm::consumeError(sim.takeError());
        tried += " does not fit";
        continue;
      }
      auto [count, what] = levered(*candidate);
      tried += (what.empty() ? "" : " with " + what) + " " +
               formatNumber(sim->makespan);
      double tie = 1e-9 * std::max(1.0, bestMakespan);
      if (!best || sim->makespan < bestMakespan - tie ||
          (sim->makespan <= bestMakespan + tie && count < bestLevered)) {
        best = {plan, recomputes};
        bestMakespan = sim->makespan;
        bestLevered = count;
      }
    }
  }
  if (!best)
    return fail("no order fits the activation budget " +
                formatNumber(problem.budget()) + " with offload" +
                (alsoRecompute ? " and recomputation" : "") + " (tried " +
                tried + ")" + (firstError.empty() ? "" : ": " + firstError));
  // The builder's notes must be the kept table's: build it again (builders
  // are deterministic).
  llvm::Expected<ScheduleTable> order = orderFor(best->first);
  if (!order)
    return order.takeError();
  llvm::Expected<ScheduleTable> kept = fitted(std::move(*order), best->second);
  if (!kept)
    return kept.takeError();
  size_t copies = kept->count(Kind::O), rebuilt = kept->count(Kind::R);
  std::string note = "offload auto: " + describe(best->first, best->second);
  if (copies)
    note += " with " + std::to_string(copies) + " of " +
            std::to_string(problem.stages.size() * problem.microbatches) +
            " microbatches offloaded";
  if (rebuilt)
    note += (copies ? " and " : " with ") + std::to_string(rebuilt) +
            " recomputed";
  note += " (makespan by choice: " + tried + ")";
  if (copies || rebuilt)
    note += "; the builder's notes are of the order as built, before the "
            "copies" + std::string(best->second ? " and R's" : "");
  return OffloadedTable{std::move(*kept), note};
}
