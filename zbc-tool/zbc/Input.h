//===- Input.h - reading IR files for zbc's subcommands ------------*- C++ -*-===//
//
// One way in for every subcommand that reads a .mlir file: the zb context,
// a parser whose errors carry file:line:col, and the printer of those
// errors (Input.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_INPUT_H
#define ZBC_TOOL_INPUT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

namespace zbc {

/// A context for the zb dialect whose diagnostics read well on a terminal.
void setUpContext(mlir::MLIRContext &context);

/// Parses and verifies `path` (refusing absurd nesting first); errors go to
/// the context's diagnostics, or stderr for a missing file; null on error.
mlir::OwningOpRef<mlir::ModuleOp> parseInputFile(llvm::StringRef path,
                                                 mlir::MLIRContext &context,
                                                 llvm::SourceMgr &sourceMgr);

/// MLIR's printer of diagnostics (file:line:col, the source line, a
/// caret), except that a source line too long to read is cut: an imported
/// model's `zb.model @NAME attributes {hf_config = "..."}` line holds the
/// whole config.json, 600 to 900 characters that would bury the message.
/// The cut line still names the op and the model; the place is
/// file:line:col.
class DiagnosticPrinter : public mlir::SourceMgrDiagnosticHandler {
public:
  DiagnosticPrinter(llvm::SourceMgr &sourceMgr, mlir::MLIRContext *context);

private:
  void print(mlir::Diagnostic &diag);
};

} // namespace zbc

#endif // ZBC_TOOL_INPUT_H
