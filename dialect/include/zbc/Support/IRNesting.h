//===- IRNesting.h - refuse IR nested deeper than MLIR can parse -*- C++ -*-===//
//
// Shared by `zbc` and `zbc-opt`: MLIR's parser recurses once per bracket, so
// a file nested tens of thousands deep overflows its stack. This checks the
// text first (NestingDepth.h) and prints a located error instead.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_IRNESTING_H
#define ZBC_TOOL_IRNESTING_H

#include "zbc/Support/Limits.h"
#include "zbc/Support/NestingDepth.h"

#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace zbc {

inline mlir::LogicalResult checkIRNesting(const llvm::MemoryBuffer &buffer,
                                          llvm::StringRef path) {
  llvm::StringRef text = buffer.getBuffer();
  std::optional<TextPosition> at =
      findExcessNesting(std::string_view(text.data(), text.size()),
                        limits::kMaxIRDepth, NestingSyntax::IR);
  if (!at)
    return mlir::success();
  llvm::errs() << path << ":" << at->line << ":" << at->column
               << ": error: brackets nested deeper than "
               << limits::kMaxIRDepth
               << " levels; zbc does not parse IR nested this deep\n";
  return mlir::failure();
}

} // namespace zbc

#endif // ZBC_TOOL_IRNESTING_H
