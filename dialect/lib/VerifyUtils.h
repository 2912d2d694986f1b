//===- VerifyUtils.h - helpers shared by the zb op verifiers -----*- C++ -*-===//
//
// Private to dialect/lib.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_LIB_VERIFYUTILS_H
#define ZBC_DIALECT_LIB_VERIFYUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

namespace zbc::zb {

/// Checks an op's single result type against the type its shape rule
/// inferred (a failed rule has already reported why).
mlir::LogicalResult
verifyInferredResult(mlir::Operation *op,
                     mlir::FailureOr<mlir::RankedTensorType> inferred);

/// Checks that `type` has no zero dimension and a byte size zbc can plan
/// memory for (at most 2^50); `what` names it in the error ("result type").
mlir::LogicalResult verifyTensorSize(mlir::Operation *op,
                                     mlir::RankedTensorType type,
                                     llvm::StringRef what);

} // namespace zbc::zb

#endif // ZBC_DIALECT_LIB_VERIFYUTILS_H
