//===- Search.cpp - zb-auto's search: seeds, variants, descent, repair ---===//
//
// ZB-1p / ZB-2p of the Zero Bubble paper (Qi et al., ICLR 2024) with the
// real per-stage costs and comm; stage s runs on rank s. The search works on
// per-rank orders, times them with a fast as-soon-as-possible model that
// follows Simulator.h's rules (Evaluator), and keeps the order whose longest
// rank span is shortest:
//
//  1. The greedy (Greedy.h): the paper's heuristic, made exact, with knobs.
//  2. Seeds and variants. ZB-H1, ZB-H2 (the registry's builders) and 1F1B
//     with each W after its B are tried where they fit the limit, so zb-auto
//     is never worse than they are at their memory. Then the paper's eight
//     binary choices (B or F first, fill whole gaps or any gap, run W's or
//     wait for a B when memory is full), then warm-up caps (most F's in
//     flight per rank): the F's that fit between a rank's first F and the
//     arrival of its first B (ZB-2p's shape), one or two fewer per rank
//     down from the memory cap (ZB-H1's and ZB-H2's), and their neighbours.
//  3. Improvement. Coordinate descent on the best run's caps, longest-span
//     ranks first (a rank's span is mostly its warm-up phase: one F more
//     trades its wait for the first B against delaying that B upstream).
//     Then a repair of the orders along the critical path: run an op that
//     waited for its rank earlier, move a W into a gap; a move is kept only
//     if the spans, sorted longest first, get lexicographically shorter.
//  4. With what 1-3 leave of the budget (so nothing they find is lost):
//     the reference heuristic's behaviours as greedy knobs (a B waits for a
//     due F, stage 0 flushes its W's, running-minimum warm-up caps), the
//     descent from the best three runs with per-rank policies too (F or B
//     first, the W policy), the repair, and restarts (Search::restartPool).
//
// The builder (Build.cpp) then anneals what this finds (Anneal.h).
//
// lowerBound (LowerBound.cpp) stops the search when it is met and gives the gap
// in the report; on the paper's inputs it proves ZB-1p optimal (it equals
// ZB-H1) and ZB-2p within 0.4%. Work is budgeted in op visits, so the result
// does not depend on the machine's speed. Memory: Note [zb-auto memory].
// Known limit: zb-auto splits every backward; with M_W > M_B a B raises
// memory, so at a limit that only fused BW's fit it can be slower than 1F1B.
//

#include "Greedy.h"
#include "Repair.h"
#include "Core/Support.h"

#include "Builders/Builders.h"

#include "llvm/Support/Debug.h"

#include <algorithm>
#include <cmath>
#include <optional>

#define DEBUG_TYPE "zb-auto"

using namespace zbc::sched;
using namespace zbc::sched::zbauto;

namespace {

/// Work is counted in op visits (one op timed once), so results do not
/// depend on the machine's speed or load. A greedy run costs about
/// kGreedyCost evaluations. The budget is kVisits visits for instances of up
/// to kSmallOps ops, the same time spread thinner above that, and never
/// fewer than kMinGreedyRuns greedy runs: p = 16, m = 48 gets ~500 greedy
/// runs' worth (~50 ms), p = 32, m = 256 ~30 (~40 ms), p = 64, m = 1024 ~30
/// (~0.4 s). The search also stops as soon as it meets the lower bound.
constexpr long kGreedyCost = 7;
constexpr long kMinGreedyRuns = 30;
constexpr long kVisits = 8'000'000;

class Search {
public:
  explicit Search(const Instance &in)
      : in(in), ops(3L * in.p * in.m), greedy(in), eval(in),
        lower(lowerBound(in)) {
    budget = std::max(kMinGreedyRuns * kGreedyCost * ops,
                      kVisits * std::min(ops, kSmallOps) / ops);
  }

  /// Whether the best meets the lower bound: nothing left to find.
  bool optimal() const {
    return !pool.empty() && pool[0].makespan <= lower * (1 + 1e-12);
  }
  /// Whether `fraction` of the budget is used, or there is no point going on.
  bool spent(double fraction = 1) const {
    return used >= fraction * budget || optimal();
  }

  /// Times `order` and keeps it if it is among the kPool best; returns its
  /// timing (valid until the next evaluation), or null if it is invalid or
  /// breaks the limit.
  const Timing *tryOrder(const Order &order) {
    used += ops;
    for (double x : Evaluator::peaks(in, order))
      if (!in.fits(x))
        return nullptr;
    const Timing &t = eval.run(order);
    if (!t.ok)
      return nullptr;
    Key key = keyOf(t);
    for (const Entry &e : pool)
      if (!keyLess(key, e.key) && !keyLess(e.key, key))
        return &t; // a tie: most likely the same order again
    auto at = std::find_if(pool.begin(), pool.end(), [&](const Entry &e) {
      return keyLess(key, e.key);
    });
    if (at - pool.begin() < static_cast<long>(kPool)) {
      pool.insert(at, Entry{std::move(key), order, t.makespan, t.span});
      if (pool.size() > kPool)
        pool.pop_back();
    }
    return &t;
  }

  /// Runs the greedy with `params`; returns the key and spans of its
  /// result (empty key if it failed).
  std::pair<Key, std::vector<double>> tryParams(const Params &params) {
    used += kGreedyCost * ops;
    ++greedyRuns;
    const Timing *t = greedy.run(params, scratch) ? tryOrder(scratch) : nullptr;
    if (!t)
      return {};
    Key key = keyOf(*t);
    // The kStarts best distinct runs, for the descent to start from.
    auto at = std::find_if(starts.begin(), starts.end(), [&](const auto &e) {
      return !keyLess(e.first, key);
    });
    if (at == starts.end() || keyLess(key, at->first)) {
      if (at - starts.begin() < kStarts) {
        starts.insert(at, {key, params});
        if (static_cast<int>(starts.size()) > kStarts)
          starts.pop_back();
      }
    }
    return {std::move(key), t->span};
  }

  /// Repairs the pool's orders, best first, with what is left.
  void repairPool() {
    Repair repair(in, eval);
    std::vector<Entry> start = pool;
    for (size_t i = 0; i < start.size() && !spent(); ++i) {
      Order order = start[i].order;
      long visits = (budget - used) / (static_cast<long>(start.size() - i));
      if (i == 0)
        visits = std::max(visits, (budget - used) / 2);
      long evals = repair.run(order, std::max(1L, visits / ops));
      used += evals * ops;
      repairEvals += evals;
      tryOrder(order);
    }
  }

  /// What is left, on restarts (an iterated local search): the current
  /// order, at first the best, is kicked one to three times
  /// (Repair::kick) and repaired; the result replaces it if it is no
  /// longer (so the walk crosses plateaus), and after kWalk kicks that
  /// found nothing shorter the walk starts again from the next of the pool.
  /// The draws come from a fixed seed, so a build gives the same schedule
  /// every time; kStaleRestarts kicks in a row that improve on nothing end
  /// the search early.
  void restartPool() {
    Repair repair(in, eval);
    SplitMix64 draw(0x9e3779b97f4a7c15ULL);
    Order current = pool[0].order;
    Key currentKey = pool[0].key;
    std::vector<double> span = pool[0].span;
    int walks = 0;
    for (int stale = 0, walk = 0; stale < kStaleRestarts && !spent();) {
      if (walk == kWalk) {
        const Entry &from = pool[++walks % pool.size()];
        current = from.order;
        currentKey = from.key;
        span = from.span;
        walk = 0;
      }
      Order order = current;
      int kicks = 1 + static_cast<int>(draw() % 3);
      for (int k = 0; k < kicks; ++k)
        repair.kick(order, span, draw(), kKickReach);
      long left = (budget - used) / ops;
      long evals =
          repair.run(order, std::max(1L, std::min(left, kRestartEvals)));
      used += evals * ops;
      repairEvals += evals;
      Key before = pool[0].key;
      const Timing *t = tryOrder(order);
      bool better = keyLess(pool[0].key, before);
      stale = better ? 0 : stale + 1;
      walk = better ? 0 : walk + 1;
      if (t && !keyLess(currentKey, keyOf(*t))) {
        currentKey = keyOf(*t);
        span = t->span;
        current = std::move(order);
      }
    }
  }

  struct Entry {
    Key key;
    Order order;
    double makespan;
    std::vector<double> span;
  };
  static constexpr int kStaleRestarts = 300;
  static constexpr int kWalk = 50;
  static constexpr long kRestartEvals = 200;
  static constexpr int kKickReach = 4;
  static constexpr size_t kPool = 3;

  const Instance &in;
  long ops, budget, used = 0;
  Greedy greedy;
  Evaluator eval;
  Order scratch;
  std::vector<Entry> pool; // best first
  /// The best greedy runs with distinct results, best first.
  std::vector<std::pair<Key, Params>> starts;
  static constexpr int kStarts = 3;
  int greedyRuns = 0;
  long repairEvals = 0;
  double lower;
};

/// Caps on F's in flight per rank, from memory alone.
static std::vector<int> memoryCaps(const Instance &in) {
  std::vector<int> cap(in.p);
  for (int r = 0; r < in.p; ++r) {
    double need = std::max(in.cost[r].memB, in.cost[r].memW);
    int fit = 1; // the smallest feasible limit holds one
    while (fit < in.m && need > 0 && in.fits((fit + 1) * need))
      ++fit;
    cap[r] = need > 0 ? fit : in.m;
  }
  return cap;
}

/// The caps that cover each rank's warm-up: the F's that fit between its
/// first F and the arrival of its first B gradient, with the real per-stage
/// costs and comm (F's arrive no faster than the slowest upstream stage).
static std::vector<int> roundTripCaps(const Instance &in) {
  const int p = in.p;
  std::vector<double> first(p), arrive(p);
  double t = 0;
  for (int r = 0; r < p; ++r) {
    first[r] = t;
    t += in.cost[r].F + in.comm;
  }
  double a = first[p - 1] + in.cost[p - 1].F;
  for (int r = p - 1; r >= 0; --r) {
    arrive[r] = a;
    a += in.cost[r].B + in.comm;
  }
  std::vector<int> cap(p);
  double slowest = 0;
  for (int r = 0; r < p; ++r) {
    slowest = std::max(slowest, in.cost[r].F);
    double n = 1 + std::floor((arrive[r] - first[r] - in.cost[r].F) / slowest + 1e-9);
    cap[r] = static_cast<int>(std::clamp<double>(n, 1, in.m));
  }
  return cap;
}

} // namespace

/// The heuristic: seeds, the paper's variants, cap families, coordinate
/// descent on the caps, then the repair. Returns the best order.
Searched zbc::sched::zbauto::searchOrders(const Problem &problem,
                                         const Instance &in,
                                         BuildReport &report) {
  const int p = in.p;
  Search search(in);

  // Seeds: the handcrafted schedules, where they fit the limit, so zb-auto
  // is never worse than ZB-H1 / ZB-H2 at the same memory.
  for (auto *build : {buildZBH1, buildZBH2}) {
    BuildReport ignored;
    llvm::Expected<ScheduleTable> table = build(problem, {}, ignored);
    if (!table) {
      llvm::consumeError(table.takeError());
      continue;
    }
    Order order(p);
    bool linear = static_cast<int>(table->ranks.size()) == p;
    for (int r = 0; linear && r < p; ++r)
      for (const Action &a : table->ranks[r]) {
        if (a.stage != r || a.kind == Kind::BW) {
          linear = false;
          break;
        }
        order[r].push_back({a.kind, a.microbatch});
      }
    if (linear)
      search.tryOrder(order);
  }
  // And 1F1B with each W right after its B (the fused BW's timing, and no
  // more memory when M_W <= M_B): zb-auto is never worse than 1F1B either.
  {
    Order order(p);
    const int m = in.m;
    for (int r = 0; r < p; ++r) {
      int f = 0;
      for (; f < std::min(m, p - r - 1); ++f)
        order[r].push_back({Kind::F, f});
      for (int i = 0; i < m; ++i) {
        if (f < m)
          order[r].push_back({Kind::F, f++});
        order[r].push_back({Kind::B, i});
        order[r].push_back({Kind::W, i});
      }
    }
    search.tryOrder(order);
  }

  // The paper's eight: B or F first, fill whole gaps or any gap, run W's or
  // wait for a B when memory is full.
  for (bool preferB : {true, false})
    for (double fill : {1.0, 0.0})
      for (bool waitWhenFull : {false, true}) {
        Params params;
        params.preferB = preferB;
        params.fill = fill;
        params.waitWhenFull = waitWhenFull;
        search.tryParams(params);
      }
  if (search.pool.empty())
    return {}; // cannot happen: the greedy always completes

  // Warm-up caps: the round trip of each rank (ZB-2p's shape), a slope of
  // one or two F's per rank down from the memory cap (ZB-H1's and ZB-H2's
  // shapes), and their neighbours.
  std::vector<int> memCap = memoryCaps(in), rtCap = roundTripCaps(in);
  auto clampCaps = [&](std::vector<int> cap) {
    for (int r = 0; r < p; ++r)
      cap[r] = std::clamp(cap[r], 1, memCap[r]);
    return cap;
  };
  auto slope = [&](double s, int offset) {
    std::vector<int> cap(p);
    for (int r = 0; r < p; ++r)
      cap[r] = static_cast<int>(std::lround(memCap[0] + offset - s * r));
    return clampCaps(cap);
  };
  auto shifted = [&](std::vector<int> cap, int d) {
    for (int &x : cap)
      x += d;
    return clampCaps(cap);
  };
  // The reference heuristic's warm-up: each rank's count is at most the
  // one before it less `step`, a running minimum, so a heavy middle stage
  // bounds the ones after it too.
  auto runningMin = [&](int step) {
    std::vector<int> cap = memCap;
    for (int r = 1; r < p; ++r)
      cap[r] = std::min(cap[r], cap[r - 1] - step);
    return clampCaps(cap);
  };
  const std::vector<std::vector<int>> families = {
      clampCaps(rtCap),  slope(1, 0),  slope(2, 0), shifted(rtCap, -1),
      shifted(rtCap, 1), slope(1, -1), slope(2, -1)};
  const std::vector<std::vector<int>> runningMins = {
      runningMin(0), runningMin(1), runningMin(2)};
  struct Knobs {
    bool preferB;
    double fill, waitB, waitF = 0;
    bool flushW0 = false;
  };
  auto tryKnobs = [&](const Knobs &k, const std::vector<int> &cap) {
    Params params;
    params.preferB = k.preferB;
    params.fill = k.fill;
    params.waitB = k.waitB;
    params.waitF = k.waitF;
    params.flushW0 = k.flushW0;
    params.cap = cap;
    search.tryParams(params);
  };
  // B or F first, the gaps W's fill, and whether an F waits for a B due soon.
  const Knobs knobs[] = {{true, 0, 0},   {true, 1, 0},  {true, 0.5, 0},
                         {true, 0, 0.5}, {true, 1, 0.5}, {false, 0, 0},
                         {false, 1, 0}};
  for (const Knobs &k : knobs)
    for (const std::vector<int> &cap : families)
      if (!search.spent(0.5))
        tryKnobs(k, cap);

  // Coordinate descent from a greedy run, longest-span ranks first: a
  // rank's span is mostly set by its own warm-up (one more F in flight
  // trades its idle wait for the first B against delaying that B for the
  // ranks upstream), so the critical rank's cap is the first to try. With
  // `policies`, where no cap helps it tries a rank's policies too: the
  // other of F and B first, the next W policy (any gap, whole gaps, none).
  auto descend = [&](Params cur, double until, bool policies) {
    if (cur.cap.empty())
      cur.cap = memCap;
    auto neighbour = [&](Params t, int r, int move) -> std::optional<Params> {
      switch (move) {
      case 0:
      case 1:
        t.cap[r] = std::clamp(t.cap[r] + (move == 0 ? 1 : -1), 1, memCap[r]);
        if (t.cap[r] == cur.cap[r])
          return std::nullopt;
        break;
      case 2:
        if (t.fFirst.empty())
          t.fFirst.assign(p, !t.preferB);
        t.fFirst[r] = !t.fFirst[r];
        break;
      default:
        if (t.fillOf.empty())
          t.fillOf.assign(p, t.fill);
        t.fillOf[r] = t.fillOf[r] <= 0 ? 1.0 : t.fillOf[r] < kInf ? kInf : 0.0;
      }
      return t;
    };
    const std::vector<std::vector<int>> phases =
        policies ? std::vector<std::vector<int>>{{0, 1}, {2, 3}}
                 : std::vector<std::vector<int>>{{0, 1}};
    auto [curKey, curSpan] = search.tryParams(cur);
    while (!curKey.empty() && !search.spent(until)) {
      std::vector<int> ranks(p);
      for (int r = 0; r < p; ++r)
        ranks[r] = r;
      std::stable_sort(ranks.begin(), ranks.end(),
                       [&](int a, int b) { return curSpan[a] > curSpan[b]; });
      bool improved = false;
      for (const std::vector<int> &moves : phases) {
        for (int r : ranks) {
          for (int move : moves) {
            std::optional<Params> t = neighbour(cur, r, move);
            if (!t || search.spent(until))
              continue;
            auto [key, span] = search.tryParams(*t);
            if (!key.empty() && keyLess(key, curKey)) {
              cur = std::move(*t);
              curKey = std::move(key);
              curSpan = std::move(span);
              improved = true;
              break;
            }
          }
          if (improved || search.spent(until))
            break;
        }
        if (improved || search.spent(until))
          break;
      }
      if (!improved)
        break;
    }
  };
  if (!search.starts.empty())
    descend(search.starts[0].second, 0.75, /*policies=*/false);
  double beforeRepair = search.pool[0].makespan;
  search.repairPool();

  // Up to here the search is the one before the reference heuristic's
  // behaviours were added, on the same budget, so what follows (with what
  // that search left of the budget) can only improve on it.
  // The reference heuristic's behaviours: a ready B waits for an F due
  // soon (W's fill the wait), stage 0 flushes its W's before each B once
  // its F's are done, and warm-up counts as a running minimum down the
  // ranks.
  const Knobs behaviours[] = {{false, 0, 0, 1, false}, {false, 0, 0, 1, true},
                              {false, 1, 0, 1, true},  {true, 0, 0, 0, true},
                              {false, 0, 0, 0.5, true}};
  for (const Knobs &k : behaviours)
    for (const std::vector<int> &cap : families)
      if (!search.spent(0.6))
        tryKnobs(k, cap);
  for (const Knobs &k : knobs)
    for (const std::vector<int> &cap : runningMins)
      if (!search.spent(0.6))
        tryKnobs(k, cap);
  // Descents with the policies from the best few runs, then restarts.
  std::vector<std::pair<Key, Params>> starts = search.starts;
  for (size_t i = 0; i < starts.size(); ++i)
    descend(starts[i].second, 0.75 + 0.05 * i, /*policies=*/true);
  search.repairPool();
  search.restartPool();
  // Last, the reference implementation's own heuristic (Rounds.cpp): after
  // everything above, so that it changes nothing they find, and zb-auto is
  // never longer than it where one of its orders is valid. On instances of
  // up to kSmallOps ops: above that its eight orders would cost a fifth of
  // the whole search.
  if (3L * in.p * in.m <= kSmallOps)
    forEachRoundOrder(in, [&](const Order &order) { search.tryOrder(order); });
  LLVM_DEBUG(llvm::dbgs() << "zb-auto: " << search.greedyRuns
                          << " greedy runs, best " << beforeRepair
                          << ", lower bound " << search.lower << "\n");
  LLVM_DEBUG(llvm::dbgs() << "zb-auto: " << search.repairEvals
                          << " repair evaluations, best "
                          << search.pool[0].makespan << "; budget used "
                          << search.used << " of " << search.budget
                          << " op visits\n");

  double best = search.pool[0].makespan;
  report.notes.push_back(
      "zb-auto heuristic: " + std::to_string(search.greedyRuns) +
      " greedy runs (best before repair " + formatNumber(beforeRepair) + "), " +
      std::to_string(search.repairEvals) + " repair evaluations; makespan " +
      formatNumber(best) + ", lower bound " + formatNumber(search.lower) + " (gap " +
      formatNumber(std::max(0.0, std::round(1e4 * (best - search.lower) / best) / 1e2)) +
      "%)" +
      (search.optimal() ? ", optimal" : ""));
  return {search.pool[0].order, search.lower, best};
}
