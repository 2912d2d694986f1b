//===- Schedule.cpp - zb.pipeline -> zb.program by a named schedule -------===//
//
// The pass that turns each split pipeline into a compute-only zb.program:
// its costs from the IR (Note [Costs in the IR]), its memory levers and
// activation budget chosen under a memory limit, the order built by the
// schedule library (ScheduleDriver.h), and the program written with what
// it predicts (makespan, bubble rate, the levers it was built with) for
// the tools that report it. The dependences of Dependences.h whose
// producer runs on the same rank become `after` tokens.
//
//===----------------------------------------------------------------------===//

#include "ScheduleDriver.h"

#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Analysis/StageCosts.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Passes/PassOptionBinder.h"
#include "zbc/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

#define DEBUG_TYPE "zb-schedule"

namespace zbc {
#define GEN_PASS_DEF_ZBSCHEDULEPASS
#define GEN_PASS_DEF_ZBSTAGECOSTSPASS
#include "zbc/Passes/Passes.h.inc"
} // namespace zbc

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

/// A pass whose options are those of CompileOptions' `groups`, bound once
/// (PassOptionBinder.h) and read into `request` when parsed.
template <typename Base, unsigned Groups> struct BoundOptionsPass : Base {
  BoundOptionsPass() { request.bind(binder); }
  explicit BoundOptionsPass(const CompileOptions &options) : request(options) {
    request.bind(binder);
  }
  BoundOptionsPass(const BoundOptionsPass &other)
      : Base(other), request(other.request) {
    request.bind(binder);
  }
  LogicalResult initializeOptions(
      StringRef options,
      function_ref<LogicalResult(const Twine &)> errorHandler) override {
    // A value refused by its reading is reported as that reading words it.
    auto report = [&](const Twine &message) {
      return errorHandler(binder.refusal().empty()
                              ? message
                              : Twine(this->getArgument()) + " option " +
                                    binder.refusal());
    };
    if (failed(Base::initializeOptions(options, report)))
      return failure();
    binder.read();
    return success();
  }

  CompileOptions request;
  PassOptionBinder<mlir::Pass> binder{*this, Groups};
};

struct ZBStageCostsPass final
    : BoundOptionsPass<zbc::impl::ZBStageCostsPassBase<ZBStageCostsPass>,
                       CostsGroup> {
  using BoundOptionsPass::BoundOptionsPass;
  void runOnOperation() override {
    for (PipelineOp pipeline : getOperation().getOps<PipelineOp>())
      if (failed(attachCosts(pipeline, costSourceOf(request))))
        return signalPassFailure();
  }
};

struct ZBSchedulePass final
    : BoundOptionsPass<zbc::impl::ZBSchedulePassBase<ZBSchedulePass>,
                       OrderGroup | ScheduleGroup> {
  using BoundOptionsPass::BoundOptionsPass;
  ZBSchedulePass(const CompileOptions &options, bool remark)
      : BoundOptionsPass(options) {
    report = remark;
  }
  ZBSchedulePass(const ZBSchedulePass &other) : BoundOptionsPass(other) {}
  void runOnOperation() override;
  /// Writes `order` as `pipeline`'s program.
  ProgramOp writeProgram(PipelineOp pipeline, const BuiltOrder &order,
                         const LeverChoice &levers);

  Option<bool> report{*this, "report",
                      llvm::cl::desc("Emit a remark with the simulated "
                                     "makespan, bubble and memory"),
                      llvm::cl::init(false)};
};

/// The remark `report` asks for: the order's makespan, bubble rate,
/// budget and peaks, and the builder's notes.
void remarkOn(PipelineOp pipeline, StringRef schedule,
              const sched::BuiltSchedule &built) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "schedule '" << schedule << "': makespan "
     << llvm::format("%.4g", built.sim.makespan) << ", bubble rate "
     << llvm::format("%.4f", built.sim.bubbleRate) << ", activation budget ";
  if (built.problem.budget() > 0)
    os << llvm::format("%.0f", built.problem.budget());
  else
    os << "none";
  if (built.budgetOrigin != "given" && built.budgetOrigin != "none")
    os << " (" << built.budgetOrigin << ")";
  os << ", peak memory per rank [";
  llvm::interleaveComma(built.sim.peakMemory, os,
                        [&](double m) { os << llvm::format("%.0f", m); });
  os << "]";
  for (const std::string &note : built.report.notes)
    os << "; " << note;
  emitRemark(pipeline.getLoc()) << text;
}

/// What the program is predicted to take: the makespan and bubble rate of
/// its order with its pipeline's costs.
void recordPrediction(ProgramOp program, const sched::SimResult &sim) {
  Builder b(program.getContext());
  program.setPredictedMakespanAttr(costAttr(b, sim.makespan));
  program.setPredictedBubbleRateAttr(b.getF64FloatAttr(sim.bubbleRate));
}

/// A program the pipeline came with (a schedule file's, an earlier run's):
/// its order simulated with the pipeline's costs, where it can be. One that
/// cannot is refused by the proof that follows, which says where.
void recordPredictionOfKept(ProgramOp program, PipelineOp pipeline) {
  int64_t ranks = std::max<int64_t>(program.getNumRanks(), 1);
  ScopedDiagnosticHandler quiet(program.getContext(),
                                [](Diagnostic &) { return success(); });
  FailureOr<sched::Problem> problem =
      problemOfCosts(pipeline, pipeline.getNumStages() / ranks,
                     program.getMicrobatches(), std::nullopt,
                     program.getReplicas().value_or(1),
                     program.getZero().value_or(0));
  if (failed(problem))
    return;
  llvm::Expected<sched::SimResult> sim =
      sched::simulate(*problem, tableOfProgram(program));
  if (!sim) {
    llvm::consumeError(sim.takeError());
    return;
  }
  recordPrediction(program, *sim);
}

} // namespace

ProgramOp ZBSchedulePass::writeProgram(PipelineOp pipeline, const BuiltOrder &order,
                                       const LeverChoice &choice) {
  ProgramOp program = buildComputeProgram(
      pipeline, order.built.table,
      programNameOf(pipeline, request.schedule), request.schedule,
      optimizerName(request.optimizer));
  recordPrediction(program, order.built.sim);
  Builder b(program.getContext());
  NamedAttrList levers;
  levers.set("recompute", b.getStringAttr(optionValueText(
                              choice.levers.recompute)));
  levers.set("offload",
             b.getStringAttr(optionValueText(choice.levers.offload)));
  levers.set("backward",
             b.getStringAttr(choice.checkpointed ? "checkpointed" : "stored"));
  program.setLeversAttr(levers.getDictionary(program.getContext()));
  return program;
}

void ZBSchedulePass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<PipelineOp> pipelines(module.getOps<PipelineOp>());
  if (pipelines.empty()) {
    module.emitError("zb-schedule found no 'zb.pipeline'; run "
                     "zb-autodiff and zb-split-backward first");
    return signalPassFailure();
  }
  int64_t memoryLimit = request.memoryLimit;
  if (memoryLimit > 0 && !request.activationBudget.isScheduleDefault()) {
    module.emitError("zb-schedule: give memory-limit (a rank's whole "
                     "memory, from which the activation budget is fitted) "
                     "or activation-budget, not both");
    return signalPassFailure();
  }
  // The costs zb-stage-costs attached, else the cost model's.
  for (PipelineOp pipeline : pipelines)
    if (!hasCosts(pipeline) && failed(attachCosts(pipeline, CostSource())))
      return signalPassFailure();
  bool toSchedule = llvm::any_of(
      pipelines, [](PipelineOp pipeline) { return !programOfPipeline(pipeline); });
  for (PipelineOp pipeline : pipelines)
    if (!programOfPipeline(pipeline) &&
        failed(checkScheduleRequest(pipeline, request)))
      return signalPassFailure();

  // The levers as asked, checkpoints first: the schedule plans with the
  // stash and backward costs they leave.
  LeverChoice choice;
  choice.levers = Levers{request.recompute == RecomputeLever::Checkpoint
                             ? RecomputeLever::None
                             : request.recompute,
                         request.offload};
  if (request.recompute == RecomputeLever::Checkpoint) {
    for (PipelineOp pipeline : pipelines)
      if (failed(checkpointBackward(pipeline)) ||
          failed(refreshCosts(pipeline)))
        return signalPassFailure();
    choice.checkpointed = true;
  }
  // A rank's whole memory as the schedule's activation budget: the largest
  // that fits, else the whole limit, which the proof then refuses. The
  // program records the budget it was built at, fitted or given.
  std::optional<double> budget = request.activationBudget.forProblem();
  std::optional<double> builtAt = request.activationBudget.givenBytes();
  if (memoryLimit > 0 && toSchedule) {
    LeverChoice fitted = chooseLevers(module, request);
    fitted.checkpointed |= choice.checkpointed;
    choice = fitted;
    budget = choice.atScheduleDefault
                 ? std::optional<double>()
                 : choice.fitted.value_or(static_cast<double>(memoryLimit));
    builtAt = choice.fitted;
  }

  Builder b(module.getContext());
  for (PipelineOp pipeline : pipelines) {
    ProgramOp program = programOfPipeline(pipeline);
    if (program) {
      recordPredictionOfKept(program, pipeline);
    } else {
      FailureOr<BuiltOrder> order =
          orderAtBudget(pipeline, request, choice.levers, budget);
      if (failed(order)) {
        if (memoryLimit > 0)
          module.emitError("no schedule within memory-limit ")
              << memoryLimit
              << " bytes per rank, which must also hold each rank's "
                 "parameters, gradients, optimizer state and temporaries (the "
                 "error is above)";
        return signalPassFailure();
      }
      if (report)
        remarkOn(pipeline, request.schedule, order->built);
      program = writeProgram(pipeline, *order, choice);
      if (builtAt)
        program.setActivationBudgetAttr(
            b.getI64IntegerAttr(static_cast<int64_t>(std::llround(*builtAt))));
    }
    if (memoryLimit > 0)
      program.setMemoryLimitAttr(b.getI64IntegerAttr(memoryLimit));
    // The replicas it runs as: zb-insert-collectives sums their gradients.
    recordReplicas(program, request);
  }
}

std::unique_ptr<Pass> zbc::createZBSchedulePass(const CompileOptions &options,
                                                bool report) {
  return std::make_unique<ZBSchedulePass>(options, report);
}

std::unique_ptr<Pass>
zbc::createZBStageCostsPass(const CompileOptions &options) {
  return std::make_unique<ZBStageCostsPass>(options);
}
