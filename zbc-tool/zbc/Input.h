//===- Input.h - reading IR files for zbc's subcommands ------------*- C++ -*-===//
//
// One way in for every subcommand that reads a .mlir file: the zb context
// and a parser whose errors carry file:line:col (Input.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_INPUT_H
#define ZBC_TOOL_INPUT_H

#include "mlir/IR/BuiltinOps.h"
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

} // namespace zbc

#endif // ZBC_TOOL_INPUT_H
