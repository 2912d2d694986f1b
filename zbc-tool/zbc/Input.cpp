//===- Input.cpp - reading IR files for zbc's subcommands -----------------===//
//
// Input.h's one way in: the zb context and a parser whose errors carry
// file:line:col.
//
//===----------------------------------------------------------------------===//

#include "Input.h"

#include "zbc/Dialect/ZB/ZBDialect.h"
#include "zbc/Support/IRNesting.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

/// Parses and verifies `path`; diagnostics go to stderr with file:line:col.
OwningOpRef<ModuleOp> zbc::parseInputFile(StringRef path, MLIRContext &context,
                                          llvm::SourceMgr &sourceMgr) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(path, &error);
  if (!file) {
    llvm::errs() << "zbc: error: " << error << "\n";
    return {};
  }
  // MLIR's parser recurses per bracket: refuse absurd nesting first.
  if (failed(zbc::checkIRNesting(*file, path)))
    return {};
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, &context);
}

/// A context for the zb dialect whose diagnostics read well on a terminal.
void zbc::setUpContext(MLIRContext &context) {
  context.loadDialect<zbc::zb::ZBDialect>();
  // The located message says what is wrong; the generic form of the op only
  // repeats it less readably.
  context.printOpOnDiagnostic(false);
}

