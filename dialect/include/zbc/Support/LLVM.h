//===- LLVM.h - Import common LLVM/MLIR names into namespace zbc -*- C++ -*-===//
//
// As CIRCT's Support/LLVM.h does: zbc code says `LogicalResult` and
// `SmallVector` without `mlir::`/`llvm::` prefixes, and no header anywhere
// needs `using namespace mlir;`.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SUPPORT_LLVM_H
#define ZBC_SUPPORT_LLVM_H

#include "mlir/Support/LLVM.h"

namespace zbc {
using mlir::failed;
using mlir::failure;
using mlir::FailureOr;
using mlir::LogicalResult;
using mlir::succeeded;
using mlir::success;

using llvm::ArrayRef;
using llvm::cast;
using llvm::dyn_cast;
using llvm::isa;
using llvm::SmallVector;
using llvm::SmallVectorImpl;
using llvm::StringRef;
using llvm::Twine;
} // namespace zbc

#endif // ZBC_SUPPORT_LLVM_H
