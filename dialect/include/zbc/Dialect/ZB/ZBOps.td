//===- ZBOps.td - zb dialect operations ---------------------*- tablegen -*-===//
//
// Operations of the zb dialect, in four groups, one file each: the model
// level (one microbatch of a training step: parameters, tensor ops, stage
// cuts, the loss), the backward ops that zb-autodiff creates, the pipeline
// level (stages with their F, B and W phases) and the schedule level
// (per-rank ordered F/B/W work and transfers).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_ZBOPS_TD
#define ZBC_DIALECT_ZB_ZBOPS_TD

include "zbc/Dialect/ZB/ZBDialect.td"
include "zbc/Dialect/ZB/ZBTypes.td"
include "zbc/Dialect/ZB/ZBAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/OpAsmInterface.td"
include "zbc/Dialect/ZB/ZBInterfaces.td"

def ZB_ModelGroup : OpDocGroup {
  let summary = "Model level";
  let description = "One microbatch of a training step, before scheduling.";
}
def ZB_BackwardGroup : OpDocGroup {
  let summary = "Backward";
  let description = "Gradient ops, created by zb-autodiff inside `zb.phase` bodies.";
}
def ZB_PipelineGroup : OpDocGroup {
  let summary = "Pipeline level";
  let description = "A model cut into stages, each with its F, B and W work.";
}
def ZB_ScheduleGroup : OpDocGroup {
  let summary = "Schedule level";
  let description = "Per-rank ordered work, after scheduling.";
}


include "zbc/Dialect/ZB/ZBModelOps.td"
include "zbc/Dialect/ZB/ZBBackwardOps.td"
include "zbc/Dialect/ZB/ZBPipelineOps.td"
include "zbc/Dialect/ZB/ZBScheduleOps.td"

#endif // ZBC_DIALECT_ZB_ZBOPS_TD
