//===- Summary.h - human-readable summaries of zb IR -------------*- C++ -*-===//
//
// What `zbc check` prints: for a model, its stages, parameters (shapes, bytes,
// initialisers), inputs, labels, ops per stage and the activations that cross
// each cut; for a schedule program, its ranks, placement and work per rank.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_SUMMARY_H
#define ZBC_TOOL_SUMMARY_H

#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/raw_ostream.h"

namespace zbc::zb {
class ModelOp;
class ProgramOp;
} // namespace zbc::zb

namespace zbc {
void printModelSummary(zb::ModelOp model, llvm::raw_ostream &os);
/// Also checks the program's compute order with the schedule library (every
/// F/B/W present once, in order on each rank, cross-rank dependencies
/// satisfiable) and says what it did not check; fails, with an error at the
/// program, if the order is wrong.
mlir::LogicalResult printProgramSummary(zb::ProgramOp program,
                                        llvm::raw_ostream &os);
} // namespace zbc

#endif // ZBC_TOOL_SUMMARY_H
