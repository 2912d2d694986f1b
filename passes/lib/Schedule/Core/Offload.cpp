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
#include <queue>
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
  const Action &action(int i) const { return line[i].action; }

  /// Where the stash of the backward at `k` is needed: before the pair
  /// when the backward is the second of an overlapped pair.
  int neededAt(int k) const { return splitsPair(k) ? k - 1 : k; }

  /// The fence of an O whose F is at `f`: the first place in (f, cap] where
  /// the next action starts once the copy, begun when F ends, is over; the
  /// latest place up to `cap` when none is; -1 when there is no place.
  int fence(int f, int cap) const {
    double ready = line[f].end + copyTime(f);
    int x = std::max(f + 1, firstStartingAt(ready));
    for (; x <= cap; ++x)
      if (!splitsPair(x))
        return x;
    for (x = cap; x > f; --x)
      if (!splitsPair(x))
        return x;
    return -1;
  }

  /// The place of an L in [lo, k] for the backward needing its stash at
  /// `k`: the latest whose preceding action ends early enough for the copy
  /// to end before `k` starts; `lo` (or the first place after it) when
  /// none is; -1 when there is no place.
  int reload(int lo, int k) const {
    double deadline = line[k].start - copyTime(k);
    for (int x = std::min(k, lastEndingBy(deadline) + 1); x >= lo; --x)
      if (!splitsPair(x))
        return x;
    for (int x = lo; x <= k; ++x)
      if (!splitsPair(x))
        return x;
    return -1;
  }

private:
  double copyTime(int i) const {
    return problem.duration(Kind::O, line[i].action.stage);
  }
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

/// The simulated times of `table` (without copies), whatever its memory.
llvm::Expected<SimResult> timesOf(const Problem &problem,
                                  const ScheduleTable &table) {
  Problem unbounded = problem;
  unbounded.activationBudget = 0;
  return simulate(unbounded, table);
}

llvm::Error needsLink(const Problem &problem) {
  if (problem.copyBandwidth > 0)
    return llvm::Error::success();
  return fail("offload needs a copy bandwidth (--copy-bandwidth, the cost "
              "file's copy_bandwidth): the rate at which a rank copies "
              "between device and host memory");
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

size_t countCopies(const ScheduleTable &table) {
  size_t n = 0;
  for (const std::vector<Action> &rank : table.ranks)
    n += std::count_if(rank.begin(), rank.end(),
                       [](const Action &a) { return a.kind == Kind::O; });
  return n;
}

} // namespace

llvm::Expected<std::vector<std::vector<OffloadPlace>>>
zbc::sched::placeEveryOffload(const Problem &problem,
                              const ScheduleTable &table) {
  if (llvm::Error error = needsLink(problem))
    return std::move(error);
  llvm::Expected<SimResult> times = timesOf(problem, table);
  if (!times)
    return times.takeError();
  int m = table.microbatches;
  size_t pairs = size_t(table.numStages()) * m;
  std::vector<std::vector<OffloadPlace>> places(table.numRanks());
  for (auto [r, actions] : llvm::enumerate(table.ranks)) {
    RankPlanner plan(problem, table, static_cast<int>(r), times->timeline[r]);
    std::vector<int> back = backwardIndex(actions, m, pairs);
    for (auto [i, a] : llvm::enumerate(actions)) {
      if (a.kind != Kind::F || problem.stages[a.stage].offloaded() <= 0)
        continue;
      int f = static_cast<int>(i);
      int k = plan.neededAt(back[size_t(a.stage) * m + a.microbatch]);
      int fenceAt = plan.fence(f, k);
      int reloadAt = fenceAt < 0 ? -1 : plan.reload(fenceAt, k);
      if (reloadAt < 0)
        continue; // its backward overlaps its F: no room for the copies
      places[r].push_back({a.stage, a.microbatch, fenceAt, reloadAt});
    }
  }
  return places;
}

llvm::Expected<std::vector<std::vector<OffloadPlace>>>
zbc::sched::fitByOffloading(const Problem &problem,
                            const ScheduleTable &table) {
  std::vector<std::vector<OffloadPlace>> places(table.numRanks());
  if (problem.budget() <= 0)
    return places;
  if (llvm::Error error = needsLink(problem))
    return std::move(error);
  llvm::Expected<SimResult> times = timesOf(problem, table);
  if (!times)
    return times.takeError();
  int m = table.microbatches;
  size_t pairs = size_t(table.numStages()) * m;
  // The same tolerance as the simulator's check.
  double limit = problem.budget() * (1 + 1e-9);
  for (auto [r, actions] : llvm::enumerate(table.ranks)) {
    int rank = static_cast<int>(r);
    RankPlanner plan(problem, table, rank, times->timeline[r]);
    int n = plan.size();
    std::vector<int> back = backwardIndex(actions, m, pairs);
    std::vector<int> forwardAt(pairs, -1);
    // In flight with its stash on the device, the latest-needed first.
    std::priority_queue<std::pair<int, size_t>> keeping;
    // The stashes coming back before each action, as indices into
    // places[r]; and those back on the device before their backward, the
    // latest-needed first, whose reload may still be put off.
    std::vector<std::vector<size_t>> reloadsBefore(n + 1);
    std::priority_queue<std::pair<int, size_t>> reloaded;
    double live = 0;
    auto fit = [&](int at) -> llvm::Error {
      while (live > limit) {
        std::optional<OffloadPlace> chosen;
        // Put off a reload placed early to hide its copy, if its backward
        // comes after this point: the copy may then stall it.
        while (!reloaded.empty() && !chosen) {
          auto [needed, index] = reloaded.top();
          reloaded.pop();
          if (needed <= at)
            continue;
          OffloadPlace &place = places[r][index];
          place.reloadBefore = plan.reload(at + 1, needed);
          live -= problem.stages[place.stage].offloaded();
          reloadsBefore[place.reloadBefore].push_back(index);
          chosen = place;
        }
        if (chosen)
          continue;
        while (!keeping.empty() && !chosen) {
          auto [needed, pair] = keeping.top();
          keeping.pop();
          if (needed <= at)
            continue; // its backward has begun: nothing left to move
          int stage = static_cast<int>(pair / m);
          int fenceAt = plan.fence(forwardAt[pair], at);
          int reloadAt = fenceAt < 0 ? -1 : plan.reload(at + 1, needed);
          if (reloadAt < 0 || problem.stages[stage].offloaded() <= 0)
            continue;
          chosen = OffloadPlace{stage, static_cast<int>(pair % m), fenceAt,
                                reloadAt};
        }
        if (!chosen) {
          const Action &a = actions[std::min(at, n - 1)];
          return fail("rank " + llvm::Twine(rank) + ": " + table.name(a) +
                      " (action " + llvm::Twine(at) + ", microbatch " +
                      llvm::Twine(a.microbatch) + ") needs live memory " +
                      formatNumber(live) + ", over the activation budget " +
                      formatNumber(problem.budget()) +
                      " even with every other microbatch in flight "
                      "offloaded");
        }
        places[r].push_back(*chosen);
        live -= problem.stages[chosen->stage].offloaded();
        reloadsBefore[chosen->reloadBefore].push_back(places[r].size() - 1);
      }
      return llvm::Error::success();
    };
    for (int i = 0; i < n; ++i) {
      for (size_t index : reloadsBefore[i]) {
        const OffloadPlace &place = places[r][index];
        live += problem.stages[place.stage].offloaded();
        reloaded.push(
            {plan.neededAt(back[size_t(place.stage) * m + place.microbatch]),
             index});
      }
      if (llvm::Error error = fit(i))
        return std::move(error);
      const Action &a = actions[i];
      live += problem.stages[a.stage].memoryDelta(a.kind);
      if (llvm::Error error = fit(i))
        return std::move(error);
      // Pushed after the fit: a microbatch cannot leave before its F ends.
      if (a.kind == Kind::F) {
        size_t pair = size_t(a.stage) * m + a.microbatch;
        forwardAt[pair] = i;
        keeping.push({plan.neededAt(back[pair]), pair});
      }
    }
  }
  return places;
}

llvm::Expected<OffloadedTable>
zbc::sched::buildWithOffload(const Problem &problem, OffloadMode mode,
                             PlannedBuild build) {
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
                       std::to_string(countCopies(*table)) + " offloads)";
    return OffloadedTable{std::move(*table), std::move(note)};
  }

  // auto: the order without offload, and orders built for the budget and
  // for more (0: none) fitted to it; the shortest within the budget.
  // The order for the budget itself, fitted, is the order without offload
  // wherever that fits.
  const double factors[] = {1, 1.5, 2, 3, 0};
  std::vector<std::vector<Action>> lastOrder;
  auto realise = [&](double factor, bool &repeated)
      -> llvm::Expected<ScheduleTable> {
    Problem relaxed = problem;
    relaxed.activationBudget = factor * problem.budget();
    llvm::Expected<ScheduleTable> table = build(relaxed);
    if (!table)
      return table.takeError();
    repeated = table->ranks == lastOrder;
    lastOrder = table->ranks;
    llvm::Expected<std::vector<std::vector<OffloadPlace>>> places =
        fitByOffloading(problem, *table);
    if (!places)
      return places.takeError();
    insertOffloads(*table, *places);
    return table;
  };
  auto describe = [&](double factor) {
    return factor == 0 ? std::string("the order for no budget")
                       : "the order for " +
                             formatNumber(factor * problem.budget());
  };
  std::optional<double> best;
  double bestMakespan = 0;
  size_t bestCopies = 0;
  std::string tried, firstError;
  for (double factor : factors) {
    bool repeated = false;
    llvm::Expected<ScheduleTable> candidate = realise(factor, repeated);
    if (repeated && candidate)
      continue; // the same order as the last factor's
    tried += std::string(tried.empty() ? "" : ", ") + describe(factor);
    if (!candidate) {
      std::string why = llvm::toString(candidate.takeError());
      if (firstError.empty())
        firstError = why;
      tried += " does not fit";
      continue;
    }
    llvm::Expected<SimResult> sim = simulate(problem, *candidate);
    if (!sim) {
      llvm::consumeError(sim.takeError());
      tried += " does not fit";
      continue;
    }
    size_t copies = countCopies(*candidate);
    tried += (copies ? " with " + std::to_string(copies) + " offloaded"
                     : std::string()) +
             " " + formatNumber(sim->makespan);
    double tie = 1e-9 * std::max(1.0, bestMakespan);
    if (!best || sim->makespan < bestMakespan - tie ||
        (sim->makespan <= bestMakespan + tie && copies < bestCopies)) {
      best = factor;
      bestMakespan = sim->makespan;
      bestCopies = copies;
    }
  }
  if (!best)
    return fail("no order fits the activation budget " +
                formatNumber(problem.budget()) + " with offload (tried " +
                tried + ")" + (firstError.empty() ? "" : ": " + firstError));
  // The builder's notes must be the kept table's: build it again (builders
  // are deterministic).
  bool repeated = false;
  lastOrder.clear();
  llvm::Expected<ScheduleTable> kept = realise(*best, repeated);
  if (!kept)
    return kept.takeError();
  std::string note = "offload auto: " + describe(*best) +
                     (bestCopies ? " with " + std::to_string(bestCopies) +
                                       " of " +
                                       std::to_string(problem.stages.size() *
                                                      problem.microbatches) +
                                       " microbatches offloaded"
                                 : std::string()) +
                     " (makespan by choice: " + tried + ")";
  if (bestCopies)
    note += "; the builder's notes are of the order as built, before the "
            "copies";
  return OffloadedTable{std::move(*kept), note};
}
