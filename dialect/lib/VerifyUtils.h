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

/// Checks that `type` is a tensor zbc can plan memory for: statically
/// shaped, of an element type zb computes in (f16, bf16, f32, f64, i32,
/// i64), with no zero dimension and at most 2^50 bytes
/// (limits::kMaxTensorBytes); `what` names it in the error ("result type").
/// Safe on any type: block arguments reach here unconstrained by ODS.
mlir::LogicalResult verifyTensorSize(mlir::Operation *op, mlir::Type type,
                                     llvm::StringRef what);

} // namespace zbc::zb

#endif // ZBC_DIALECT_LIB_VERIFYUTILS_H
