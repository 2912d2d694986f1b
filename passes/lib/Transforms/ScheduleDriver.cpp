//===- ScheduleDriver.cpp - orders at a budget, levers under a limit ------===//
//
// Note [Choosing the levers]
// Every choice among the memory levers is made here, in two places of one
// file:
// - At an activation budget (orderAtBudget): recompute=auto lets the
//   schedule library choose the stages and microbatches to recompute and
//   offload=auto those to offload (buildSchedule); beside that, each stage
//   without a policy of its own is tried with the cheap one (selective)
//   and with full recomputation, and the shorter order is kept.
// - Under a rank's memory limit (chooseLevers): the levers asked are
//   fitted to the limit (Note [Rank budget]). An `auto` lever chooses among
//   orders with and without it at one budget, but the fit may find no
//   budget where the orders it chose fit while the plain order fits: then
//   the plain order it is (the levers never lose). With recompute=auto the
//   checkpointed backward (Note [Checkpointed backward]) is one more
//   candidate, fitted on a copy of the module: it is taken where nothing
//   else fits (below every order's least limit a backward holds its
//   microbatch's whole stash, R ops or not) and where it plans a shorter
//   step (a smaller stash leaves room for more microbatches in flight).
//   With a cost file every candidate is costed in its unit (Note [Measured
//   costs]) and judged the same way.
// Each candidate says so in a remark on the pipeline where it wins. Where
// none fits, a remark says what would (whatWouldFit): each lever's least
// arena, at the smallest budget its schedule takes, and what a rank holds
// before any activation.
//
//===----------------------------------------------------------------------===//

#include "ScheduleDriver.h"

#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Analysis/RecomputePlan.h"
#include "zbc/Analysis/StageCosts.h"
#include "zbc/Passes/Passes.h"
#include "zbc/Passes/RankBudget.h"
#include "zbc/Support/Limits.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

/// A number as typed in an option ("%g"), for messages.
std::string typed(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", x);
  return buffer;
}

/// The stages of `pipeline` without a recompute policy of their own: those
/// selective (and auto, trying it) gives the cheap one.
SmallVector<StageOp> stagesWithoutPolicy(PipelineOp pipeline) {
  SmallVector<StageOp> stages;
  for (StageOp stage : pipeline.getBody().front().getOps<StageOp>())
    if (!stage.getRebuilt())
      stages.push_back(stage);
  return stages;
}

/// Gives `stages` the cheap policy (or none) and their costs for it.
LogicalResult setCheapPolicy(PipelineOp pipeline, ArrayRef<StageOp> stages,
                             bool cheap) {
  Builder b(pipeline.getContext());
  for (StageOp stage : stages)
    if (cheap)
      stage.setRebuiltAttr(b.getStrArrayAttr(
          llvm::to_vector_of<StringRef>(selectiveRebuiltKeys(stage))));
    else
      stage.removeRebuiltAttr();
  return refreshCosts(pipeline);
}

/// The schedule library's build of `problem` as `request` and `levers`
/// ask; its refusal as the library words it.
llvm::Expected<sched::BuiltSchedule> build(const sched::Problem &problem,
                                           const CompileOptions &request,
                                           Levers levers) {
  sched::BuildOptions options;
  options.exactSeconds = request.exactSeconds;
  options.recompute = scheduleModeOf(levers.recompute);
  options.offload = levers.offload;
  return sched::buildSchedule(request.schedule, problem, options);
}

/// Schedules every pipeline of `module` without a program at `budget`
/// with `levers`, writing its compute-only program; returns the longest
/// predicted makespan.
FailureOr<double> scheduleModule(ModuleOp module, const CompileOptions &request,
                                 Levers levers, std::optional<double> budget) {
  double longest = 0;
  for (PipelineOp pipeline : module.getOps<PipelineOp>()) {
    if (programOfPipeline(pipeline))
      continue;
    FailureOr<BuiltOrder> order = orderAtBudget(pipeline, request, levers, budget);
    if (failed(order))
      return failure();
    recordReplicas(buildComputeProgram(pipeline, order->built.table,
                                       programNameOf(pipeline,
                                                     request.schedule),
                                       request.schedule,
                                       optimizerName(request.optimizer)),
                   request);
    longest = std::max(longest, order->built.sim.makespan);
  }
  return longest;
}

/// The checkpointed backward on every pipeline of `module`, with the
/// costs of the rewritten stages.
LogicalResult checkpointModule(ModuleOp module) {
  for (PipelineOp pipeline : module.getOps<PipelineOp>())
    if (failed(checkpointBackward(pipeline)) || failed(refreshCosts(pipeline)))
      return failure();
  return success();
}

/// The remark where nothing fits `limit`: for each lever alone, the
/// largest arena of its order at the smallest budget it takes
/// (leastArena); and the most a rank holds before any activation
/// (parameters, gradients, optimizer state), which no lever lowers.
std::string whatWouldFit(ModuleOp module, const CompileOptions &request,
                         int64_t limit) {
  struct Candidate {
    const char *name;
    Levers levers;
    bool checkpointed;
  };
  const Candidate candidates[] = {
      {"without levers", {}, false},
      {"--recompute full", {RecomputeLever::Full, OffloadLever::None}, false},
      {"--recompute selective",
       {RecomputeLever::Selective, OffloadLever::None},
       false},
      {"--recompute checkpoint", {}, true},
      {"--offload full", {RecomputeLever::None, OffloadLever::Full}, false}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "zb-schedule: no order fits memory-limit " << limit
     << "; the least arena each lever allocates:";
  int64_t before = 0;
  bool first = true;
  for (const Candidate &candidate : candidates) {
    OwningOpRef<ModuleOp> copy = module.clone();
    FailureOr<RankBudget> least = failure();
    {
      ScopedDiagnosticHandler quiet(module.getContext(),
                                    [](Diagnostic &) { return success(); });
      if (!candidate.checkpointed || succeeded(checkpointModule(*copy)))
        least = leastArena(*copy, limit,
                           [&](ModuleOp target, std::optional<double> bytes) {
          return scheduleModule(target, request, candidate.levers, bytes);
        });
    }
    if (failed(least) || least->arenas.empty())
      continue; // the lever does not apply (no copy bandwidth, ...)
    os << (first ? " " : ", ") << candidate.name << " "
       << *llvm::max_element(least->arenas);
    first = false;
    for (int64_t bytes : least->persistent)
      before = std::max(before, bytes);
  }
  if (first)
    os << " none could be scheduled";
  os << "; a rank holds up to " << before
     << " bytes of parameters, gradients and optimizer state before any "
        "activation"
     << (before > limit ? ", more than the limit alone" : "");
  return text;
}

} // namespace

std::string zbc::programNameOf(PipelineOp pipeline, StringRef schedule) {
  // @<pipeline>_<schedule>, with the schedule's dashes made underscores so
  // the symbol needs no quotes.
  std::string name = (pipeline.getSymName() + "_" + schedule).str();
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

FailureOr<int64_t> zbc::checkScheduleRequest(PipelineOp pipeline,
                                             const CompileOptions &request) {
  const sched::ScheduleInfo *info = sched::lookupSchedule(request.schedule);
  if (!info) {
    std::string names;
    for (const sched::ScheduleInfo &s : sched::registeredSchedules())
      names += std::string(names.empty() ? "" : ", ") + s.name;
    return pipeline.emitOpError("unknown schedule '")
           << request.schedule << "'; registered: " << names;
  }
  if (request.zero > 0 && request.replicas < 2)
    return pipeline.emitOpError("zero=")
           << request.zero << " shards the optimizer over data-parallel "
           << "replicas: give data-parallel=D with D >= 2 (zbc: "
           << "--data-parallel D)";
  if (request.microbatches < 1 ||
      request.microbatches > limits::kMaxMicrobatches)
    return pipeline.emitOpError("needs microbatches=N with N in [1, ")
           << limits::kMaxMicrobatches << "] for zb-schedule, got "
           << request.microbatches;
  int64_t numStages = pipeline.getNumStages();
  llvm::Expected<int64_t> v =
      sched::resolveStagesPerRank(*info, request.stagesPerRank);
  if (!v)
    return pipeline.emitOpError(llvm::toString(v.takeError()));
  if (numStages % *v != 0)
    return pipeline.emitOpError("has ")
           << numStages << " stages, which schedule '" << request.schedule
           << "' cannot place " << *v << " per rank";
  if (llvm::Error error =
          sched::checkProblemSize(numStages / *v, *v, request.microbatches))
    return pipeline.emitOpError(llvm::toString(std::move(error)));
  if (request.offload != OffloadLever::None) {
    FailureOr<sched::Problem> problem =
        problemOfCosts(pipeline, *v, request.microbatches, std::nullopt);
    if (failed(problem))
      return failure();
    if (!(problem->copyBandwidth > 0))
      return pipeline.emitOpError("offload=")
             << optionValueText(request.offload)
             << " needs the copy queues' speed: give copy-bandwidth (bytes "
                "per unit of schedule time) or a cost file's copy_bandwidth";
  }
  return *v;
}

FailureOr<BuiltOrder> zbc::orderAtBudget(PipelineOp pipeline,
                                    const CompileOptions &request,
                                    Levers levers,
                                    std::optional<double> budget) {
  FailureOr<int64_t> v = checkScheduleRequest(pipeline, request);
  if (failed(v))
    return failure();
  SmallVector<StageOp> withoutPolicy = stagesWithoutPolicy(pipeline);
  if (levers.recompute == RecomputeLever::Selective &&
      failed(setCheapPolicy(pipeline, withoutPolicy, true)))
    return failure();
  auto problem = [&] {
    return problemOfCosts(pipeline, *v, request.microbatches, budget,
                          request.replicas, request.zero);
  };
  FailureOr<sched::Problem> asked = problem();
  if (failed(asked))
    return failure();
  llvm::Expected<sched::BuiltSchedule> built = build(*asked, request, levers);
  if (!built)
    return pipeline.emitOpError(llvm::toString(built.takeError()));
  BuiltOrder order{std::move(*built), levers.recompute == RecomputeLever::Selective};
  // A stage whose cheap policy rebuilds nothing recomputes nothing under
  // it: without such a key anywhere the selective build is the plain one.
  bool anyCheapKey = llvm::any_of(withoutPolicy, [](StageOp stage) {
    return !selectiveRebuiltKeys(stage).empty();
  });
  if (levers.recompute != RecomputeLever::Auto || !anyCheapKey)
    return order;
  if (failed(setCheapPolicy(pipeline, withoutPolicy, true)))
    return failure();
  // The cheap policy's refusal only means the full one stays.
  FailureOr<sched::Problem> cheap = problem();
  if (failed(cheap))
    return failure();
  llvm::Expected<sched::BuiltSchedule> other = build(*cheap, request, levers);
  std::string tried =
      other ? "makespan " + typed(other->sim.makespan)
            : "no schedule (" + llvm::toString(other.takeError()) + ")";
  bool shorter = other && other->sim.makespan < order.built.sim.makespan;
  double full = order.built.sim.makespan;
  if (shorter) {
    order.built = std::move(*other);
    order.selective = true;
  } else if (failed(setCheapPolicy(pipeline, withoutPolicy, false))) {
    return failure();
  }
  order.built.report.notes.push_back(
      "recompute auto: the selective policy gives " + tried +
      ", rebuilding every stash " +
      typed(shorter ? full : order.built.sim.makespan) + "; kept " +
      (shorter ? "selective" : "full"));
  return order;
}

LeverChoice zbc::chooseLevers(ModuleOp module, const CompileOptions &request) {
  int64_t limit = request.memoryLimit;
  auto fit = [&](ModuleOp candidate, Levers levers) {
    return fitActivationBudget(candidate, limit,
                               [&](ModuleOp target,
                                   std::optional<double> bytes) {
                                 return scheduleModule(target, request, levers,
                                                       bytes);
                               });
  };
  auto fits = [&](const FailureOr<RankBudget> &fitted) {
    return succeeded(fitted) && fitted->withinLimit;
  };
  Levers asked{request.recompute == RecomputeLever::Checkpoint
                   ? RecomputeLever::None
                   : request.recompute,
               request.offload};
  LeverChoice choice{asked};
  FailureOr<RankBudget> fitted = fit(module, asked);
  bool fellBackToPlain = false; // said below, unless checkpoints win
  if ((asked.recompute == RecomputeLever::Auto ||
       asked.offload == OffloadLever::Auto) &&
      !fits(fitted)) {
    FailureOr<RankBudget> plain = fit(module, Levers{});
    if (fits(plain)) {
      fitted = plain;
      choice.levers = Levers{};
      fellBackToPlain = true;
    }
  }
  if (asked.recompute == RecomputeLever::Auto) {
    OwningOpRef<ModuleOp> trial = module.clone();
    FailureOr<RankBudget> checkpointed = failure();
    {
      // A pipeline it cannot rewrite (one with its program) only means no
      // such candidate.
      ScopedDiagnosticHandler quiet(module.getContext(),
                                    [](Diagnostic &) { return success(); });
      if (succeeded(checkpointModule(*trial)))
        checkpointed = fit(*trial, asked);
    }
    std::optional<std::pair<double, double>> spans; // checkpointed, not
    bool take = fits(checkpointed) && !fits(fitted);
    // Each fit knows the makespan of its order at the budget it found.
    if (fits(checkpointed) && fits(fitted)) {
      spans = {checkpointed->makespan, fitted->makespan};
      take = spans->first < spans->second;
    }
    if (take) {
      (void)checkpointModule(module); // as on the copy
      for (PipelineOp pipeline : module.getOps<PipelineOp>()) {
        std::string text;
        llvm::raw_string_ostream os(text);
        os << "zb-schedule: ";
        if (spans)
          os << "the backward checkpointed plans a makespan of "
             << llvm::format("%.4g", spans->first) << " within memory-limit "
             << limit << ", against " << llvm::format("%.4g", spans->second)
             << " with the stash kept, recomputed or offloaded";
        else
          os << "no order fits memory-limit " << limit
             << " with the stash kept, recomputed or offloaded";
        os << "; the backward is checkpointed (zb-checkpoint-backward)";
        emitRemark(pipeline.getLoc()) << text;
      }
      fitted = checkpointed;
      choice.levers = asked;
      choice.checkpointed = true;
      fellBackToPlain = false;
    }
  }
  if (fellBackToPlain)
    for (PipelineOp pipeline : module.getOps<PipelineOp>())
      emitRemark(pipeline.getLoc())
          << "zb-schedule: no order with recompute="
          << optionValueText(asked.recompute)
          << " offload=" << optionValueText(asked.offload)
          << " fits memory-limit " << limit
          << "; the order without the levers does";
  if (succeeded(fitted) && fitted->scheduleDefault)
    choice.atScheduleDefault = true;
  else if (succeeded(fitted))
    choice.fitted = fitted->activations; // the closest miss, where none fits
  if (!fits(fitted)) {
    std::string said = whatWouldFit(module, request, limit);
    for (PipelineOp pipeline : module.getOps<PipelineOp>())
      emitRemark(pipeline.getLoc()) << said;
  }
  return choice;
}

void zbc::recordReplicas(ProgramOp program, const CompileOptions &request) {
  Builder b(program.getContext());
  if (request.replicas > 1)
    program.setReplicasAttr(b.getI64IntegerAttr(request.replicas));
  if (request.zero > 0)
    program.setZeroAttr(b.getI64IntegerAttr(request.zero));
}
