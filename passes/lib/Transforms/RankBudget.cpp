//===- RankBudget.cpp - a rank's whole memory limit as a schedule's budget -===//
//
// Note [Rank budget] (RankBudget.h): schedule a copy, prove it without a
// limit, lower the activation budget by the worst rank's excess, repeat;
// plan the budget a round settles on and go on where an arena is over.
//
//===----------------------------------------------------------------------===//

#include "zbc/Passes/RankBudget.h"

#include "zbc/Analysis/MemoryPlan.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <cmath>
#include <optional>

using namespace mlir;
using namespace zbc;

namespace {

using ScheduleFn =
    llvm::function_ref<FailureOr<double>(ModuleOp, std::optional<double>)>;

/// `module` scheduled at `budget` with its transfers, and the order's
/// makespan; fails where the schedule does.
FailureOr<std::pair<OwningOpRef<ModuleOp>, double>>
scheduledAt(ModuleOp module, std::optional<double> budget,
            ScheduleFn schedule) {
  OwningOpRef<ModuleOp> copy(module.clone());
  FailureOr<double> makespan = schedule(*copy, budget);
  if (failed(makespan))
    return failure();
  PassManager pm(module.getContext());
  pm.addPass(createZBInsertP2PPass());
  // The gradient sums too: the proof of a tied or data-parallel program
  // asks for them (VerifySchedule.cpp).
  pm.addPass(createZBInsertCollectivesPass());
  if (failed(pm.run(*copy)))
    return failure();
  return std::make_pair(std::move(copy), *makespan);
}

/// Every rank's whole peak (Note [Program memory]) of `module` scheduled at
/// `budget`, proven without a limit, and the order's makespan; with `plan`,
/// every rank's arena too.
FailureOr<RankBudget> tryBudget(ModuleOp module, std::optional<double> budget,
                                ScheduleFn schedule, bool plan) {
  auto scheduled = scheduledAt(module, budget, schedule);
  if (failed(scheduled))
    return failure();
  RankBudget at;
  at.activations = budget.value_or(0);
  at.scheduleDefault = !budget;
  at.makespan = scheduled->second;
  for (zb::ProgramOp program : scheduled->first->getOps<zb::ProgramOp>()) {
    ScheduleProof proof;
    if (failed(verifyScheduleProgram(program, &proof)))
      return failure();
    at.peaks.insert(at.peaks.end(), proof.peakBytes.begin(),
                    proof.peakBytes.end());
    if (!plan)
      continue;
    FailureOr<std::vector<RankPlan>> plans = planProgramMemory(program);
    if (failed(plans))
      return failure();
    for (const RankPlan &rank : *plans) {
      at.arenas.push_back(rank.arenaBytes);
      at.persistent.push_back(
          rank.persistent.empty()
              ? 0
              : rank.persistent.back().offset + rank.persistent.back().bytes);
    }
  }
  return at;
}

} // namespace

FailureOr<RankBudget>
zbc::fitActivationBudget(ModuleOp module, int64_t limit, ScheduleFn schedule) {
  // The attempts' errors (an infeasible budget) are the fit's business; the
  // final lowering reports what matters.
  ScopedDiagnosticHandler quiet(module.getContext(),
                                [](Diagnostic &) { return success(); });
  std::vector<int64_t> packingLoss; // per rank, from the last plan
  auto excess = [&](const std::vector<int64_t> &peaks) {
    int64_t over = 0;
    for (auto [r, peak] : llvm::enumerate(peaks))
      over = std::max(over, peak + (r < packingLoss.size() ? packingLoss[r] : 0) -
                                limit);
    return over;
  };
  std::optional<RankBudget> closest;
  double start = static_cast<double>(limit);
  double overArena = 0; // the budget the last round planned, over the limit
  for (int round = 0; round < kRankBudgetRounds; ++round) {
    // Down from `start` by the worst rank's excess until one fits. Where a
    // step changes no peak, the budget did not bind (the schedule kept less
    // than it, or reads no limit): each such step doubles.
    std::optional<RankBudget> fits, previous;
    double miss = overArena; // the smallest budget known not to fit
    double step = 0;
    int attempts = 0;
    for (double budget = start; attempts < kRankBudgetAttempts && budget > 0;) {
      ++attempts;
      FailureOr<RankBudget> at = tryBudget(module, budget, schedule, false);
      if (failed(at))
        break; // below what the schedule can run: keep the closest miss
      at->attempts = attempts;
      int64_t over = excess(at->peaks);
      if (over <= 0) {
        fits = *at;
        break;
      }
      bool unchanged = previous && previous->peaks == at->peaks;
      step = unchanged ? 2 * step : static_cast<double>(over);
      previous = *at;
      closest = *at;
      miss = budget;
      budget -= step;
    }
    if (!fits)
      break;
    // Activations come a microbatch at a time, so the step down may have
    // gone further than it had to: bisect between the fit and the miss
    // above it with the attempts left, keeping the largest budget that fits.
    while (miss > 0 && attempts < kRankBudgetAttempts &&
           miss - fits->activations > 1) {
      ++attempts;
      double budget = std::floor((fits->activations + miss) / 2);
      FailureOr<RankBudget> at = tryBudget(module, budget, schedule, false);
      if (succeeded(at) && excess(at->peaks) <= 0)
        fits = *at;
      else
        miss = budget;
    }
    // The budget this round settled on, planned: its arenas are what the
    // limit bounds.
    FailureOr<RankBudget> planned =
        tryBudget(module, fits->activations, schedule, true);
    if (failed(planned))
      break;
    planned->attempts = attempts;
    int64_t over = 0;
    packingLoss.assign(planned->peaks.size(), 0);
    for (auto [r, arena] : llvm::enumerate(planned->arenas)) {
      over = std::max(over, arena - limit);
      packingLoss[r] = std::max<int64_t>(0, arena - planned->peaks[r]);
    }
    closest = *planned;
    if (over <= 0) {
      planned->withinLimit = true;
      return *planned;
    }
    overArena = fits->activations;
    start = fits->activations - static_cast<double>(over);
    if (start <= 0)
      break;
  }
  // The schedule's own order, where no budget given fits.
  if (FailureOr<RankBudget> own =
          tryBudget(module, std::nullopt, schedule, true);
      succeeded(own) && llvm::all_of(own->arenas, [&](int64_t arena) {
        return arena <= limit;
      })) {
    own->withinLimit = true;
    return *own;
  }
  if (!closest)
    return failure();
  return *closest;
}

FailureOr<RankBudget> zbc::leastArena(ModuleOp module, int64_t start,
                                      ScheduleFn schedule) {
  ScopedDiagnosticHandler quiet(module.getContext(),
                                [](Diagnostic &) { return success(); });
  auto takes = [&](double budget) {
    OwningOpRef<ModuleOp> copy(module.clone());
    return succeeded(schedule(*copy, budget));
  };
  double high = static_cast<double>(std::max<int64_t>(start, 1));
  for (int doubling = 0; !takes(high); ++doubling) {
    if (doubling == 8)
      return failure();
    high *= 2;
  }
  double low = 0; // taken as refused: a schedule keeps something
  while (high - low > std::max(1.0, high / 100)) {
    double middle = std::floor((low + high) / 2);
    (takes(middle) ? high : low) = middle;
  }
  return tryBudget(module, high, schedule, true);
}
