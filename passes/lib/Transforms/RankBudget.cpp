//===- RankBudget.cpp - a rank's whole memory limit as a schedule's budget -===//
//
// Note [Rank budget] (RankBudget.h): schedule a copy, prove it without a
// limit, lower the activation budget by the worst rank's excess, repeat.
//
//===----------------------------------------------------------------------===//

#include "zbc/Passes/RankBudget.h"

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

/// Every rank's whole peak (Note [Program memory]) of `module` scheduled at
/// `budget`, proven without a limit, and the order's makespan; fails where
/// the schedule does. The proof's peaks are the memory plan's
/// (zb-plan-memory writes them as peak_bytes), without the plan's packing.
FailureOr<RankBudget>
peaksAt(ModuleOp module, double budget,
        llvm::function_ref<FailureOr<double>(ModuleOp, double)> schedule) {
  OwningOpRef<ModuleOp> copy(module.clone());
  FailureOr<double> makespan = schedule(*copy, budget);
  if (failed(makespan))
    return failure();
  PassManager pm(module.getContext());
  pm.addPass(createZBInsertP2PPass());
  if (failed(pm.run(*copy)))
    return failure();
  RankBudget at{budget, {}, 0, *makespan};
  for (zb::ProgramOp program : copy->getOps<zb::ProgramOp>()) {
    ScheduleProof proof;
    if (failed(verifyScheduleProgram(program, &proof)))
      return failure();
    at.peaks.insert(at.peaks.end(), proof.peakBytes.begin(),
                    proof.peakBytes.end());
  }
  return at;
}

} // namespace

FailureOr<RankBudget> zbc::fitActivationBudget(
    ModuleOp module, int64_t limit,
    llvm::function_ref<FailureOr<double>(ModuleOp, double)> schedule) {
  // The attempts' errors (an infeasible budget) are the fit's business; the
  // final lowering reports what matters.
  ScopedDiagnosticHandler quiet(module.getContext(),
                                [](Diagnostic &) { return success(); });
  auto excess = [&](const std::vector<int64_t> &peaks) {
    int64_t over = 0;
    for (int64_t peak : peaks)
      over = std::max(over, peak - limit);
    return over;
  };
  // Down from the whole limit by the worst rank's excess until one fits.
  // Where a step changes no peak, the budget did not bind (the schedule
  // kept less than it, or reads no limit): each such step doubles.
  std::optional<RankBudget> fits, closest;
  double miss = 0; // the smallest budget known not to fit
  double step = 0;
  int attempts = 0;
  for (double budget = static_cast<double>(limit);
       attempts < kRankBudgetAttempts && budget > 0;) {
    ++attempts;
    FailureOr<RankBudget> at = peaksAt(module, budget, schedule);
    if (failed(at))
      break; // below what the schedule can run: keep the closest miss
    at->attempts = attempts;
    int64_t over = excess(at->peaks);
    if (over <= 0) {
      fits = *at;
      break;
    }
    bool unchanged = closest && closest->peaks == at->peaks;
    step = unchanged ? 2 * step : static_cast<double>(over);
    closest = *at;
    miss = budget;
    budget -= step;
  }
  if (!fits) {
    if (!closest)
      return failure();
    return *closest;
  }
  // Activations come a microbatch at a time, so the step down may have
  // gone further than it had to: bisect between the fit and the miss above
  // it with the attempts left, keeping the largest budget that fits.
  while (miss > 0 && attempts < kRankBudgetAttempts &&
         miss - fits->activations > 1) {
    ++attempts;
    double budget = std::floor((fits->activations + miss) / 2);
    FailureOr<RankBudget> at = peaksAt(module, budget, schedule);
    if (succeeded(at) && excess(at->peaks) <= 0)
      fits = *at;
    else
      miss = budget;
  }
  fits->attempts = attempts;
  return *fits;
}
