//===- Build.cpp - zb-auto: automatic zero bubble under a memory limit ---===//
//
// The builder the registry calls: resolves the memory limit (refusing one no
// schedule fits), runs the search (Search.cpp) and, with --exact, the ILP
// (ILP.cpp) within the build's wall-clock, and turns the order into a
// ScheduleTable. The parts, each in its own file here: the evaluator, the
// lower bound, the greedy, the repair, the search and the ILP.
//
//===----------------------------------------------------------------------===//

#include "ZBAuto.h"
#include "../Support.h"

#include "../Builders.h"

#include <algorithm>
#include <chrono>

using namespace zbc::sched;
using namespace zbc::sched::zbauto;

static double heaviestMicrobatch(const Problem &problem) {
  double most = 0;
  for (const StageCost &s : problem.stages)
    most = std::max({most, s.memB, s.memW});
  return most;
}

double zbc::sched::zbAutoDefaultMemLimit(const Problem &problem) {
  return 2.0 * problem.ranks * heaviestMicrobatch(problem);
}

/// Searches below the limit (Note [zb-auto monotone]). Each is a whole
/// search, and the chain down to where the bound stops it can be long (238
/// searches, 34 s, on one p = 16, m = 64 input at p M_B), so it stops after
/// this many: the inversions seen come from one decision just under the
/// limit, the first step down.
constexpr int kLowerSearches = 4;

/// Note [zb-auto monotone]: replaces `order` (found at in.limit) by a
/// shorter one the heuristic finds at a smaller limit, searching down from
/// the tightest memory decision of each search until the lower bound or
/// the smallest feasible limit says nothing below can be shorter.
static void monotoneInLimit(const Problem &problem, const Instance &in,
                            double heaviest, Order &order,
                            BuildReport &report) {
  double best = Evaluator(in).run(order).makespan;
  double tightest = in.tightest;
  int searches = 0;
  for (; searches < kLowerSearches; ++searches) {
    double below = tightest * (1 - 1e-9);
    if (below + memSlack(below) < heaviest)
      break; // no smaller limit is feasible
    Instance lower = Instance::from(problem, below);
    if (lowerBound(lower) >= best * (1 - 1e-12))
      break; // nothing below can be shorter
    BuildReport ignored;
    Order found = searchOrders(problem, lower, ignored);
    if (found.empty())
      break;
    double makespan = Evaluator(lower).run(found).makespan;
    if (makespan < best * (1 - 1e-12)) {
      best = makespan;
      order = std::move(found);
      report.notes.push_back("zb-auto: a smaller limit, " +
                             formatNumber(below) + ", gave a shorter schedule (" +
                             formatNumber(best) + ")");
    }
    tightest = lower.tightest;
  }
  if (searches > 0)
    report.notes.push_back(
        "zb-auto: searched " + std::to_string(searches) +
        " smaller limits, down to " + formatNumber(tightest) +
        (searches == kLowerSearches ? " (the most it tries)"
                                    : " (nothing below can be shorter)"));
}

llvm::Expected<ScheduleTable>
zbc::sched::buildZBAuto(const Problem &problem, const BuildOptions &options,
                        BuildReport &report) {
  // --exact's seconds are the whole build's, the heuristic's search included.
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(options.exactSeconds));
  const int p = problem.ranks;
  double heaviest = heaviestMicrobatch(problem);
  double limit = problem.limit();
  if (limit > 0 && limit + memSlack(limit) < heaviest)
    return fail("memory limit " + formatNumber(limit) +
                " is below the smallest feasible limit " + formatNumber(heaviest) +
                ": every rank must hold one microbatch's activations, the "
                "largest M_B (or M_W) of any stage");
  // No limit: plan for one that no order can reach (every microbatch alive
  // at once), so the search is the unconstrained one.
  if (limit <= 0)
    limit = problem.microbatches * heaviest;
  if (limit <= 0) // every M_B and M_W is 0: memory constrains nothing
    limit = 1;

  Instance in = Instance::from(problem, limit);
  Order order = searchOrders(problem, in, report);
  if (order.empty())
    return fail("zb-auto: the greedy found no schedule (internal error)");
  if (3L * in.p * in.m <= kSmallOps)
    monotoneInLimit(problem, in, heaviest, order, report);
  if (options.exactSeconds > 0) {
    Evaluator eval(in);
    double heuristic = eval.run(order).makespan;
    llvm::Expected<Order> exact =
        solveExact(in, order, heuristic, deadline, report);
    if (!exact)
      return exact.takeError();
    order = std::move(*exact);
  }

  ScheduleTable table = ScheduleTable::empty(problem, Placement::Linear);
  for (int r = 0; r < p; ++r) {
    table.ranks[r].reserve(order[r].size());
    for (Op op : order[r])
      table.ranks[r].push_back({op.kind, r, op.mb});
  }
  return table;
}

