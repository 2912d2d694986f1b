//===- Codegen.h - from a planned zb.program to C++ per rank ------*- C++ -*-===//
//
// convert-zb-to-emitc (Passes.td), the whole lowering as one pipeline, and
// the printing of its files: the code generator's whole interface. Tools
// (zbc compile, zbc-opt) see only this.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_CODEGEN_CODEGEN_H
#define ZBC_CODEGEN_CODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace zbc {

#define GEN_PASS_DECL
#include "zbc/Codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "zbc/Codegen/Passes.h.inc"

/// Registers `--zb-lower-to-cpp` (zb-lower-to-program's options): the
/// whole lowering zbc compile runs, to one emitc.file per rank.
void registerZBCodegenPipelines();

/// The id of rank `rank`'s emitc.file: "rank0", ...
std::string rankFileId(int rank);

/// Prints rank `rank`'s emitc.file of `module` (the output of
/// convert-zb-to-emitc) as C++ (emitc::translateToCpp).
mlir::LogicalResult printRankFile(mlir::ModuleOp module, int rank,
                                  llvm::raw_ostream &os);

} // namespace zbc

#endif // ZBC_CODEGEN_CODEGEN_H
