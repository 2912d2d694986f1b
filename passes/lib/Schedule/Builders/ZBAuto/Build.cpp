//===- Build.cpp - zb-auto: automatic zero bubble under a budget ----------===//
//
// The builder the registry calls: resolves the activation budget (refusing
// one no schedule fits), runs the search (Search.cpp) at the budget and
// below it (Note [zb-auto monotone]), anneals what the searches found
// (Anneal.cpp), with --exact runs the ILP (ILP.cpp) within the build's
// wall-clock, and turns the order into a ScheduleTable. The parts, each in
// its own file here: the evaluator, the lower bound, the greedy, the repair,
// the search, the anneal and the ILP.
//
//===----------------------------------------------------------------------===//

#include "Anneal.h"
#include "Repair.h"
#include "ZBAuto.h"
#include "Core/Support.h"

#include "Builders/Builders.h"

#include "llvm/Support/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <optional>

using namespace zbc::sched;
using namespace zbc::sched::zbauto;

using Clock = std::chrono::steady_clock;

static double heaviestMicrobatch(const Problem &problem) {
  double most = 0;
  for (const StageCost &s : problem.stages)
    most = std::max({most, s.memB, s.memW});
  return most;
}

double zbc::sched::zbAutoDefaultBudget(const Problem &problem) {
  return 2.0 * problem.ranks * heaviestMicrobatch(problem);
}

/// Searches below the limit (Note [zb-auto monotone]). Each is a whole
/// search, and the chain down to where the bound stops it can be long (238
/// searches, 34 s, on one p = 16, m = 64 input at p M_B), so it stops after
/// this many: the inversions seen come from one decision just under the
/// limit, the first step down.
constexpr int kLowerSearches = 4;

/// Note [zb-auto monotone]: searches below the limit, from the tightest
/// memory decision of each search down, until the lower bound or the
/// smallest feasible limit says nothing below can be shorter (or
/// kLowerSearches are done); appends what each finds to `found`.
static void searchBelow(const Problem &problem, const Instance &in,
                        double heaviest, std::vector<Searched> &found,
                        BuildReport &report) {
  double best = found[0].makespan;
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
    Searched next = searchOrders(problem, lower, ignored);
    if (next.order.empty())
      break;
    if (next.makespan < best * (1 - 1e-12)) {
      best = next.makespan;
      report.notes.push_back("zb-auto: a smaller budget, " +
                             formatNumber(below) + ", gave a shorter schedule (" +
                             formatNumber(best) + ")");
    }
    found.push_back(std::move(next));
    tightest = lower.tightest;
  }
  if (searches > 0)
    report.notes.push_back(
        "zb-auto: searched " + std::to_string(searches) +
        " smaller budgets, down to " + formatNumber(tightest) +
        (searches == kLowerSearches ? " (the most it tries)"
                                    : " (nothing below can be shorter)"));
}

/// The anneal's budget (Anneal.h, in Evaluator::timed's work) on
/// instances of up to kSmallOps ops: kAnnealPerOpSquared per op squared (a
/// move times a share of the ops, and an instance needs moves in
/// proportion to its ops), at most kAnnealVisits (p = 8, m = 16 reaches it;
/// about 0.4 s). Larger instances are not annealed, so that zb-auto stays
/// near-linear.
constexpr long kAnnealVisits = 40'000'000;
constexpr long kAnnealPerOpSquared = 400;
constexpr uint64_t kAnnealSeed = 0x5eed0f2b0b5ULL;
/// Each order is annealed twice, from these two temperatures (shares of
/// its makespan): at the cooler one a move that lengthens the makespan by
/// one op's time is almost never taken, and the walk mostly crosses
/// plateaus; the warmer one climbs out of more. Neither is the better on
/// every input (on the 120 uneven inputs the cooler one alone gives a mean
/// gap of 0.46% and a worst of 3.02%, the warmer one 0.51% and 2.98%,
/// both 0.46% and 2.77%), and the two run side by side on two cores.
constexpr double kAnnealTemperatures[] = {3e-4, 1e-3};
/// Evaluations of the repair after each anneal.
constexpr long kPolishEvaluations = 5'000;

/// Anneals each distinct order in `found` that does not meet its lower
/// bound, from each of kAnnealTemperatures, within that order's own peak
/// memory (so that what it gives depends on the order and the bound alone:
/// Note [zb-auto monotone]), a thread per core, and polishes each result
/// with the repair; appends the results to `found`. In the exact mode the
/// anneals also stop at `stopAt`.
static void annealFound(const Instance &in, std::vector<Searched> &found,
                        std::optional<Clock::time_point> stopAt,
                        BuildReport &report) {
  long ops = 3L * in.p * in.m;
  long visits = std::min(kAnnealVisits, kAnnealPerOpSquared * ops * ops);
  std::vector<const Searched *> seeds;
  for (const Searched &s : found) {
    bool again = false;
    for (const Searched *t : seeds)
      again |= t->lower == s.lower && t->order == s.order;
    if (!again && s.makespan > s.lower * (1 + 1e-12))
      seeds.push_back(&s);
  }
  const size_t lanes = std::size(kAnnealTemperatures);
  std::vector<Searched> annealed(seeds.size() * lanes);
  auto annealOne = [&](size_t task) {
    const Searched &seed = *seeds[task / lanes];
    Instance within = in;
    std::vector<double> peak = Evaluator::peaks(in, seed.order);
    within.limit = *std::max_element(peak.begin(), peak.end());
    long used = 0;
    Order order = anneal(within, seed.order, seed.lower,
                         kAnnealTemperatures[task % lanes], visits, used,
                         kAnnealSeed, stopAt);
    // The anneal ends wherever its last cold moves left it: the repair's
    // critical-path moves polish that (within the same memory).
    Evaluator polish(within);
    Repair(within, polish).run(order, kPolishEvaluations);
    double makespan = Evaluator(in).run(order).makespan;
    annealed[task] = {std::move(order), seed.lower, makespan};
  };
  if (annealed.empty())
    return;
  llvm::DefaultThreadPool pool(llvm::hardware_concurrency());
  for (size_t task = 0; task < annealed.size(); ++task)
    pool.async([&annealOne, task] { annealOne(task); });
  pool.wait();
  auto shortest = [](auto begin, auto end) {
    double best = kInf;
    for (auto it = begin; it != end; ++it)
      best = std::min(best, it->makespan);
    return best;
  };
  double before = shortest(found.begin(), found.end());
  double after = shortest(annealed.begin(), annealed.end());
  report.notes.push_back(
      "zb-auto: annealed " + std::to_string(seeds.size()) +
      (seeds.size() == 1 ? " order" : " orders") + " from " +
      std::to_string(lanes) + " temperatures: " +
      formatNumber(before) + " -> " + formatNumber(std::min(before, after)));
  for (Searched &s : annealed)
    found.push_back(std::move(s));
}

llvm::Expected<ScheduleTable>
zbc::sched::buildZBAuto(const Problem &problem, const BuildOptions &options,
                        BuildReport &report) {
  // --exact's seconds are the whole build's, the heuristic's search included.
  auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options.exactSeconds));
  const int p = problem.ranks;
  double heaviest = heaviestMicrobatch(problem);
  double limit = problem.budget();
  if (limit > 0 && limit + memSlack(limit) < heaviest)
    return fail("activation budget " + formatNumber(limit) +
                " is below the smallest feasible budget " + formatNumber(heaviest) +
                ": every rank must hold one microbatch's activations, the "
                "largest M_B (or M_W) of any stage");
  // No limit: plan for one that no order can reach (every microbatch alive
  // at once), so the search is the unconstrained one.
  if (limit <= 0)
    limit = problem.microbatches * heaviest;
  if (limit <= 0) // every M_B and M_W is 0: memory constrains nothing
    limit = 1;

  Instance in = Instance::from(problem, limit);
  std::vector<Searched> found = {searchOrders(problem, in, report)};
  if (found[0].order.empty())
    return fail("zb-auto: the greedy found no schedule (internal error)");
  if (3L * in.p * in.m <= kSmallOps) {
    searchBelow(problem, in, heaviest, found, report);
    // In the exact mode the anneals take at most half of what is left.
    std::optional<Clock::time_point> stopAt;
    if (options.exactSeconds > 0)
      stopAt = Clock::now() + (deadline - Clock::now()) / 2;
    annealFound(in, found, stopAt, report);
  }
  // The shortest of what the searches and the anneals found (the first of
  // equals).
  Order order;
  double best = kInf;
  for (Searched &s : found)
    if (s.makespan < best * (1 - 1e-12)) {
      best = s.makespan;
      order = std::move(s.order);
    }
  if (options.exactSeconds > 0) {
    llvm::Expected<Order> exact = solveExact(in, order, best, deadline, report);
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

