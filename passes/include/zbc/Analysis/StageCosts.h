//===- StageCosts.h - the costs a schedule plans with, on the IR --*- C++ -*-===//
//
// Note [Costs in the IR]
// A schedule plans with per-stage costs: F, B, W and R times, and the bytes
// a microbatch holds after F (M_B), after B (M_W), when recomputed (M_keep)
// and what an offload moves (M_offload); with the cost of a transfer (comm)
// and the copy queues' speed (copy bandwidth). They live on the IR, where
// zb-stage-costs writes them and everything after reads them:
//
//   zb.pipeline @gpt attributes {costs = {comm = 0.0, copy_bandwidth = 0.0,
//                                          unit = "FLOPs"}} {
//     zb.stage 0 attributes {costs = {B = ..., F = ..., M_B = ..., ...}} {
//
// Their source is the cost model (StageAnalysis: FLOPs as time, an F never
// 0) or a cost file's figures over it (measured times, `zbc profile`). A
// rewrite of the stages (a recompute policy, the checkpointed backward)
// refreshes them from the same source, which the pipeline's `costs`
// records. zb-schedule plans with them, the fit of a memory limit tries
// budgets with them, and `zbc compile` draws the predicted program with
// them: nobody derives costs twice.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_ANALYSIS_STAGECOSTS_H
#define ZBC_ANALYSIS_STAGECOSTS_H

#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Schedule/Problem.h"

#include "mlir/IR/Builders.h"

#include <optional>
#include <string>

namespace zbc {

struct CompileOptions;

/// A cost or a prediction as the IR writes it: an integer where it is one
/// (FLOPs, bytes: "F = 7127040 : i64" reads better than MLIR's
/// hexadecimal form of such a double), else a double (a time in ms);
/// costValueOf reads either (0 for none).
mlir::Attribute costAttr(mlir::Builder &b, double x);
double costValueOf(mlir::Attribute attr);

/// Where the costs come from: the cost model, or a cost file over it, and
/// the pipeline-wide figures given beside them.
struct CostSource {
  std::string costFile; // "": the cost model alone
  double comm = 0;
  double copyBandwidth = 0;
};
CostSource costSourceOf(const CompileOptions &options);

/// Writes the costs of `source` on `pipeline` and each of its stages.
/// Errors (an unreadable or mismatched cost file, a model too large to
/// cost) go to the pipeline or the stage.
mlir::LogicalResult attachCosts(zb::PipelineOp pipeline,
                                const CostSource &source);

/// The pipeline's costs again from the source they were attached from,
/// after its stages changed (a recompute policy, checkpoints); the cost
/// model's if none were attached yet.
mlir::LogicalResult refreshCosts(zb::PipelineOp pipeline);

/// Whether `pipeline` carries its costs.
bool hasCosts(zb::PipelineOp pipeline);

/// Whether `pipeline`'s costs came from a cost file: measured for its
/// stages as they are, so a rewrite of them (another recompute policy, the
/// checkpointed backward) cannot be judged with them.
bool hasMeasuredCosts(zb::PipelineOp pipeline);

/// The unit of the costs' times, for a picture's axis: "FLOPs" (the cost
/// model's) or "ms" (a cost file's: zbc profile measures milliseconds).
std::string costUnitOf(zb::PipelineOp pipeline);

/// The scheduling problem of `pipeline` from its attached costs, with
/// `virtualStages` stages per rank, `microbatches` and `budget` (Note [Two
/// memory limits]; nullopt: the schedule's default); validated, and held
/// to the shape a cost file was measured for. Errors go to the pipeline.
mlir::FailureOr<sched::Problem>
problemOfCosts(zb::PipelineOp pipeline, int64_t virtualStages,
               int64_t microbatches, std::optional<double> budget);

} // namespace zbc

#endif // ZBC_ANALYSIS_STAGECOSTS_H
