//===- ZBDialect.cpp - zb dialect registration ----------------------------===//
//
// Registers the zb ops and types and pulls in the generated definitions of
// the dialect, its types and its enums.
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/ZBDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <string>
#include <vector>

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

/// The parse hook of a zb op that does not exist: a located error naming
/// the ones that do. (A function, not a lambda: ParseOpHook does not own
/// what it calls.)
static ParseResult refuseUnknownOp(OpAsmParser &parser,
                                   OperationState &state) {
  std::vector<std::string> names;
  for (RegisteredOperationName op :
       state.getContext()->getRegisteredOperationsByDialect(
           ZBDialect::getDialectNamespace()))
    names.push_back(op.getStringRef().str());
  llvm::sort(names);
  // (The parser puts "custom op 'zb.NAME'" in front.)
  return parser.emitError(parser.getNameLoc())
         << "is not a zb op; the zb ops are: " << llvm::join(names, ", ")
         << " (dialect/docs/ZB.md, The op set)";
}

std::optional<Dialect::ParseOpHook>
ZBDialect::getParseOperationHook(StringRef opName) const {
  if (std::optional<ParseOpHook> known = Dialect::getParseOperationHook(opName))
    return known;
  return ParseOpHook(refuseUnknownOp);
}
