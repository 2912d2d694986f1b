//===- IRHelpers.h - small IR helpers of the interpreter ---------*- C++ -*-===//
//
// Private to dialect/lib/Interpreter. The phase key of a leaf op lives with
// the other key rules (zb::getLeafKey, PhaseKeys.h).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_LIB_INTERPRETER_IRHELPERS_H
#define ZBC_LIB_INTERPRETER_IRHELPERS_H

#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Interpreter/Tensor.h"

namespace zbc::interp::detail {

/// The static shape of a tensor type (the dialect allows no other).
inline Shape getShape(mlir::Type type) {
  auto tensor = llvm::cast<mlir::RankedTensorType>(type);
  return Shape(tensor.getShape().begin(), tensor.getShape().end());
}

} // namespace zbc::interp::detail

#endif // ZBC_LIB_INTERPRETER_IRHELPERS_H
