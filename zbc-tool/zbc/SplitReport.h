//===- SplitReport.h - the `zbc split` report ---------------------*- C++ -*-===//
//
// Per stage of a split zb.pipeline: F, B and W FLOPs (matmul and
// elementwise apart), the activation bytes a microbatch holds after F and
// after B, and the stage's parameter bytes.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_SPLITREPORT_H
#define ZBC_TOOL_SPLITREPORT_H

#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/raw_ostream.h"

namespace zbc::zb {
class PipelineOp;
} // namespace zbc::zb

namespace zbc {
/// Fails (with an error on the stage) when a stage is too large to cost.
mlir::LogicalResult printSplitReport(zb::PipelineOp pipeline,
                                     llvm::raw_ostream &os);
} // namespace zbc

#endif // ZBC_TOOL_SPLITREPORT_H
