//===- CostModel.h - FLOPs of zb ops ------------------------------*- C++ -*-===//
//
// The one cost model of zbc: FLOPs per op, as each op states them through
// KernelOpInterface::getFlops (dialect/lib/ZBCosts.cpp, computed from the
// op's kernel shape), for model-level and backward ops alike; matmul-class
// and elementwise FLOPs apart (OpCost.h). Used by zb-partition to balance
// stages, by the stage analysis to report F, B and W work, and through it
// by the schedulers.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_ANALYSIS_COSTMODEL_H
#define ZBC_ANALYSIS_COSTMODEL_H

#include "zbc/Dialect/ZB/OpCost.h"

namespace mlir {
class Operation;
} // namespace mlir

namespace zbc {

/// The cost of one zb tensor op, model-level or backward (its
/// KernelOpInterface::getFlops); zero for ops that compute nothing (leaves,
/// cuts, the loss, phases, yields, ops of other dialects).
OpCost getOpCost(mlir::Operation *op);

} // namespace zbc

#endif // ZBC_ANALYSIS_COSTMODEL_H
