//===- DataBounds.h - the range of a model's integer data --------*- C++ -*-===//
//
// Integer data (token indices, class labels, positions) must be valid for
// the ops that read it, so its range is a property of the IR: the vocab of
// an embedding that reads the tensor as indices, the class count of a
// cross-entropy that reads it as labels, the max_positions of a rope that
// reads it as positions, the row length of an attention that reads it as
// document ids (a row holds at most that many documents, numbered from 0).
// (The labels the loss counts may also hold its ignore_index: that is
// CountedLabels.h's.) One rule, read by the reference interpreter's data
// (test/lib/Interpreter/Init.cpp), by the code generator's data tables, so
// that both draw the same values, and by `zbc run`'s check of a data file.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_DATABOUNDS_H
#define ZBC_DIALECT_ZB_DATABOUNDS_H

#include "zbc/Dialect/ZB/ZBOps.h"

#include <cstdint>

namespace zbc::zb {

/// The exclusive upper bound for integer data flowing into `roots`: the
/// smallest vocab or class count among the ops that read it as indices or
/// labels, followed through zb.cut and phase keys (F.I / B.I within a
/// stage, out.I into the next stage's in.I); 2 if there is none.
int64_t indexDataBound(llvm::ArrayRef<mlir::Value> roots);

/// The block arguments, in every phase of `stage`, bound to `key`.
void appendArgsWithKey(StageOp stage, llvm::StringRef key,
                       llvm::SmallVectorImpl<mlir::Value> &out);

/// The bound of data `key` ("input.tokens", "label.targets") of a pipeline:
/// its readers in every stage that declares it.
int64_t indexDataBound(PipelineOp pipeline, llvm::StringRef key);


} // namespace zbc::zb

#endif // ZBC_DIALECT_ZB_DATABOUNDS_H
