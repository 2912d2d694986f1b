//===- ZBOps.h - zb dialect operations ----------------------------*- C++ -*-===//
//
// Declares the zb ops (model level and schedule level). Generated from
// ZBOps.td; verifiers and helpers live in dialect/lib/ZBOps.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_ZBOPS_H
#define ZBC_DIALECT_ZB_ZBOPS_H

// The generated op classes need these before they are included.
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"

#include "zbc/Dialect/ZB/ZBDialect.h"
#include "zbc/Dialect/ZB/ZBTypes.h"

namespace zbc::zb {
class LossOp;
class PhaseOp;
class YieldOp;
} // namespace zbc::zb

#include "zbc/Dialect/ZB/ZBInterfaces.h.inc"

#define GET_OP_CLASSES
#include "zbc/Dialect/ZB/ZBOps.h.inc"

#endif // ZBC_DIALECT_ZB_ZBOPS_H
