//===- VocabPasses.cpp - vocabulary passes in any schedule's order --------===//
//
// Note [Placing the vocabulary passes] (VocabPasses.h): anchors from a
// simulation without the passes, then one merge per rank.
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/VocabPasses.h"
#include "zbc/Schedule/Simulator.h"
#include "Core/Support.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <limits>
#include <tuple>

using namespace zbc::sched;

llvm::Error zbc::sched::placeVocabularyPasses(const Problem &problem,
                                              ScheduleTable &table) {
  if (!problem.vocab.enabled())
    return fail("the problem has no vocabulary passes to place");
  if (table.has(Kind::S) || table.has(Kind::T))
    return fail("the schedule has its vocabulary passes already");
  Problem base = problem;
  base.vocab = {};
  llvm::Expected<SimResult> sim = simulate(base, table);
  if (!sim)
    return sim.takeError();

  // When the last stage's hidden states of each microbatch exist, and when
  // its backward, which waits for the barrier, started.
  int last = table.numStages() - 1, m = table.microbatches;
  std::vector<double> forwardEnd(m, 0.0), backwardStart(m, 0.0);
  for (const std::vector<TimedAction> &line : sim->timeline)
    for (const TimedAction &t : line)
      if (t.action.stage == last && t.action.kind == Kind::F)
        forwardEnd[t.action.microbatch] = t.end;
      else if (t.action.stage == last && isBackward(t.action.kind))
        backwardStart[t.action.microbatch] = t.start;

  for (int r = 0; r < table.numRanks(); ++r) {
    const std::vector<TimedAction> &line = sim->timeline[r];
    const std::vector<Action> &order = table.ranks[r];
    // Each action's time: its start, or for a copy (which runs on a queue
    // of its own) the start of the compute after it, where its place in
    // the order is.
    std::vector<double> at(order.size());
    double next = std::numeric_limits<double>::infinity();
    for (size_t i = order.size(); i-- > 0;)
      at[i] = isCopy(order[i].kind) ? next : (next = line[i].start);
    struct Inserted {
      double at;
      Kind kind;
      int microbatch;
    };
    std::vector<Inserted> passes;
    for (int j = 0; j < m; ++j) {
      passes.push_back({forwardEnd[j], Kind::S, j});
      // With two barriers the last stage's backward waits for every T;
      // with one, nothing does, and T waits a microbatch for its barrier.
      double t = problem.vocab.barriers == 2 ? backwardStart[j]
                 : j + 1 < m ? forwardEnd[j + 1]
                             : std::numeric_limits<double>::infinity();
      passes.push_back({std::max(forwardEnd[j], t), Kind::T, j});
    }
    // Ties: by microbatch, S before T (T(j) frees its shard before
    // S(j + 1) takes the next).
    llvm::stable_sort(passes, [](const Inserted &a, const Inserted &b) {
      return std::make_tuple(a.at, a.microbatch, a.kind == Kind::T) <
             std::make_tuple(b.at, b.microbatch, b.kind == Kind::T);
    });
    std::vector<Action> placed;
    placed.reserve(order.size() + passes.size());
    size_t k = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      for (; k < passes.size() && passes[k].at <= at[i]; ++k)
        placed.push_back({passes[k].kind, r, passes[k].microbatch});
      placed.push_back(order[i]);
    }
    for (; k < passes.size(); ++k)
      placed.push_back({passes[k].kind, r, passes[k].microbatch});
    table.ranks[r] = std::move(placed);
  }
  // The simulation verifies the table first (its passes on every rank, S
  // before T), then times it.
  if (llvm::Expected<SimResult> placed = simulate(problem, table); !placed)
    return fail("with the vocabulary passes: " +
                llvm::toString(placed.takeError()));
  return llvm::Error::success();
}
