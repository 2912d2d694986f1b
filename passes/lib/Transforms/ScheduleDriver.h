//===- ScheduleDriver.h - orders at a budget, levers under a limit -*- C++ -*-===//
//
// What zb-schedule runs (Schedule.cpp holds the pass): one order of a
// pipeline's work at an activation budget with given memory levers, and
// the choice of the levers and the budget under a rank's memory limit
// (Note [Choosing the levers]). Plain calls with typed options: the fit
// tries budgets on copies of the module without building pass managers of
// zb-schedule from printed options.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_PASSES_TRANSFORMS_SCHEDULEDRIVER_H
#define ZBC_PASSES_TRANSFORMS_SCHEDULEDRIVER_H

#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Options/CompileOptions.h"
#include "zbc/Schedule/Registry.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>
#include <vector>

namespace zbc {

/// The memory levers an order is built with: what recomputes (R ops: none,
/// full, selective, auto; never checkpoint, which is a rewrite of the
/// stages before the order) and what offloads.
struct Levers {
  RecomputeLever recompute = RecomputeLever::None;
  OffloadLever offload = OffloadLever::None;
};

/// An order built for one pipeline, and the policy it chose.
struct BuiltOrder {
  sched::BuiltSchedule built;
  /// The stages without a policy of their own were given the cheap one
  /// (recompute=selective, or auto where that was shorter).
  bool selective = false;
};

/// The schedule `request.schedule` of `pipeline` (its stages' costs
/// attached, Note [Costs in the IR]) at `budget` (nullopt: the schedule's
/// default; 0: none) with `levers`: recompute=selective gives every stage
/// without a policy the cheap one (Note [Selective recomputation]);
/// recompute=auto also tries that and keeps the shorter. The stages are left
/// with the policy chosen and their costs refreshed. Errors go to the
/// pipeline (the request is checked first: checkScheduleRequest).
mlir::FailureOr<BuiltOrder> orderAtBudget(zb::PipelineOp pipeline,
                                     const CompileOptions &request,
                                     Levers levers,
                                     std::optional<double> budget);

/// Records on `program` the data-parallel replicas and the sharding
/// `request` asks for (its collectives and its memory follow from them).
void recordReplicas(zb::ProgramOp program, const CompileOptions &request);

/// The symbol of the program zb-schedule writes for `pipeline`.
std::string programNameOf(zb::PipelineOp pipeline, llvm::StringRef schedule);

/// The stages per rank `request.schedule` places `pipeline`'s stages in,
/// after checking what is asked of it: the schedule registered, the
/// microbatches given, the stages placeable, the optimizer, the copy
/// bandwidth an offload needs. Errors go to the pipeline.
mlir::FailureOr<int64_t> checkScheduleRequest(zb::PipelineOp pipeline,
                                              const CompileOptions &request);

/// Note [Choosing the levers] (ScheduleDriver.cpp): what an order under
/// `request.memoryLimit` is built with.
struct LeverChoice {
  Levers levers;
  /// The module's pipelines were checkpointed (zb-checkpoint-backward).
  bool checkpointed = false;
  /// The activation budget fitted to the limit; none where no budget fits
  /// (the order is then built at the whole limit, and the proof names the
  /// rank that does not fit).
  std::optional<double> fitted;
  /// The order at the schedule's own default budget fits where no budget
  /// given did (Note [Rank budget]): it is built so.
  bool atScheduleDefault = false;
};
LeverChoice chooseLevers(mlir::ModuleOp module, const CompileOptions &request);

} // namespace zbc

#endif // ZBC_PASSES_TRANSFORMS_SCHEDULEDRIVER_H
