//===- Schedule.cpp - zb.pipeline -> zb.program by a named schedule -------===//
//
// The bridge between the IR and the schedule library: the stage analysis
// turns each stage into a StageCost (FLOPs as time, activation bytes after F
// and after B as M_B and M_W), the registry builds, verifies and simulates
// the schedule, and the table becomes a zb.program whose ranks list their
// zb.compute ops in order. The dependences of Dependences.h whose producer
// runs on the same rank become `after` tokens.
//
//===----------------------------------------------------------------------===//

#include "zbc/Passes/Passes.h"
#include "zbc/Passes/RankBudget.h"

#include "zbc/Analysis/ProgramMemory.h"

#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Analysis/RecomputePlan.h"
#include "zbc/Analysis/StageAnalysis.h"
#include "zbc/Dialect/ZB/ModelHash.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Schedule/CostFile.h"
#include "zbc/Schedule/Dependences.h"
#include "zbc/Schedule/Offload.h"
#include "zbc/Schedule/Registry.h"
#include "zbc/Support/Limits.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#define DEBUG_TYPE "zb-schedule"

namespace zbc {
#define GEN_PASS_DEF_ZBSCHEDULEPASS
#include "zbc/Passes/Passes.h.inc"
} // namespace zbc

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;
namespace sched = zbc::sched;

namespace {

struct ZBSchedulePass final : zbc::impl::ZBSchedulePassBase<ZBSchedulePass> {
  using Base::Base;
  void runOnOperation() override;
  LogicalResult schedulePipeline(PipelineOp pipeline,
                                 std::optional<double> budget);
  /// This pass's options at an activation budget, without a memory limit:
  /// one try of the fit (Note [Rank budget]).
  LogicalResult scheduleAtBudget(ModuleOp target, double budget);
  /// The problem of `pipeline` at `v` stages per rank and `budget` with
  /// this pass's costs: the stage analysis', the copy bandwidth, and the
  /// cost file's figures over them where there is one.
  FailureOr<sched::Problem> problemWithCosts(PipelineOp pipeline, int64_t v,
                                             std::optional<double> budget) {
    FailureOr<sched::Problem> problem =
        schedulingProblemOf(pipeline, v, microbatches, comm, budget);
    if (failed(problem))
      return failure();
    problem->copyBandwidth = copyBandwidth;
    if (!costFile.empty() &&
        failed(applyCostFile(pipeline, costFile, *problem)))
      return failure();
    return problem;
  }
  /// The longest predicted makespan of the pipelines of a copy of `target`
  /// scheduled at `budget` (the simulator's, with this pass's costs).
  FailureOr<double> makespanAt(ModuleOp target, double budget);
};

/// FLOPs as a schedule time. An F with no FLOPs (a stage of data movement
/// only) still gets one, as the schedule library requires F > 0; B and W
/// are exact: a stage whose upstream needs no input gradient has no B work
/// (Note [No gradient upstream]), one without parameters no W work, and
/// both cost 0.
double asForwardTime(const OpCost &cost) {
  return std::max<double>(1.0, static_cast<double>(cost.total()));
}

} // namespace

FailureOr<sched::Problem> zbc::schedulingProblemOf(PipelineOp pipeline,
                                                   int64_t virtualStages,
                                                   int64_t microbatches,
                                                   double comm,
                                                   std::optional<double> activationBudget) {
  SmallVector<StageOp> stages(pipeline.getBody().front().getOps<StageOp>());
  sched::Problem problem;
  problem.ranks = static_cast<int>(stages.size() / virtualStages);
  problem.virtualStages = static_cast<int>(virtualStages);
  problem.microbatches = static_cast<int>(microbatches);
  problem.comm = comm;
  problem.activationBudget = activationBudget;
  for (StageOp stage : stages) {
    StageFigures figures = analyzeStage(stage);
    if (!figures.split)
      return stage.emitOpError("has a fused BW phase; run zb-split-backward "
                               "before zb-schedule");
    if (failed(verifyCostable(stage, figures)))
      return failure();
    sched::StageCost cost;
    cost.F = asForwardTime(figures.forward);
    cost.B = static_cast<double>(figures.inputGrad.total());
    cost.W = static_cast<double>(figures.weightGrad.total());
    cost.memB = static_cast<double>(figures.bytesAfterF);
    cost.memW = static_cast<double>(figures.bytesAfterB);
    // Where F reads an input B does not, keeping the inputs holds more than
    // the stash: recomputing saves nothing (the proof counts exact bytes).
    cost.memKeep = static_cast<double>(
        std::min(figures.bytesKeptForRecompute, figures.bytesAfterF));
    cost.memOffload = static_cast<double>(figures.bytesStashed);
    // An R runs the ops that rebuild the stash (RecomputePlan.h), fewer
    // than F's where its F also computes what it sends or its loss.
    cost.recompute = static_cast<double>(figures.recompute.total());
    problem.stages.push_back(cost);
  }
  return problem;
}

LogicalResult zbc::applyCostFile(PipelineOp pipeline, StringRef costFile,
                                 sched::Problem &problem) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(costFile, &error);
  if (!file)
    return pipeline.emitOpError("cannot read the cost file: ") << error;
  llvm::Expected<sched::CostFile> parsed =
      sched::parseCostFile(file->getBuffer(), costFile);
  if (!parsed)
    return pipeline.emitOpError(llvm::toString(parsed.takeError()));
  if (parsed->modelHash && *parsed->modelHash != zb::modelHashOf(pipeline))
    return pipeline.emitOpError("cost file '")
           << costFile << "' was measured on model '"
           << parsed->model.value_or("?") << "' (IR hash " << *parsed->modelHash
           << "); this pipeline is '" << pipeline.getSymName() << "' (IR hash "
           << zb::modelHashOf(pipeline) << ")";
  int stages = problem.numStages();
  if ((parsed->ranks && *parsed->ranks != problem.ranks) ||
      (parsed->virtualStages && *parsed->virtualStages != problem.virtualStages))
    return pipeline.emitOpError("cost file '")
           << costFile << "' describes " << parsed->ranks.value_or(problem.ranks)
           << " ranks of " << parsed->virtualStages.value_or(problem.virtualStages)
           << " stages each; the pipeline has " << problem.ranks << " of "
           << problem.virtualStages;
  struct Field {
    const char *name;
    const std::vector<double> &values;
    double sched::StageCost::*member;
  };
  for (const Field &field :
       {Field{"F", parsed->F, &sched::StageCost::F},
        Field{"B", parsed->B, &sched::StageCost::B},
        Field{"W", parsed->W, &sched::StageCost::W},
        Field{"R", parsed->R, &sched::StageCost::recompute},
        Field{"M_B", parsed->memB, &sched::StageCost::memB},
        Field{"M_W", parsed->memW, &sched::StageCost::memW},
        Field{"M_keep", parsed->memKeep, &sched::StageCost::memKeep},
        Field{"M_offload", parsed->memOffload, &sched::StageCost::memOffload}}) {
    if (field.values.empty())
      continue;
    if (field.values.size() != 1 && static_cast<int>(field.values.size()) != stages)
      return pipeline.emitOpError("cost file '")
             << costFile << "' gives " << field.values.size() << " " << field.name
             << " values; the pipeline has " << stages << " stages (give one "
             << "for all, or one per stage)";
    for (int s = 0; s < stages; ++s)
      problem.stages[s].*field.member =
          field.values[field.values.size() == 1 ? 0 : s];
  }
  if (parsed->comm)
    problem.comm = *parsed->comm;
  if (parsed->copyBandwidth)
    problem.copyBandwidth = *parsed->copyBandwidth;
  if (llvm::Error e = problem.validate())
    return pipeline.emitOpError(llvm::toString(std::move(e)));
  return success();
}

LogicalResult ZBSchedulePass::schedulePipeline(PipelineOp pipeline,
                                               std::optional<double> budget) {
  const sched::ScheduleInfo *info = sched::lookupSchedule(kind);
  if (!info) {
    std::string names;
    for (const sched::ScheduleInfo &s : sched::registeredSchedules())
      names += std::string(names.empty() ? "" : ", ") + s.name;
    return pipeline.emitOpError("unknown schedule '")
           << kind << "'; registered: " << names;
  }
  if (microbatches < 1 || microbatches > limits::kMaxMicrobatches)
    return pipeline.emitOpError("needs microbatches=N with N in [1, ")
           << limits::kMaxMicrobatches << "] for zb-schedule, got "
           << static_cast<int64_t>(microbatches);
  auto amount = [](double x) {
    return std::isfinite(x) && x >= 0 && x <= limits::kMaxAmount;
  };
  // Diagnostics print doubles in scientific notation; options read better
  // as typed.
  auto typed = [](double x) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%g", x);
    return std::string(buffer);
  };
  if (!amount(comm))
    return pipeline.emitOpError("comm must be in [0, 1e30], got ")
           << typed(comm);
  if (!(std::isfinite(exactSeconds) && exactSeconds >= 0 &&
        exactSeconds <= limits::kMaxSolverSeconds))
    return pipeline.emitOpError("exact must be in [0, 86400] seconds (0: "
                                "off), got ")
           << typed(exactSeconds);

  if (failed(optimizerCopies(optimizer)))
    return pipeline.emitOpError("optimizer must be 'sgd' or 'adamw', got '")
           << optimizer << "'";

  SmallVector<StageOp> stages(pipeline.getBody().front().getOps<StageOp>());
  int64_t numStages = stages.size();
  int64_t v = info->placement == sched::Placement::V ? 2
              : info->placement == sched::Placement::Interleaved
                  ? static_cast<int64_t>(virtualStages)
                  : 1;
  if (v < 1 || v > limits::kMaxStages || numStages % v != 0)
    return pipeline.emitOpError("has ")
           << numStages << " stages, which schedule '" << kind
           << "' cannot place " << v << " per rank";
  if (llvm::Error error =
          sched::checkProblemSize(numStages / v, v, microbatches))
    return pipeline.emitOpError(llvm::toString(std::move(error)));

  if (!amount(copyBandwidth))
    return pipeline.emitOpError("copy-bandwidth must be in [0, 1e30], got ")
           << typed(copyBandwidth);
  // Note [Selective recomputation]: the stages that state no policy of
  // their own, which recompute=selective (and auto, trying it) gives the
  // cheap one.
  SmallVector<StageOp> withoutPolicy;
  for (StageOp stage : stages)
    if (!stage.getRebuilt())
      withoutPolicy.push_back(stage);
  auto setPolicy = [&](bool selective) {
    Builder b(pipeline.getContext());
    for (StageOp stage : withoutPolicy)
      if (selective)
        stage.setRebuiltAttr(b.getStrArrayAttr(llvm::to_vector_of<StringRef>(
            selectiveRebuiltKeys(stage))));
      else
        stage.removeRebuiltAttr();
  };
  if (recompute == "selective")
    setPolicy(true);
  auto problemOf = [&] { return problemWithCosts(pipeline, v, budget); };
  FailureOr<sched::Problem> problem = problemOf();
  if (failed(problem))
    return failure();

  sched::BuildOptions options;
  options.exactSeconds = exactSeconds;
  llvm::Expected<sched::RecomputeMode> mode =
      sched::parseRecomputeMode(recompute);
  if (!mode)
    return pipeline.emitOpError("recompute: ")
           << llvm::toString(mode.takeError());
  options.recompute = *mode;
  llvm::Expected<sched::OffloadMode> offloadMode =
      sched::parseOffloadMode(offload);
  if (!offloadMode)
    return pipeline.emitOpError("offload: ")
           << llvm::toString(offloadMode.takeError());
  options.offload = *offloadMode;
  if (options.offload != sched::OffloadMode::None &&
      !(problem->copyBandwidth > 0))
    return pipeline.emitOpError("offload=")
           << offload << " needs the copy queues' speed: give copy-bandwidth "
           << "(bytes per unit of schedule time) or a cost file's "
           << "copy_bandwidth";
  llvm::Expected<sched::BuiltSchedule> built =
      sched::buildSchedule(kind, *problem, options);
  if (!built)
    return pipeline.emitOpError(llvm::toString(built.takeError()));
  // recompute=auto also tries the selective policy on the stages without
  // one (a cheaper R, more kept after F) and keeps the shorter schedule
  // within the budget. A cost file's R and M_keep are measured for one
  // policy: there the IR's stays.
  // A stage whose cheap policy rebuilds nothing recomputes nothing under
  // it: without such a key anywhere the selective build is the plain one.
  bool anyCheapKey = llvm::any_of(withoutPolicy, [](StageOp stage) {
    return !selectiveRebuiltKeys(stage).empty();
  });
  if (options.recompute == sched::RecomputeMode::Auto && costFile.empty() &&
      anyCheapKey) {
    setPolicy(true);
    FailureOr<sched::Problem> selective = problemOf();
    if (failed(selective))
      return failure();
    llvm::Expected<sched::BuiltSchedule> other =
        sched::buildSchedule(kind, *selective, options);
    std::string tried =
        other ? "makespan " + typed(other->sim.makespan)
              : "no schedule (" + llvm::toString(other.takeError()) + ")";
    bool shorter = other && other->sim.makespan < built->sim.makespan;
    if (shorter)
      std::swap(*built, *other);
    else
      setPolicy(false);
    built->report.notes.push_back(
        std::string("recompute auto: the selective policy gives ") + tried +
        ", rebuilding every stash " +
        typed(shorter ? other->sim.makespan : built->sim.makespan) +
        "; kept " + (shorter ? "selective" : "full"));
  }

  if (report) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "schedule '" << kind << "': makespan "
       << llvm::format("%.4g", built->sim.makespan) << ", bubble rate "
       << llvm::format("%.4f", built->sim.bubbleRate)
       << ", activation budget ";
    if (built->problem.budget() > 0)
      os << llvm::format("%.0f", built->problem.budget());
    else
      os << "none";
    if (built->budgetOrigin != "given" && built->budgetOrigin != "none")
      os << " (" << built->budgetOrigin << ")";
    os << ", peak memory per rank [";
    llvm::interleaveComma(built->sim.peakMemory, os,
                          [&](double m) { os << llvm::format("%.0f", m); });
    os << "]";
    for (const std::string &note : built->report.notes)
      os << "; " << note;
    emitRemark(pipeline.getLoc()) << text;
  }

  // @<pipeline>_<schedule>, with the schedule's dashes made underscores so
  // the symbol needs no quotes.
  std::string name = (pipeline.getSymName() + "_" + kind).str();
  std::replace(name.begin(), name.end(), '-', '_');
  buildComputeProgram(pipeline, built->table, name, kind, optimizer);
  return success();
}

LogicalResult ZBSchedulePass::scheduleAtBudget(ModuleOp target,
                                               double budget) {
  ZBSchedulePassOptions options;
  options.kind = kind;
  options.microbatches = microbatches;
  options.virtualStages = virtualStages;
  options.activationBudget = sched::activationBudgetText(budget);
  options.comm = comm;
  options.exactSeconds = exactSeconds;
  options.optimizer = optimizer;
  options.costFile = costFile;
  options.recompute = recompute;
  options.offload = offload;
  options.copyBandwidth = copyBandwidth;
  PassManager pm(target.getContext());
  pm.addPass(createZBSchedulePass(options));
  return pm.run(target);
}

FailureOr<double> ZBSchedulePass::makespanAt(ModuleOp target,
                                             double budget) {
  OwningOpRef<ModuleOp> copy = target.clone();
  if (failed(scheduleAtBudget(*copy, budget)))
    return failure();
  double longest = 0;
  for (PipelineOp pipeline : copy->getOps<PipelineOp>()) {
    ProgramOp program = programOfPipeline(pipeline);
    if (!program)
      return failure();
    sched::ScheduleTable table = tableOfProgram(program);
    int64_t stages = llvm::range_size(
        pipeline.getBody().front().getOps<StageOp>());
    FailureOr<sched::Problem> problem = problemWithCosts(
        pipeline, stages / std::max<int64_t>(program.getNumRanks(), 1),
        std::nullopt);
    if (failed(problem))
      return failure();
    llvm::Expected<sched::SimResult> sim = sched::simulate(*problem, table);
    if (!sim) {
      llvm::consumeError(sim.takeError());
      return failure();
    }
    longest = std::max(longest, sim->makespan);
  }
  return longest;
}

void ZBSchedulePass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<PipelineOp> pipelines(module.getOps<PipelineOp>());
  if (pipelines.empty()) {
    module.emitError("zb-schedule found no 'zb.pipeline'; run "
                     "zb-autodiff and zb-split-backward first");
    return signalPassFailure();
  }
  llvm::Expected<std::optional<double>> budget =
      sched::parseActivationBudget(activationBudget);
  if (!budget) {
    module.emitError("zb-schedule: ") << llvm::toString(budget.takeError());
    return signalPassFailure();
  }
  if (memoryLimit < 0 || memoryLimit > limits::kMaxTensorBytes) {
    module.emitError("zb-schedule: memory-limit must be 0 (none) or a "
                     "number of bytes up to ")
        << limits::kMaxTensorBytes << ", got "
        << static_cast<int64_t>(memoryLimit);
    return signalPassFailure();
  }
  if (memoryLimit > 0 && *budget) {
    module.emitError("zb-schedule: give memory-limit (a rank's whole "
                     "memory, from which the activation budget is fitted) "
                     "or activation-budget, not both");
    return signalPassFailure();
  }
  bool toSchedule = llvm::any_of(
      pipelines, [](PipelineOp pipeline) { return !programOfPipeline(pipeline); });
  // A rank's whole memory as the schedule's activation budget: the largest
  // that fits, else the closest miss, which the proof then reports. The
  // program records the budget it was built at, fitted or given.
  std::optional<double> builtAt;
  if (*budget && **budget > 0)
    builtAt = **budget;
  if (memoryLimit > 0 && toSchedule) {
    *budget = static_cast<double>(memoryLimit);
    auto fit = [&](ModuleOp candidate) {
      return fitActivationBudget(candidate, memoryLimit,
                                 [&](ModuleOp target, double bytes) {
                                   return scheduleAtBudget(target, bytes);
                                 });
    };
    auto fitsLimit = [&](const FailureOr<RankBudget> &fitted) {
      return succeeded(fitted) &&
             llvm::all_of(fitted->peaks, [&](int64_t peak) {
               return peak <= memoryLimit;
             });
    };
    FailureOr<RankBudget> fitted = fit(module);
    std::string askedRecompute = recompute, askedOffload = offload;
    // Note [Levers never lose]: an `auto` lever chooses among orders with
    // and without it at one activation budget, but the fit of a whole
    // rank's limit may find no budget where the orders it chose fit while
    // the plain order fits: then the plain order it is.
    bool automatic = recompute == "auto" || offload == "auto";
    bool fellBackToPlain = false; // said below, unless checkpoints win
    if (automatic && !fitsLimit(fitted)) {
      recompute = "none";
      offload = "none";
      FailureOr<RankBudget> plain = fit(module);
      if (fitsLimit(plain)) {
        fitted = plain;
        fellBackToPlain = true;
      } else {
        recompute = askedRecompute;
        offload = askedOffload;
      }
    }
    // Note [Checkpoints as a candidate]: with recompute=auto the
    // checkpointed backward (Note [Checkpointed backward]) is one more
    // candidate, fitted to the limit on a copy of the module: it is taken
    // where nothing else fits (below every order's least limit a backward
    // holds its microbatch's whole stash, R ops or not) and where it plans
    // a shorter step (a smaller stash leaves room for more microbatches in
    // flight). A cost file's figures are measured for the stages as they
    // are, so with one it is taken only where nothing else fits.
    if (askedRecompute == "auto") {
      // What the fit above settled on, for its makespan; the candidate
      // with the levers as asked.
      std::string keptRecompute = recompute, keptOffload = offload;
      recompute = askedRecompute;
      offload = askedOffload;
      OwningOpRef<ModuleOp> trial = module.clone();
      FailureOr<RankBudget> checkpointed = failure();
      {
        // A pipeline it cannot rewrite (one with its program) only means
        // no such candidate.
        ScopedDiagnosticHandler quiet(module.getContext(),
                                      [](Diagnostic &) { return success(); });
        if (llvm::all_of(trial->getOps<PipelineOp>(), [](PipelineOp pipeline) {
              return succeeded(checkpointBackward(pipeline));
            }))
          checkpointed = fit(*trial);
      }
      std::optional<std::pair<double, double>> spans; // checkpointed, not
      bool take = fitsLimit(checkpointed) && !fitsLimit(fitted);
      if (fitsLimit(checkpointed) && fitsLimit(fitted) && costFile.empty()) {
        FailureOr<double> with = makespanAt(*trial, checkpointed->activations);
        std::swap(recompute, keptRecompute);
        std::swap(offload, keptOffload);
        FailureOr<double> without = makespanAt(module, fitted->activations);
        std::swap(recompute, keptRecompute);
        std::swap(offload, keptOffload);
        if (succeeded(with) && succeeded(without)) {
          spans = {*with, *without};
          take = *with < *without;
        }
      }
      if (take) {
        for (PipelineOp pipeline : pipelines) {
          (void)checkpointBackward(pipeline); // as on the copy
          std::string text;
          llvm::raw_string_ostream os(text);
          os << "zb-schedule: ";
          if (spans)
            os << "the backward checkpointed plans a makespan of "
               << llvm::format("%.4g", spans->first) << " within memory-limit "
               << static_cast<int64_t>(memoryLimit) << ", against "
               << llvm::format("%.4g", spans->second)
               << " with the stash kept, recomputed or offloaded";
          else
            os << "no order fits memory-limit "
               << static_cast<int64_t>(memoryLimit)
               << " with the stash kept, recomputed or offloaded";
          os << "; the backward is checkpointed (zb-checkpoint-backward)";
          emitRemark(pipeline.getLoc()) << text;
        }
        fitted = checkpointed;
        fellBackToPlain = false;
      } else {
        recompute = keptRecompute;
        offload = keptOffload;
      }
    }
    if (fellBackToPlain)
      for (PipelineOp pipeline : pipelines)
        emitRemark(pipeline.getLoc())
            << "zb-schedule: no order with recompute=" << askedRecompute
            << " offload=" << askedOffload << " fits memory-limit "
            << static_cast<int64_t>(memoryLimit)
            << "; the order without the levers does";
    if (succeeded(fitted))
      *budget = builtAt = fitted->activations;
  }
  Builder b(module.getContext());
  for (PipelineOp pipeline : pipelines) {
    bool scheduledHere = !programOfPipeline(pipeline);
    if (scheduledHere && failed(schedulePipeline(pipeline, *budget))) {
      if (memoryLimit > 0)
        module.emitError("no schedule within memory-limit ")
            << static_cast<int64_t>(memoryLimit)
            << " bytes per rank, which must also hold each rank's "
               "parameters, gradients, optimizer state and temporaries (the "
               "error is above)";
      return signalPassFailure();
    }
    ProgramOp program = programOfPipeline(pipeline);
    if (memoryLimit > 0)
      program.setMemoryLimitAttr(b.getI64IntegerAttr(memoryLimit));
    if (builtAt && scheduledHere)
      program.setActivationBudgetAttr(
          b.getI64IntegerAttr(static_cast<int64_t>(std::llround(*builtAt))));
  }
}
