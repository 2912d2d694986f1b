//===- Input.cpp - reading IR files for zbc's subcommands -----------------===//
//
// Input.h's one way in: the zb context, a parser whose errors carry
// file:line:col, and their printer.
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


namespace {
/// The longest source line a diagnostic shows whole (a wide terminal's).
constexpr size_t kLongestShownLine = 160;
} // namespace

zbc::DiagnosticPrinter::DiagnosticPrinter(llvm::SourceMgr &sourceMgr,
                                          MLIRContext *context)
    : SourceMgrDiagnosticHandler(sourceMgr, context) {
  setHandler([this](Diagnostic &diag) { print(diag); });
}

void zbc::DiagnosticPrinter::print(Diagnostic &diag) {
  // The line the diagnostic points at, if it is in a file.
  StringRef line;
  if (auto at = diag.getLocation()->findInstanceOf<FileLineColLoc>())
    if (const llvm::MemoryBuffer *buffer = getBufferForFile(at.getFilename())) {
      StringRef text = buffer->getBuffer();
      unsigned n = at.getLine();
      for (unsigned i = 1; i < n && !text.empty(); ++i)
        text = text.split('\n').second;
      line = text.split('\n').first;
    }
  if (line.size() <= kLongestShownLine) {
    emitDiagnostic(diag);
    return;
  }
  emitDiagnostic(diag.getLocation(), diag.str(), diag.getSeverity(),
                 /*displaySourceLine=*/false);
  os << "  " << line.trim().take_front(kLongestShownLine / 2) << " ... ("
     << line.size() << " characters)\n";
  for (Diagnostic &note : diag.getNotes())
    emitDiagnostic(note.getLocation(), note.str(), note.getSeverity(),
                   /*displaySourceLine=*/false);
}
