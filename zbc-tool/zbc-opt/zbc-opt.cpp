//===- zbc-opt.cpp - the zbc pass driver ----------------------------------===//
//
// MlirOptMain over the zb dialect and zbc's passes, for lit tests and for
// running pass pipelines by hand: `zbc-opt model.mlir --zb-... | FileCheck`.
// Registers only the dialects that zbc's IR and tests use.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include "zbc/Dialect/ZB/ZBDialect.h"
#include "zbc/Passes/Passes.h"
#include "zbc/Passes/Pipelines.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<zbc::zb::ZBDialect>();
  // Generic clean-ups (canonicalize, cse, symbol-dce, ...) are useful on zb IR.
  mlir::registerTransformsPasses();
  zbc::registerZBPasses();
  zbc::registerZBPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "zbc pass driver\n", registry));
}
