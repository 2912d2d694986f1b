//===- Build.cpp - ZB-V: zero bubble on the V placement -------------------===//
//
// ZB-V (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, section 6;
// also in "Pipeline Parallelism with Controllable Memory", 2024):
// each rank holds two chunks in a V (Note [V chunks] below), and the split
// backward (B, then W later) lets W fill what would be bubbles. With
// T_F = T_B = T_W, no comm and a limit of 2p chunk activations (1F1B's
// memory: p full-stage microbatches) it has no bubble at all once m >= 2p.
//
// The builder makes several candidate orders, times each with the real
// costs (the simulator's rule, spanOf in Timing.cpp) and keeps the shortest
// that stays within the limit (the candidates in this folder; VShape.h
// says which file holds which):
//  - the handcrafted order (the one PyTorch's ScheduleZBVZeroBubble runs):
//    warm-up forwards, then F B W per chunk in lockstep, then the cool-down.
//    Exact for equal costs; it ignores costs and the limit, so it only
//    counts where it stays within the limit.
//  - a paced greedy over the dependency graph with the real per-chunk costs
//    and comm, in the manner of the reference implementation's V greedy:
//    a memory-bounded warm-up, then rounds of one B and one F per rank,
//    W placed where the next input would leave the rank idle anyway, or
//    when memory requires it; a few variants and a refinement pass that
//    balances the ranks' idle time. Unlike the reference it checks every
//    dependency and the limit as it goes: a variant that cannot continue
//    is dropped, never emitted half-valid.
//  - an event-driven list schedule, the fallback that is valid for every
//    limit down to the minimum (Note [V memory reserve]).
//  - v-half's and v-min's orders (VShapes.cpp: the slot plans, compacted)
//    within the limit, so that zb-v is never worse than either there, and
//    the best of the Controllable Memory paper's building blocks that fits
//    (VShapes.cpp, Block), for the limits between and above theirs.
//

#include "Builders/Builders.h"
#include "Builders/ZBV/VShape.h"
#include "Core/Support.h"

#include "llvm/Support/ThreadPool.h"

#include <functional>
#include <string>

using namespace zbc::sched;
using namespace zbc::sched::zbv;

namespace {

/// Instances of up to this many actions (6 p m) also get the list
/// schedules built as if each W held as much as its B (Note [V
/// accounting]); larger ones, where the list schedules are most of the
/// build's time, do not.
constexpr long kSmallVOps = 10'000;

} // namespace

double zbc::sched::zbvDefaultBudget(const Problem &problem) {
  double maxChunkMemB = 0;
  for (const StageCost &s : problem.stages)
    maxChunkMemB = std::max(maxChunkMemB, s.memB);
  return 2.0 * problem.ranks * maxChunkMemB;
}

llvm::Expected<ScheduleTable> zbc::sched::buildZBV(const Problem &problem,
                                                   const BuildOptions &,
                                                   BuildReport &report) {
  int p = problem.ranks;
  if (problem.numStages() != 2 * p)
    return fail("zb-v needs 2 stages per rank (the V), got " +
                llvm::Twine(problem.numStages()) + " stages on " +
                llvm::Twine(p) + " ranks");
  VShape v = VShape::of(problem, /*limit=*/0); // set below
  double minLimit = 0;
  for (int r = 0; r < p; ++r)
    minLimit = std::max(minLimit, v.cost[r][0].memB + reserveOf(v.cost[r]));
  // No limit: one that no order can reach (every microbatch alive on both
  // chunks at their largest).
  double most = 0;
  for (const StageCost &s : problem.stages)
    most = std::max({most, s.memB, s.memW});
  bool unlimited = problem.budget() <= 0;
  v.limit = unlimited ? std::max(2.0 * v.m * most, minLimit) : problem.budget();
  if (v.limit < minLimit * (1 - 1e-9))
    return fail("zb-v needs an activation budget of at least " + formatNumber(minLimit) +
                " per rank (a chunk-0 activation plus room for one chunk-1 "
                "microbatch), got " +
                formatNumber(v.limit));

  // The candidates are independent: they are built and timed (with the
  // real costs and the limit) on a thread pool, and the shortest is kept,
  // the first of equals in the order below, so the result does not depend
  // on the threads.
  struct Candidate {
    std::string name;
    std::function<std::optional<Order>()> build;
    // How long it takes, roughly, for the queue: 3 the list schedules, 2
    // the refined greedies, 1 the patterns and blocks, 0 the handcrafted
    // order (at p = 256, m = 2048: about 1.4, 0.8, 0.3 and 0.15 s).
    int cost = 0;
    // The patterns and blocks instead project their span (VShapeCandidate)
    // and build their order only if they win.
    std::function<std::optional<VShapeCandidate>()> project;
    std::optional<VShapeCandidate> projected;
    std::optional<Order> order;
    double span = kInf;
  };
  std::vector<Candidate> candidates;
  for (bool fillB : {true, false})
    for (bool fillF : {true, false})
      candidates.push_back(
          {std::string("greedy (fill-b ") + (fillB ? "on" : "off") +
               ", fill-f " + (fillF ? "on" : "off") + ")",
           [&v, fillB, fillF]() -> std::optional<Order> {
             if (auto g = refinedGreedy(v, fillB, fillF))
               return std::move(g->order);
             return std::nullopt;
           },
           /*cost=*/2});
  candidates.push_back({"handcrafted", [&v, p]() -> std::optional<Order> {
                          return handcrafted(p, v.m);
                        }});
  // Note [V accounting]: an order within the limit when each W holds as
  // much as its B (M_W = M_B) is within it for any smaller M_W (it frees
  // less at each B and as much at each W, so it holds no less at any
  // point), and the list schedules decide by the accounting they are
  // given: with a lighter W they admit F's the round trip then waits for.
  // So on small instances they are also built as if each W held as much
  // as its B, and timed with the real costs (p = 8, m = 32, W = F/2 at 9
  // chunk activations: 0.2308 instead of 0.2363 with M_W = M_B/2).
  VShape heavyW = v;
  bool lighterW = false;
  for (auto &chunks : heavyW.cost)
    for (StageCost &c : chunks)
      if (c.memW < c.memB) {
        c.memW = c.memB;
        lighterW = true;
      }
  std::vector<const VShape *> listShapes = {&v};
  if (lighterW && 6L * p * v.m <= kSmallVOps)
    listShapes.push_back(&heavyW);
  for (const VShape *shape : listShapes)
    for (bool forwardFirst : {false, true})
      for (double fill : {0.0, 1.0})
        candidates.push_back(
            {std::string("list (") + (forwardFirst ? "F" : "B") + " first, fill " +
                 formatNumber(fill) + (shape == &v ? "" : ", as if M_W = M_B") +
                 ")",
             [shape, forwardFirst, fill] {
               return listSchedule(*shape, forwardFirst, fill);
             },
             /*cost=*/3});
  // The controllable-memory patterns as v-half and v-min build them
  // (compacted, VShapes.cpp), each within its own memory and zb-v's limit:
  // zb-v is then never worse than v-half or v-min at any limit that holds
  // them (they come last, so a tie keeps zb-v's own order).
  for (auto [name, half] :
       {std::pair{"v-half pattern", true}, {"v-min pattern", false}})
    candidates.push_back({name, nullptr, /*cost=*/1,
                          [&problem, &v, half = half] {
                            return vShapeCandidate(problem, half, v.limit);
                          }});
  // And the best building block within the limit (between and above the
  // patterns' own memory).
  candidates.push_back({"building-block", nullptr, /*cost=*/1,
                        [&problem, &v] {
                          return vBlockCandidate(problem, v.limit);
                        }});
  {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency());
    // Longest first, so that no long one starts last and the threads end
    // close together (the last task on the pool sets its end: with the
    // handcrafted order queued before the patterns, a pattern ran alone at
    // the end).
    std::vector<Candidate *> queue;
    for (Candidate &c : candidates)
      queue.push_back(&c);
    auto longer = [](const Candidate *a, const Candidate *b) {
      return a->cost > b->cost;
    };
    std::stable_sort(queue.begin(), queue.end(), longer);
    for (Candidate *c : queue)
      pool.async([&v, c] {
        if (c->project) {
          if ((c->projected = c->project()))
            c->span = c->projected->span;
          return;
        }
        c->order = c->build();
        if (c->order)
          c->span = spanOf(v, *c->order);
      });
    pool.wait();
  }
  // The shortest; a projected one is built and timed whole first and kept
  // only if it still is (the projection has been exact wherever measured,
  // so this picks once).
  Candidate *bestCandidate = nullptr;
  for (;;) {
    bestCandidate = nullptr;
    for (Candidate &c : candidates)
      if (c.span < (bestCandidate ? bestCandidate->span : kInf))
        bestCandidate = &c;
    if (!bestCandidate || !bestCandidate->projected || bestCandidate->order)
      break;
    bestCandidate->order = bestCandidate->projected->order();
    bestCandidate->span = bestCandidate->order
                              ? spanOf(v, *bestCandidate->order)
                              : kInf;
  }
  double bestSpan = bestCandidate ? bestCandidate->span : kInf;
  int built = 0;
  for (const Candidate &c : candidates)
    built += c.order.has_value() || c.projected.has_value();
  // Cannot happen at or above the least limit with M_W <= M_B (Note [V
  // memory reserve]): the list schedule always fits.
  if (bestSpan == kInf)
    return fail("zb-v found no schedule within the activation budget " +
                formatNumber(v.limit));
  report.notes.push_back("zb-v: activation budget " +
                         (unlimited ? std::string("none") : formatNumber(v.limit) + " per rank") +
                         "; kept the " + bestCandidate->name + " order" +
                         (bestCandidate->projected
                              ? " (" + bestCandidate->projected->how + ")"
                              : std::string()) +
                         ", the shortest of " + std::to_string(built) +
                         " candidates");
  ScheduleTable table;
  table.microbatches = v.m;
  table.rankOfStage = placeStages(Placement::V, p, 2 * p);
  table.ranks = std::move(*bestCandidate->order);
  return std::move(table);
}
