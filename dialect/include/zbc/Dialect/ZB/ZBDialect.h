//===- ZBDialect.h - the zb dialect -------------------------------*- C++ -*-===//
//
// Declares the zb dialect class. Include ZBOps.h for the ops and types.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_ZBDIALECT_H
#define ZBC_DIALECT_ZB_ZBDIALECT_H

#include "mlir/IR/Dialect.h"

#include "zbc/Dialect/ZB/ZBDialect.h.inc"

#endif // ZBC_DIALECT_ZB_ZBDIALECT_H
