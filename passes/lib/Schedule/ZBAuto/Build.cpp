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

