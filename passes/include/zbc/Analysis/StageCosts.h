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
// 0) or a cost file's figures over it (measured times, `zbc profile`: Note
// [Measured costs]). A rewrite of the stages (a recompute policy, the
// checkpointed backward) refreshes them. zb-schedule plans with them, the
// fit of a memory limit tries budgets with them, and `zbc compile` draws
// the predicted program with them: nobody derives costs twice.
//
// Note [Measured costs]
// A cost file gives times in its own unit (zbc profile: milliseconds) for
// the stages as they were measured; the cost model gives FLOPs and bytes
// for the stages as they are. The two meet once, when zb-stage-costs
// applies the file, and are never mixed after:
// - each stage's rate, its measured F over its F in FLOPs, converts every
//   time the file leaves out from the model's FLOPs: R (zbc profile
//   measures none) is the stage's recomputed FLOPs at the rate F ran at;
//   a file that gives B, W or R without F is refused, as its times would
//   have no unit to meet the model's in;
// - the file's bytes stand where it gives them (zbc profile writes the
//   compiler's M_B and M_W), the model's elsewhere; comm and
//   copy_bandwidth are in its time unit (copy_bandwidth: bytes per unit);
// - the model hash is checked then, on the stages as measured; each stage
//   keeps its figures as measured and the model's of that moment in its
//   `costs` (`measured`, `measured_model`), and a rewrite since (a recompute
//   policy, the checkpointed backward) changes its costs by what it changes
//   in the model: FLOPs at the stage's rate, bytes as they are.
// So every lever is planned in the file's unit, and `zbc schedule` on the
// same file predicts in the same unit.
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
  double collectiveBandwidth = 0;
};
CostSource costSourceOf(const CompileOptions &options);

/// Writes the costs of `source` on `pipeline` and each of its stages.
/// Errors (an unreadable or mismatched cost file, a model too large to
/// cost) go to the pipeline or the stage.
mlir::LogicalResult attachCosts(zb::PipelineOp pipeline,
                                const CostSource &source);

/// The stages' costs again after they changed (a recompute policy,
/// checkpoints): the cost model's, or as measured plus what the change
/// changed (Note [Measured costs]); the cost model's if none were
/// attached yet.
mlir::LogicalResult refreshCosts(zb::PipelineOp pipeline);

/// Whether `pipeline` carries its costs.
bool hasCosts(zb::PipelineOp pipeline);

/// The unit of the costs' times, for a picture's axis: "FLOPs" (the cost
/// model's) or "ms" (a cost file's: zbc profile measures milliseconds).
std::string costUnitOf(zb::PipelineOp pipeline);

/// The scheduling problem of `pipeline` from its attached costs, with
/// `virtualStages` stages per rank, `microbatches` and `budget` (Note [Two
/// memory limits]; nullopt: the schedule's default), run as `replicas`
/// data-parallel replicas, the optimizer sharded over them if `zero` > 0
/// (its collectives: Note [Collectives in the simulator]); validated, and held to the shape a cost file was measured
/// for. Errors go to the pipeline.
mlir::FailureOr<sched::Problem>
problemOfCosts(zb::PipelineOp pipeline, int64_t virtualStages,
               int64_t microbatches, std::optional<double> budget,
               int64_t replicas = 1, int64_t zero = 0);

} // namespace zbc

#endif // ZBC_ANALYSIS_STAGECOSTS_H
