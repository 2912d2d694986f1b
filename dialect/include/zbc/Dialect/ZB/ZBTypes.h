//===- ZBTypes.h - zb dialect types -------------------------------*- C++ -*-===//
//
// Declares `!zb.token` and the zb enums (InitKind, ComputeKind, Payload).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_ZBTYPES_H
#define ZBC_DIALECT_ZB_ZBTYPES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#include "zbc/Dialect/ZB/ZBEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "zbc/Dialect/ZB/ZBTypes.h.inc"

#endif // ZBC_DIALECT_ZB_ZBTYPES_H
