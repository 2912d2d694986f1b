//===- ZBDialect.cpp - zb dialect registration ----------------------------===//
//
// Registers the zb ops and types and pulls in the generated definitions of
// the dialect, its types and its enums.
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/ZBDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include "zbc/Dialect/ZB/ZBOps.h"

using namespace mlir;
using namespace zbc::zb;

#include "zbc/Dialect/ZB/ZBDialect.cpp.inc"
#include "zbc/Dialect/ZB/ZBEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "zbc/Dialect/ZB/ZBTypes.cpp.inc"

void ZBDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "zbc/Dialect/ZB/ZBOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "zbc/Dialect/ZB/ZBTypes.cpp.inc"
      >();
}
