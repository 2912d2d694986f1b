//===- zbc-opt.cpp - the zbc pass driver ----------------------------------===//
//
// MlirOptMain over the zb dialect and zbc's passes, for lit tests and for
// running pass pipelines by hand: `zbc-opt model.mlir --zb-... | FileCheck`.
// Registers only the dialects that zbc's IR and tests use. The input is read
// here rather than by MlirOptMain, so that IR nested deeper than MLIR's
// recursive parser can take is refused with a located error (IRNesting.h).
//
//===----------------------------------------------------------------------===//

#include "zbc/Support/IRNesting.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

#include "zbc/Codegen/Codegen.h"
#include "zbc/Dialect/ZB/ZBDialect.h"
#include "zbc/Passes/Passes.h"
#include "zbc/Passes/Pipelines.h"

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::DialectRegistry registry;
  registry.insert<zbc::zb::ZBDialect, mlir::emitc::EmitCDialect>();
  // Generic clean-ups (canonicalize, cse, symbol-dce, ...) are useful on zb IR.
  mlir::registerTransformsPasses();
  zbc::registerZBPasses();
  zbc::registerZBCodegenPasses();
  zbc::registerZBPipelines();
  zbc::registerZBCodegenPipelines();

  auto [inputPath, outputPath] =
      mlir::registerAndParseCLIOptions(argc, argv, "zbc pass driver\n", registry);
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputPath, &error);
  if (!input) {
    llvm::errs() << "zbc-opt: error: " << error << "\n";
    return 1;
  }
  if (mlir::failed(zbc::checkIRNesting(*input, inputPath)))
    return 1;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputPath, &error);
  if (!output) {
    llvm::errs() << "zbc-opt: error: " << error << "\n";
    return 1;
  }
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry,
                                     config)))
    return 1;
  output->keep();
  return 0;
}
