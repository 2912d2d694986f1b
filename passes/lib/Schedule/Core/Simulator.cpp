//===- Simulator.cpp - event-driven timing of a schedule ------------------===//
//
// Times a ScheduleTable against a Problem's costs and checks what only
// timing and the problem can show: cross-rank dependencies that can never be
// met (deadlock) and the per-rank activation budget. The rules are
// Simulator.h's.
//
// Each rank runs its actions strictly in order, so the start of an action is
//   max(end of the rank's previous action, end of each dependency + comm if
//       the dependency ran on another rank)
// and the schedule is a DAG whose longest paths are the start times. The
// simulator walks it with a work list of ranks: a rank runs actions until its
// next one depends on something not yet done, then parks on that one
// dependency; finishing an action wakes the ranks parked on it. Every action
// runs once and every park is followed by a wake-up or the end, so the work
// is O(actions + stages * microbatches), independent of the number of ranks
// (p = 64, m = 1024, ~200k actions: a few milliseconds). No priority queue is
// needed: no rank chooses between actions, so any order that respects the
// DAG gives the same times. If the list empties while work remains, every
// unfinished rank is parked on something that will never finish: a deadlock,
// reported rank by rank.
//
// Copies (O, L: Note [Offload as actions]) do not take the compute stream:
// each rank has a device-to-host and a host-to-device queue, free at a
// time of their own; an O's place in the order only raises the compute
// stream's free time to the copy's end (the fence), and an L starts from
// the stream's free time at its place.
//
// Memory does not depend on timing (a rank's running total changes only with
// its own actions, in its order), so it is a separate linear pass.
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Simulator.h"
#include "zbc/Schedule/Dependences.h"
#include "Core/Support.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace zbc::sched;

namespace {

struct Simulation {
  const Problem &problem;
  const ScheduleTable &table;
  int numStages, microbatches, numRanks;
  /// Which (stage, microbatch) pairs are restored (their backward waits
  /// for the stash of an R or an L): empty when none is.
  const std::vector<bool> &restored;

  /// End time of each product, indexed by key(); negative: not done yet
  /// (times are never negative: the clock starts at 0 and costs are >= 0).
  std::vector<double> doneAt;
  /// Ranks parked on each product: an intrusive list through nextParked,
  /// since a rank is parked on at most one product at a time.
  std::vector<int> firstParked, nextParked;
  std::vector<int> parkedOn;  // per rank: the key, or -1
  std::vector<size_t> next;   // per rank: index of the next action to run
  std::vector<double> freeAt; // per rank: end of its last action
  std::vector<int> work;      // ranks that may be able to run
  /// Per rank: when its device-to-host (O) and host-to-device (L) queues
  /// are free; per (stage, microbatch): when its O ended. Empty without
  /// offload.
  std::vector<double> toHostFreeAt, toDeviceFreeAt, offloadedAt;
  /// Per stage: when its parameters are gathered (Note [Collectives in the
  /// simulator]); 0 without a sharded optimizer.
  std::vector<double> gathered;
  /// Note [Vocabulary passes]: per barrier product (VocabStats or
  /// VocabGrad of a microbatch, by key), how many ranks' passes have ended
  /// and the latest end; the barrier is done once every rank's has.
  std::vector<int> passesEnded;
  std::vector<double> lastPassEnd;

  Simulation(const Problem &problem, const ScheduleTable &table,
             const std::vector<bool> &restored)
      : problem(problem), table(table), numStages(table.numStages()),
        microbatches(table.microbatches), numRanks(table.numRanks()),
        restored(restored),
        // Product-major keys: the barriers' come last, and only a problem
        // with vocabulary passes (so its table: simulate checks) has them.
        doneAt((problem.vocab.enabled() ? kNumProducts
                                   : static_cast<int>(Product::VocabStats)) *
                   static_cast<size_t>(numStages) * microbatches,
               -1.0),
        firstParked(doneAt.size(), -1), nextParked(numRanks, -1),
        parkedOn(numRanks, -1), next(numRanks, 0), freeAt(numRanks, 0.0),
        passesEnded(problem.vocab.enabled() ? doneAt.size() : 0, 0),
        lastPassEnd(passesEnded.size(), 0.0) {
    if (table.hasOffload()) {
      toHostFreeAt.assign(numRanks, 0.0);
      toDeviceFreeAt.assign(numRanks, 0.0);
      offloadedAt.assign(static_cast<size_t>(numStages) * microbatches, 0.0);
    }
  }

  int key(const ProductRef &d) const {
    return static_cast<int>(productIndex(d, numStages, microbatches));
  }

  /// The products `a` needs, as keys (Dependences.h): at most two.
  int dependencies(const Action &a, int keys[2]) const {
    int n = 0;
    forEachDependence(
        a, numStages, [&](const ProductRef &d) { keys[n++] = key(d); },
        table.isRecomputed(restored, a), problem.vocab.barriers);
    return n;
  }

  /// Times copy `a` on rank `r`'s queues (Note [Offload as actions]) and
  /// returns its end; an O also fences the compute stream.
  double copy(int r, const Action &a, SimResult &result) {
    size_t pair = size_t(a.stage) * microbatches + a.microbatch;
    double length = problem.duration(a.kind, a.stage), start, end;
    if (a.kind == Kind::O) {
      // Its F ran earlier on this rank (ScheduleTable::verify), so its
      // activation is done.
      double made = doneAt[key({Product::Activation, a.stage, a.microbatch})];
      start = std::max(toHostFreeAt[r], made);
      end = toHostFreeAt[r] = offloadedAt[pair] = start + length;
      freeAt[r] = std::max(freeAt[r], end);
    } else {
      start = std::max({toDeviceFreeAt[r], freeAt[r], offloadedAt[pair]});
      end = toDeviceFreeAt[r] = start + length;
    }
    result.timeline[r].push_back({a, start, end});
    return end;
  }

  /// The product `a` finishes, or -1 (W).
  int product(const Action &a) const {
    std::optional<ProductRef> made = productOf(a);
    return made ? key(*made) : -1;
  }

  int stageOfKey(int k) const { return (k / microbatches) % numStages; }
  /// Whether key `k` is a barrier of the vocabulary passes: every rank's
  /// passes meet there, and its collectives hold their own time.
  bool isBarrier(int k) const {
    return k / (numStages * microbatches) >=
           static_cast<int>(Product::VocabStats);
  }

  /// Runs rank `r` until it finishes or parks on a product not yet done.
  void advance(int r, SimResult &result) {
    const std::vector<Action> &actions = table.ranks[r];
    while (next[r] < actions.size()) {
      const Action &a = actions[next[r]];
      if (isCopy(a.kind)) {
        double end = copy(r, a, result);
        ++next[r];
        if (a.kind == Kind::L)
          finish(key({Product::Stash, a.stage, a.microbatch}), end);
        continue;
      }
      int keys[2];
      int n = dependencies(a, keys);
      double start =
          std::max(freeAt[r], isVocabPass(a.kind) ? 0.0 : gathered[a.stage]);
      for (int i = 0; i < n; ++i) {
        double end = doneAt[keys[i]];
        if (end < 0) {
          parkedOn[r] = keys[i];
          nextParked[r] = firstParked[keys[i]];
          firstParked[keys[i]] = r;
          return;
        }
        // The input crosses ranks only if its stage lives elsewhere.
        if (!isBarrier(keys[i]) && table.rankOfStage[stageOfKey(keys[i])] != r)
          end += problem.comm;
        start = std::max(start, end);
      }
      double end = start + problem.duration(a.kind, a.stage);
      result.timeline[r].push_back({a, start, end});
      freeAt[r] = end;
      ++next[r];
      int done = product(a);
      if (done >= 0 && isVocabPass(a.kind))
        passEnded(done, end);
      else if (done >= 0)
        finish(done, end);
    }
  }

  /// Note [Vocabulary passes]: one rank's S or T of barrier `barrier` has
  /// ended at `end`; the last of them starts the barrier's collectives.
  void passEnded(int barrier, double end) {
    lastPassEnd[barrier] = std::max(lastPassEnd[barrier], end);
    if (++passesEnded[barrier] == numRanks)
      finish(barrier, lastPassEnd[barrier] + problem.vocab.collective);
  }

  /// Records that product `done` is done at `end` and wakes its waiters.
  void finish(int done, double end) {
    doneAt[done] = end;
    for (int waiter = firstParked[done]; waiter >= 0;
         waiter = nextParked[waiter]) {
      parkedOn[waiter] = -1;
      work.push_back(waiter);
    }
    firstParked[done] = -1;
  }

  /// The deadlock report: per unfinished rank, the action it is stuck at,
  /// the product it waits for and where that product sits.
  llvm::Error deadlock(size_t ran, size_t total) const {
    // Which action makes each product, and where it sits, for the message.
    std::vector<std::pair<int, size_t>> maker(doneAt.size(), {-1, 0});
    std::vector<Kind> makerKind(doneAt.size(), Kind::F);
    for (int r = 0; r < numRanks; ++r)
      for (size_t i = 0; i < table.ranks[r].size(); ++i) {
        int k = product(table.ranks[r][i]);
        if (k >= 0) {
          maker[k] = {r, i};
          makerKind[k] = table.ranks[r][i].kind;
        }
      }
    std::string message = "the schedule deadlocks: no rank can start its "
                          "next action (" +
                          std::to_string(ran) + " of " + std::to_string(total) +
                          " actions ran)";
    for (int r = 0; r < numRanks; ++r) {
      if (next[r] == table.ranks[r].size())
        continue;
      const Action &a = table.ranks[r][next[r]];
      int k = parkedOn[r];
      int s = stageOfKey(k), j = k % microbatches;
      Action needed{makerKind[k], s, j};
      auto [producer, position] = maker[k];
      message += "\n  rank " + std::to_string(r) + ": " + table.name(a) +
                 " (action " + std::to_string(next[r]) + ", microbatch " +
                 std::to_string(a.microbatch) + ") waits for ";
      if (isBarrier(k)) {
        // Every rank's pass meets there: name the ranks still short of it.
        Kind pass = makerKind[k];
        message += "barrier " + std::string(pass == Kind::S ? "1" : "2") +
                   " of microbatch " + std::to_string(j) + " (every rank's " +
                   kindName(pass) + "), which ";
        std::string behind;
        for (int q = 0; q < numRanks; ++q) {
          auto it = llvm::find(table.ranks[q], Action{pass, q, j});
          if (it - table.ranks[q].begin() >= static_cast<long>(next[q]))
            behind += (behind.empty() ? "rank " : ", rank ") + std::to_string(q);
        }
        message += behind + " has not run";
        continue;
      }
      message += table.name(needed);
      if (producer < 0) {
        message += ", which no rank runs"; // verify() rules this out
      } else if (producer == r) {
        message += ", which comes later on this rank (action " +
                   std::to_string(position) + ")";
      } else {
        const std::vector<Action> &other = table.ranks[producer];
        message += " on rank " + std::to_string(producer) + " (action " +
                   std::to_string(position) + "), ";
        message += next[producer] < other.size()
                       ? "which is stuck at " + table.name(other[next[producer]]) +
                             " (action " + std::to_string(next[producer]) + ")"
                       : std::string("which finished without it");
      }
    }
    return fail(message);
  }
};

} // namespace

/// Checks that the table fits the problem: same ranks, stages, microbatches.
static llvm::Error checkShape(const Problem &problem,
                              const ScheduleTable &table) {
  if (table.numRanks() != problem.ranks)
    return fail("the schedule has " + llvm::Twine(table.numRanks()) +
                " ranks, the problem " + llvm::Twine(problem.ranks));
  if (table.numStages() != problem.numStages())
    return fail("the schedule places " + llvm::Twine(table.numStages()) +
                " stages, the problem has " + llvm::Twine(problem.numStages()));
  if (table.microbatches != problem.microbatches)
    return fail("the schedule is for " + llvm::Twine(table.microbatches) +
                " microbatches, the problem has " +
                llvm::Twine(problem.microbatches));
  return llvm::Error::success();
}

/// Walks each rank's order, tracking live activation memory on the device
/// and, for offloaded microbatches, on the host; the first action on the
/// lowest rank that takes device memory over the limit is the error.
static llvm::Error trackMemory(const Problem &problem,
                               const ScheduleTable &table,
                               const std::vector<bool> &recomputed,
                               const std::vector<bool> &offloaded,
                               SimResult &result) {
  // Sums of deltas that cancel exactly on paper (F then B then W) leave
  // round-off in binary; a limit met on paper must not fail by 1 ulp.
  double limit = problem.budget() * (1 + 1e-9);
  result.peakMemory.assign(table.numRanks(), 0.0);
  if (!offloaded.empty())
    result.peakHostMemory.assign(table.numRanks(), 0.0);
  for (int r = 0; r < table.numRanks(); ++r) {
    double live = 0, peak = 0, host = 0;
    for (auto [i, a] : llvm::enumerate(table.ranks[r])) {
      double delta = problem.memoryDelta(a.kind, a.stage,
                                         table.isRecomputed(recomputed, a));
      live += delta;
      peak = std::max(peak, live);
      if (!offloaded.empty() && !isVocabPass(a.kind)) {
        const StageCost &cost = problem.stages[a.stage];
        host += cost.hostMemoryDelta(a.kind, table.isRecomputed(offloaded, a));
        result.peakHostMemory[r] = std::max(result.peakHostMemory[r], host);
      }
      if (problem.budget() > 0 && live > limit)
        return fail("rank " + llvm::Twine(r) + ": " + table.name(a) + " (action " +
                    llvm::Twine(i) + ", microbatch " +
                    llvm::Twine(a.microbatch) + ") raises live memory to " +
                    formatNumber(live) + ", over the activation budget " + formatNumber(problem.budget()) +
                    " (it adds " + formatNumber(delta) + " to " +
                    formatNumber(live - delta) + ")");
    }
    result.peakMemory[r] = peak;
  }
  return llvm::Error::success();
}

namespace {

/// Note [Collectives in the simulator]: the sums a rank runs over
/// `members` processes, or nothing for a group of one.
int membersOf(const Problem &problem, const ScheduleTable &table,
              const GradientSum &sum) {
  std::vector<int> holders;
  for (int s : sum.stages)
    if (!llvm::is_contained(holders, table.rankOfStage[s]))
      holders.push_back(table.rankOfStage[s]);
  return static_cast<int>(holders.size()) * problem.replicas;
}

/// Note [Collectives in the simulator]: with a sharded optimizer, when each
/// stage's parameters are gathered (0 otherwise): each rank gathers its
/// stages' in the order it first runs them, from the step's start.
std::vector<double> gatheredAt(const Problem &problem,
                               const ScheduleTable &table) {
  std::vector<double> at(problem.numStages(), 0.0);
  if (!problem.sharded || problem.collectiveBandwidth <= 0)
    return at;
  // Each parameter's working copies, gathered with the first of its
  // stages that its rank runs.
  std::vector<double> bytes(problem.numStages(), 0.0);
  for (int r = 0; r < static_cast<int>(table.ranks.size()); ++r) {
    std::vector<int> order; // the rank's stages, as it first runs them
    for (const Action &a : table.ranks[r])
      if (!llvm::is_contained(order, a.stage))
        order.push_back(a.stage);
    for (const GradientSum &sum : problem.gradientSums) {
      auto first = llvm::find_if(order, [&](int s) {
        return llvm::is_contained(sum.stages, s);
      });
      if (first != order.end())
        bytes[*first] += sum.paramBytes;
    }
    double channel = 0;
    for (int s : order)
      at[s] = channel +=
          problem.shardedCollectiveTime(bytes[s], problem.replicas);
  }
  return at;
}

/// Note [Collectives in the simulator]: each rank's gradient sums, issued
/// at the end of the last W (or BW) of their stages there and run one at a
/// time beside its compute, after its gathers; a rank's span ends no
/// earlier than its last.
void timeCollectives(const Problem &problem, const ScheduleTable &table,
                     const std::vector<double> &gathered, SimResult &result) {
  int ranks = static_cast<int>(table.ranks.size());
  result.communication.assign(ranks, 0.0);
  if (problem.collectiveBandwidth <= 0 || problem.gradientSums.empty())
    return;
  // The end of the last compute writing each stage's gradients.
  std::vector<double> lastWriteEnd(problem.numStages(), 0.0);
  for (const std::vector<TimedAction> &line : result.timeline)
    for (const TimedAction &t : line)
      if (t.action.kind == Kind::W || t.action.kind == Kind::BW)
        lastWriteEnd[t.action.stage] =
            std::max(lastWriteEnd[t.action.stage], t.end);
  double makespan = 0;
  for (int r = 0; r < ranks; ++r) {
    const std::vector<TimedAction> &line = result.timeline[r];
    if (line.empty())
      continue;
    std::vector<std::pair<double, double>> issued; // (issue, duration)
    double channel = 0; // after the rank's gathers
    for (int s = 0; s < problem.numStages(); ++s)
      if (table.rankOfStage[s] == r)
        channel = std::max(channel, gathered[s]);
    result.communication[r] = channel;
    for (const GradientSum &sum : problem.gradientSums) {
      double issue = -1;
      for (int s : sum.stages)
        if (table.rankOfStage[s] == r)
          issue = std::max(issue, lastWriteEnd[s]);
      int members = membersOf(problem, table, sum);
      bool scatter = problem.sharded && sum.stages.size() == 1;
      if (issue >= 0 && members > 1)
        issued.push_back(
            {issue, scatter ? problem.shardedCollectiveTime(sum.bytes, members)
                            : problem.allReduceTime(sum.bytes, members)});
    }
    llvm::stable_sort(issued);
    double end = 0, start = line.front().start;
    for (const TimedAction &t : line)
      end = std::max(end, t.end);
    for (auto [issue, duration] : issued) {
      channel = std::max(channel, issue) + duration;
      result.communication[r] += duration;
    }
    // A rank whose first action waited for its gathers began the step
    // with them, at 0 (Note [Collectives in the simulator]).
    int first = line.front().action.stage;
    if (gathered[first] > 0 && line.front().start <= gathered[first])
      start = 0;
    makespan = std::max(makespan, std::max(end, channel) - start);
  }
  result.exposedCommunication = std::max(0.0, makespan - result.makespan);
  result.makespan = std::max(result.makespan, makespan);
}

} // namespace

llvm::Expected<SimResult> zbc::sched::simulate(const Problem &problem,
                                               const ScheduleTable &table) {
  // Imported CSVs reach here without buildSchedule's checks, so repeat them:
  // the rest of this file relies on every index being in range and on each
  // (stage, microbatch) having its F and backward, F first, on its rank.
  if (llvm::Error error = problem.validate())
    return std::move(error);
  if (llvm::Error error = checkShape(problem, table))
    return std::move(error);
  if (llvm::Error error = table.verify())
    return std::move(error);

  SimResult result;
  std::vector<bool> recomputed = table.recomputedMask();
  std::vector<bool> offloaded = table.offloadedMask();
  if (!offloaded.empty() && problem.copyBandwidth <= 0)
    for (auto [r, actions] : llvm::enumerate(table.ranks))
      for (auto [i, a] : llvm::enumerate(actions))
        if (isCopy(a.kind))
          return fail("rank " + llvm::Twine(r) + ": " + table.name(a) +
                      " (action " + llvm::Twine(i) + ", microbatch " +
                      llvm::Twine(a.microbatch) +
                      ") copies between device and host memory, but the "
                      "problem has no copy bandwidth (--copy-bandwidth, the "
                      "cost file's copy_bandwidth)");
  if (problem.vocab.enabled() != table.has(Kind::S))
    return fail(problem.vocab.enabled()
                    ? "the problem has vocabulary passes but the schedule "
                      "has no S and T: place them (placeVocabularyPasses)"
                    : "the schedule has vocabulary passes (S, T) but the "
                      "problem gives them no costs");
  if (llvm::Error error =
          trackMemory(problem, table, recomputed, offloaded, result))
    return std::move(error);

  // A backward reads the stash its R rebuilt or its L brought back (the
  // simulation holds the mask by reference).
  std::vector<bool> restored = table.restoredMask();
  Simulation sim(problem, table, restored);
  sim.gathered = gatheredAt(problem, table);
  size_t total = 0;
  result.timeline.resize(sim.numRanks);
  for (int r = 0; r < sim.numRanks; ++r) {
    total += table.ranks[r].size();
    result.timeline[r].reserve(table.ranks[r].size());
  }
  for (int r = sim.numRanks - 1; r >= 0; --r)
    sim.work.push_back(r);
  while (!sim.work.empty()) {
    int r = sim.work.back();
    sim.work.pop_back();
    sim.advance(r, result);
  }
  size_t ran = 0;
  for (int r = 0; r < sim.numRanks; ++r)
    ran += sim.next[r];
  if (ran != total)
    return sim.deadlock(ran, total);

  // Makespan: the longest rank's span (the paper's T), not the latest end,
  // so a rank that starts late is not charged for the time before its start.
  result.idle.assign(sim.numRanks, 0.0);
  for (int r = 0; r < sim.numRanks; ++r) {
    const std::vector<TimedAction> &line = result.timeline[r];
    if (line.empty())
      continue;
    // Copies run beside compute: they lengthen the span only by ending
    // last, and are not the rank's busy time.
    double end = 0, busy = 0;
    for (const TimedAction &t : line) {
      end = std::max(end, t.end);
      if (!isCopy(t.action.kind))
        busy += t.end - t.start;
    }
    double span = end - line.front().start;
    result.makespan = std::max(result.makespan, span);
    result.idle[r] = std::max(0.0, span - busy);
  }
  timeCollectives(problem, table, sim.gathered, result);
  // The busiest rank's work per microbatch: with uneven stages (or several
  // stages per rank) the paper's F+B+W is the largest per-rank sum.
  std::vector<double> work(sim.numRanks, 0.0);
  for (int s = 0; s < sim.numStages; ++s) {
    const StageCost &c = problem.stages[s];
    work[table.rankOfStage[s]] += c.F + c.B + c.W;
  }
  // Note [Vocabulary passes]: each rank's shard is its work too.
  if (problem.vocab.enabled())
    for (double &w : work)
      w += problem.vocab.S + problem.vocab.T;
  double busiest = *std::max_element(work.begin(), work.end());
  if (result.makespan > 0) {
    // Never below 0 on paper (the busiest rank's span holds all its work);
    // clamp the round-off so "-0%" never shows.
    result.bubbleRate =
        std::max(0.0, (result.makespan - problem.microbatches * busiest) /
                          result.makespan);
    // Against the whole pipeline's time: each rank's share of the step
    // without its own work, and their mean (idle over p x makespan).
    result.idleShare.resize(sim.numRanks);
    double sum = 0;
    for (int r = 0; r < sim.numRanks; ++r) {
      result.idleShare[r] = std::max(
          0.0, 1.0 - problem.microbatches * work[r] / result.makespan);
      sum += result.idleShare[r];
    }
    result.pipelineBubbleRate = sum / sim.numRanks;
  }
  return std::move(result);
}
