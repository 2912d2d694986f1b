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
#include <map>

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

/// The keys of a stage's `costs`, each a field of sched::StageCost; the
/// cost file names its lists the same way.
struct CostKey {
  const char *name;
  double sched::StageCost::*member;
  bool time; // else bytes
};
constexpr CostKey kStageKeys[] = {
    {"F", &sched::StageCost::F, true},
    {"B", &sched::StageCost::B, true},
    {"W", &sched::StageCost::W, true},
    {"R", &sched::StageCost::recompute, true},
    {"M_B", &sched::StageCost::memB, false},
    {"M_W", &sched::StageCost::memW, false},
    {"M_keep", &sched::StageCost::memKeep, false},
    {"M_offload", &sched::StageCost::memOffload, false}};

// A stage's figures as a cost file measured them and the cost model's at
// that moment (Note [Measured costs]), inside its `costs`.
constexpr const char *kMeasured = "measured";
constexpr const char *kMeasuredModel = "measured_model";

// The pipeline's `costs`: the figures every stage shares and where the
// stages' came from.
constexpr const char *kComm = "comm";
constexpr const char *kCopyBandwidth = "copy_bandwidth";
constexpr const char *kCollectiveBandwidth = "collective_bandwidth";
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

/// The stages' figures as the cost file at `path` measured them (Note
/// [Measured costs]): its own where it gives them, the rest derived from
/// `model`, the cost model's figures of the same stages; its pipeline-wide
/// figures go to `pipelineCosts`.
FailureOr<std::vector<sched::StageCost>>
measuredCostsOf(PipelineOp pipeline, StringRef path,
                const std::vector<sched::StageCost> &model,
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
  size_t stages = model.size();
  struct Field {
    const char *name;
    const std::vector<double> &values;
  };
  const Field fields[] = {{"F", parsed->F},       {"B", parsed->B},
                          {"W", parsed->W},       {"R", parsed->R},
                          {"M_B", parsed->memB},  {"M_W", parsed->memW},
                          {"M_keep", parsed->memKeep},
                          {"M_offload", parsed->memOffload}};
  bool anyTime = false;
  for (auto [key, field] : llvm::zip(kStageKeys, fields)) {
    if (field.values.size() > 1 && field.values.size() != stages)
      return pipeline.emitOpError("cost file '")
             << path << "' gives " << field.values.size() << " " << field.name
             << " values; the pipeline has " << stages << " stages (give one "
             << "for all, or one per stage)";
    anyTime |= key.time && !field.values.empty();
  }
  if (anyTime && parsed->F.empty())
    return pipeline.emitOpError("cost file '")
           << path << "' gives times but no F: each stage's F sets the unit "
           << "its other times are read and derived in (Note [Measured "
           << "costs]); give F for every stage";
  std::vector<sched::StageCost> measured = model;
  for (size_t s = 0; s < stages; ++s) {
    auto given = [&](const std::vector<double> &values) -> std::optional<double> {
      if (values.empty())
        return std::nullopt;
      return values[values.size() == 1 ? 0 : s];
    };
    // The stage's rate: its measured F over its FLOPs (1 without times).
    double rate = 1;
    if (std::optional<double> f = given(parsed->F)) {
      if (!(*f > 0))
        return pipeline.emitOpError("cost file '")
               << path << "' gives stage " << s << " an F of " << *f
               << "; an F must be above 0";
      rate = *f / model[s].F;
    }
    for (auto [key, field] : llvm::zip(kStageKeys, fields)) {
      std::optional<double> value = given(field.values);
      measured[s].*key.member =
          value ? *value
                : (key.time ? model[s].*key.member * rate : model[s].*key.member);
    }
  }
  Builder b(pipeline.getContext());
  if (parsed->comm)
    pipelineCosts.set(kComm, costAttr(b, *parsed->comm));
  if (parsed->copyBandwidth)
    pipelineCosts.set(kCopyBandwidth, costAttr(b, *parsed->copyBandwidth));
  if (parsed->collectiveBandwidth)
    pipelineCosts.set(kCollectiveBandwidth,
                      costAttr(b, *parsed->collectiveBandwidth));
  if (parsed->ranks)
    pipelineCosts.set(kFileRanks, b.getI64IntegerAttr(*parsed->ranks));
  if (parsed->virtualStages)
    pipelineCosts.set(kFileVirtual, b.getI64IntegerAttr(*parsed->virtualStages));
  if (anyTime)
    pipelineCosts.set(kUnit, b.getStringAttr("ms"));
  return measured;
}

/// The figures of `cost` as a dictionary, by kStageKeys.
DictionaryAttr dictionaryOf(Builder &b, const sched::StageCost &cost) {
  NamedAttrList entries;
  for (const CostKey &key : kStageKeys)
    entries.set(key.name, costAttr(b, cost.*key.member));
  return entries.getDictionary(b.getContext());
}

sched::StageCost costOfDictionary(DictionaryAttr dict) {
  sched::StageCost cost;
  for (const CostKey &key : kStageKeys)
    cost.*key.member = numberIn(dict, key.name);
  return cost;
}

/// The cost model's figures of every stage of `pipeline`.
FailureOr<std::vector<sched::StageCost>> modelCostsOf(PipelineOp pipeline) {
  std::vector<sched::StageCost> costs;
  for (StageOp stage : pipeline.getBody().front().getOps<StageOp>()) {
    FailureOr<sched::StageCost> cost = modelCostOf(stage);
    if (failed(cost))
      return failure();
    costs.push_back(*cost);
  }
  return costs;
}

/// Writes `costs` on `stage`, with what it was measured as where it was.
void setStageCosts(StageOp stage, const sched::StageCost &costs,
                   DictionaryAttr measured, DictionaryAttr measuredModel) {
  Builder b(stage.getContext());
  NamedAttrList entries(dictionaryOf(b, costs));
  if (measured) {
    entries.set(kMeasured, measured);
    entries.set(kMeasuredModel, measuredModel);
  }
  stage->setAttr("costs", entries.getDictionary(stage.getContext()));
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
  return CostSource{options.costFile, options.comm, options.copyBandwidth,
                    options.collectiveBandwidth};
}

LogicalResult zbc::attachCosts(PipelineOp pipeline, const CostSource &source) {
  SmallVector<StageOp> stages(pipeline.getBody().front().getOps<StageOp>());
  FailureOr<std::vector<sched::StageCost>> model = modelCostsOf(pipeline);
  if (failed(model))
    return failure();
  Builder b(pipeline.getContext());
  NamedAttrList pipelineCosts;
  pipelineCosts.set(kComm, costAttr(b, source.comm));
  pipelineCosts.set(kCopyBandwidth, costAttr(b, source.copyBandwidth));
  if (source.collectiveBandwidth > 0)
    pipelineCosts.set(kCollectiveBandwidth,
                      costAttr(b, source.collectiveBandwidth));
  pipelineCosts.set(kUnit, b.getStringAttr("FLOPs"));
  if (source.costFile.empty()) {
    for (auto [stage, cost] : llvm::zip(stages, *model))
      setStageCosts(stage, cost, {}, {});
  } else {
    FailureOr<std::vector<sched::StageCost>> measured =
        measuredCostsOf(pipeline, source.costFile, *model, pipelineCosts);
    if (failed(measured))
      return failure();
    pipelineCosts.set(kCostFile, b.getStringAttr(source.costFile));
    for (auto [stage, cost, asModel] : llvm::zip(stages, *measured, *model))
      setStageCosts(stage, cost, dictionaryOf(b, cost), dictionaryOf(b, asModel));
  }
  pipeline->setAttr("costs", pipelineCosts.getDictionary(pipeline.getContext()));
  return success();
}

LogicalResult zbc::refreshCosts(PipelineOp pipeline) {
  if (!costsOf(pipeline))
    return attachCosts(pipeline, CostSource());
  SmallVector<StageOp> stages(pipeline.getBody().front().getOps<StageOp>());
  FailureOr<std::vector<sched::StageCost>> model = modelCostsOf(pipeline);
  if (failed(model))
    return failure();
  for (auto [stage, now] : llvm::zip(stages, *model)) {
    DictionaryAttr previous = costsOf(stage);
    auto measured = previous ? previous.getAs<DictionaryAttr>(kMeasured)
                             : DictionaryAttr();
    auto measuredModel = previous
                             ? previous.getAs<DictionaryAttr>(kMeasuredModel)
                             : DictionaryAttr();
    if (!measured || !measuredModel) {
      setStageCosts(stage, now, {}, {});
      continue;
    }
    // What the rewrite changed in the model, at the stage's measured rate
    // (Note [Measured costs]).
    sched::StageCost asMeasured = costOfDictionary(measured);
    sched::StageCost thenModel = costOfDictionary(measuredModel);
    double rate = asMeasured.F / thenModel.F;
    sched::StageCost cost;
    for (const CostKey &key : kStageKeys) {
      double change = now.*key.member - thenModel.*key.member;
      cost.*key.member = std::max(
          0.0, asMeasured.*key.member + (key.time ? change * rate : change));
    }
    cost.F = std::max(cost.F, asMeasured.F * 1e-9); // an F is never 0
    setStageCosts(stage, cost, measured, measuredModel);
  }
  return success();
}

bool zbc::hasCosts(PipelineOp pipeline) {
  return costsOf(pipeline) &&
         llvm::all_of(pipeline.getBody().front().getOps<StageOp>(),
                      [](StageOp stage) { return costsOf(stage); });
}

std::string zbc::costUnitOf(PipelineOp pipeline) {
  DictionaryAttr costs = costsOf(pipeline);
  auto unit = costs ? costs.getAs<StringAttr>(kUnit) : StringAttr();
  return unit ? unit.str() : "FLOPs";
}

/// Note [Collectives in the simulator]: per stage the f32 gradients of the
/// parameters it alone holds, and one sum per parameter several hold.
static std::vector<sched::GradientSum> gradientSumsOf(PipelineOp pipeline) {
  std::map<std::string, sched::GradientSum> byParam;
  std::vector<std::string> order;
  for (auto [s, stage] :
       llvm::enumerate(pipeline.getBody().front().getOps<StageOp>()))
    for (ParamOp param : stage.getBody().front().getOps<ParamOp>()) {
      auto [it, first] = byParam.try_emplace(param.getName().str());
      if (first) {
        order.push_back(param.getName().str());
        auto type = cast<RankedTensorType>(param.getType());
        it->second.bytes = static_cast<double>(type.getNumElements() * 4);
        it->second.paramBytes = static_cast<double>(
            type.getNumElements() * (type.getElementTypeBitWidth() / 8));
      }
      it->second.stages.push_back(static_cast<int>(s));
    }
  std::map<int, sched::GradientSum> ofStage;
  std::vector<sched::GradientSum> sums;
  for (const std::string &name : order) {
    const sched::GradientSum &sum = byParam[name];
    if (sum.stages.size() > 1) {
      sums.push_back(sum);
      continue;
    }
    sched::GradientSum &bucket = ofStage[sum.stages.front()];
    bucket.stages = sum.stages;
    bucket.bytes += sum.bytes;
    bucket.paramBytes += sum.paramBytes;
  }
  for (auto &[stage, bucket] : ofStage)
    sums.push_back(bucket);
  return sums;
}

FailureOr<sched::Problem>
zbc::problemOfCosts(PipelineOp pipeline, int64_t virtualStages,
                    int64_t microbatches, std::optional<double> budget,
                    int64_t replicas, int64_t zero) {
  SmallVector<StageOp> stages(pipeline.getBody().front().getOps<StageOp>());
  DictionaryAttr costs = costsOf(pipeline);
  sched::Problem problem;
  problem.ranks = static_cast<int>(stages.size() / virtualStages);
  problem.virtualStages = static_cast<int>(virtualStages);
  problem.microbatches = static_cast<int>(microbatches);
  problem.comm = numberIn(costs, kComm);
  problem.copyBandwidth = numberIn(costs, kCopyBandwidth);
  problem.collectiveBandwidth = numberIn(costs, kCollectiveBandwidth);
  problem.replicas = static_cast<int>(replicas);
  problem.sharded = replicas > 1 && zero > 0;
  problem.gradientSums = gradientSumsOf(pipeline);
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
