//===- StageCosts.cpp - the costs a schedule plans with, on the IR --------===//
//
// Note [Costs in the IR] (StageCosts.h): the cost model's figures, a cost
// file's over them, written on the stages; and the problem read back.
//
//===----------------------------------------------------------------------===//

#include "zbc/Analysis/StageCosts.h"

#include "zbc/Analysis/StageAnalysis.h"
#include "zbc/Dialect/ZB/ModelHash.h"
#include "zbc/Options/CompileOptions.h"
#include "zbc/Schedule/CostFile.h"

#include "mlir/IR/Builders.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

/// The keys of a stage's `costs`, each a field of sched::StageCost; the
/// cost file names its lists the same way.
struct CostKey {
  const char *name;
  double sched::StageCost::*member;
};
constexpr CostKey kStageKeys[] = {
    {"F", &sched::StageCost::F},
    {"B", &sched::StageCost::B},
    {"W", &sched::StageCost::W},
    {"R", &sched::StageCost::recompute},
    {"M_B", &sched::StageCost::memB},
    {"M_W", &sched::StageCost::memW},
    {"M_keep", &sched::StageCost::memKeep},
    {"M_offload", &sched::StageCost::memOffload}};

// The pipeline's `costs`: the figures every stage shares and where the
// stages' came from.
constexpr const char *kComm = "comm";
constexpr const char *kCopyBandwidth = "copy_bandwidth";
constexpr const char *kUnit = "unit";
constexpr const char *kCostFile = "cost_file";
// The shape a cost file was measured for, where it says.
constexpr const char *kFileRanks = "file_ranks";
constexpr const char *kFileVirtual = "file_virtual";

DictionaryAttr costsOf(Operation *op) {
  return op->getAttrOfType<DictionaryAttr>("costs");
}

double numberIn(DictionaryAttr dict, StringRef key) {
  return dict ? costValueOf(dict.get(key)) : 0;
}

/// FLOPs as a schedule time. An F with no FLOPs (a stage of data movement
/// only) still gets one, as the schedule library requires F > 0; B and W
/// are exact: a stage whose upstream needs no input gradient has no B work
/// (Note [No gradient upstream]), one without parameters no W work, and
/// both cost 0.
double asForwardTime(const OpCost &cost) {
  return std::max<double>(1.0, static_cast<double>(cost.total()));
}

/// The cost model's figures of `stage`; errors go to the stage.
FailureOr<sched::StageCost> modelCostOf(StageOp stage) {
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
  // An R runs the ops that rebuild the stash (RecomputePlan.h), fewer than
  // F's where its F also computes what it sends or its loss.
  cost.recompute = static_cast<double>(figures.recompute.total());
  return cost;
}

/// The cost file's figures over `costs` (one value for every stage, or
/// one per stage), and its pipeline-wide ones over `pipelineCosts`.
LogicalResult applyCostFile(PipelineOp pipeline, StringRef path,
                            std::vector<sched::StageCost> &costs,
                            NamedAttrList &pipelineCosts) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(path, &error);
  if (!file)
    return pipeline.emitOpError("cannot read the cost file: ") << error;
  llvm::Expected<sched::CostFile> parsed =
      sched::parseCostFile(file->getBuffer(), path);
  if (!parsed)
    return pipeline.emitOpError(llvm::toString(parsed.takeError()));
  if (parsed->modelHash && *parsed->modelHash != modelHashOf(pipeline))
    return pipeline.emitOpError("cost file '")
           << path << "' was measured on model '"
           << parsed->model.value_or("?") << "' (IR hash " << *parsed->modelHash
           << "); this pipeline is '" << pipeline.getSymName() << "' (IR hash "
           << modelHashOf(pipeline) << ")";
  size_t stages = costs.size();
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
    if (field.values.size() != 1 && field.values.size() != stages)
      return pipeline.emitOpError("cost file '")
             << path << "' gives " << field.values.size() << " " << field.name
             << " values; the pipeline has " << stages << " stages (give one "
             << "for all, or one per stage)";
    for (size_t s = 0; s < stages; ++s)
      costs[s].*field.member = field.values[field.values.size() == 1 ? 0 : s];
  }
  Builder b(pipeline.getContext());
  if (parsed->comm)
    pipelineCosts.set(kComm, costAttr(b, *parsed->comm));
  if (parsed->copyBandwidth)
    pipelineCosts.set(kCopyBandwidth, costAttr(b, *parsed->copyBandwidth));
  if (parsed->ranks)
    pipelineCosts.set(kFileRanks, b.getI64IntegerAttr(*parsed->ranks));
  if (parsed->virtualStages)
    pipelineCosts.set(kFileVirtual, b.getI64IntegerAttr(*parsed->virtualStages));
  return success();
}

} // namespace

Attribute zbc::costAttr(Builder &b, double x) {
  if (x == std::trunc(x) && std::abs(x) < 0x1p53)
    return b.getI64IntegerAttr(static_cast<int64_t>(x));
  return b.getF64FloatAttr(x);
}

double zbc::costValueOf(Attribute attr) {
  if (auto integer = dyn_cast_or_null<IntegerAttr>(attr))
    return static_cast<double>(integer.getInt());
  if (auto real = dyn_cast_or_null<FloatAttr>(attr))
    return real.getValueAsDouble();
  return 0;
}

CostSource zbc::costSourceOf(const CompileOptions &options) {
  return CostSource{options.costFile, options.comm, options.copyBandwidth};
}

LogicalResult zbc::attachCosts(PipelineOp pipeline, const CostSource &source) {
  SmallVector<StageOp> stages(pipeline.getBody().front().getOps<StageOp>());
  std::vector<sched::StageCost> costs;
  for (StageOp stage : stages) {
    FailureOr<sched::StageCost> cost = modelCostOf(stage);
    if (failed(cost))
      return failure();
    costs.push_back(*cost);
  }
  Builder b(pipeline.getContext());
  NamedAttrList pipelineCosts;
  pipelineCosts.set(kComm, costAttr(b, source.comm));
  pipelineCosts.set(kCopyBandwidth, costAttr(b, source.copyBandwidth));
  pipelineCosts.set(kUnit, b.getStringAttr("FLOPs"));
  if (!source.costFile.empty()) {
    if (failed(applyCostFile(pipeline, source.costFile, costs, pipelineCosts)))
      return failure();
    pipelineCosts.set(kUnit, b.getStringAttr("ms"));
    pipelineCosts.set(kCostFile, b.getStringAttr(source.costFile));
  }
  for (auto [stage, cost] : llvm::zip(stages, costs)) {
    NamedAttrList entries;
    for (const CostKey &key : kStageKeys)
      entries.set(key.name, costAttr(b, cost.*key.member));
    stage->setAttr("costs", entries.getDictionary(pipeline.getContext()));
  }
  pipeline->setAttr("costs", pipelineCosts.getDictionary(pipeline.getContext()));
  return success();
}

LogicalResult zbc::refreshCosts(PipelineOp pipeline) {
  DictionaryAttr costs = costsOf(pipeline);
  CostSource source;
  if (costs) {
    source.comm = numberIn(costs, kComm);
    source.copyBandwidth = numberIn(costs, kCopyBandwidth);
    if (auto file = costs.getAs<StringAttr>(kCostFile))
      source.costFile = file.str();
  }
  return attachCosts(pipeline, source);
}

bool zbc::hasCosts(PipelineOp pipeline) {
  return costsOf(pipeline) &&
         llvm::all_of(pipeline.getBody().front().getOps<StageOp>(),
                      [](StageOp stage) { return costsOf(stage); });
}

bool zbc::hasMeasuredCosts(PipelineOp pipeline) {
  DictionaryAttr costs = costsOf(pipeline);
  return costs && costs.get(kCostFile);
}

std::string zbc::costUnitOf(PipelineOp pipeline) {
  DictionaryAttr costs = costsOf(pipeline);
  auto unit = costs ? costs.getAs<StringAttr>(kUnit) : StringAttr();
  return unit ? unit.str() : "FLOPs";
}

FailureOr<sched::Problem>
zbc::problemOfCosts(PipelineOp pipeline, int64_t virtualStages,
                    int64_t microbatches, std::optional<double> budget) {
  SmallVector<StageOp> stages(pipeline.getBody().front().getOps<StageOp>());
  DictionaryAttr costs = costsOf(pipeline);
  sched::Problem problem;
  problem.ranks = static_cast<int>(stages.size() / virtualStages);
  problem.virtualStages = static_cast<int>(virtualStages);
  problem.microbatches = static_cast<int>(microbatches);
  problem.comm = numberIn(costs, kComm);
  problem.copyBandwidth = numberIn(costs, kCopyBandwidth);
  problem.activationBudget = budget;
  for (StageOp stage : stages) {
    DictionaryAttr entries = costsOf(stage);
    if (!entries)
      return stage.emitOpError("has no costs; run zb-stage-costs first");
    sched::StageCost cost;
    for (const CostKey &key : kStageKeys)
      cost.*key.member = numberIn(entries, key.name);
    problem.stages.push_back(cost);
  }
  if (costs) {
    auto fileRanks = costs.getAs<IntegerAttr>(kFileRanks);
    auto fileVirtual = costs.getAs<IntegerAttr>(kFileVirtual);
    if ((fileRanks && fileRanks.getInt() != problem.ranks) ||
        (fileVirtual && fileVirtual.getInt() != problem.virtualStages))
      return pipeline.emitOpError("cost file '")
             << costs.getAs<StringAttr>(kCostFile).getValue() << "' describes "
             << (fileRanks ? fileRanks.getInt() : problem.ranks)
             << " ranks of "
             << (fileVirtual ? fileVirtual.getInt() : problem.virtualStages)
             << " stages each; the pipeline has " << problem.ranks << " of "
             << problem.virtualStages;
    // A cost file's figures are held to the problem's rules here, where
    // the problem is whole (without one, the schedule's validation does).
    if (costs.get(kCostFile))
      if (llvm::Error e = problem.validate())
        return pipeline.emitOpError(llvm::toString(std::move(e)));
  }
  return problem;
}
