//===- Passes.h - zbc compiler passes ----------------------------*- C++ -*-===//
//
// Declares the zbc passes (generated from Passes.td) and registerZBPasses().
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_PASSES_PASSES_H
#define ZBC_PASSES_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace zbc {

#define GEN_PASS_DECL
#include "zbc/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "zbc/Passes/Passes.h.inc"

} // namespace zbc

#endif // ZBC_PASSES_PASSES_H
