//===- Passes.h - zbc compiler passes ----------------------------*- C++ -*-===//
//
// Declares the zbc passes (generated from Passes.td) and registerZBPasses().
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_PASSES_PASSES_H
#define ZBC_PASSES_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace zbc {
namespace zb {
class ProgramOp;
} // namespace zb

#define GEN_PASS_DECL
#include "zbc/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "zbc/Passes/Passes.h.inc"

/// What zb-verify-schedule proved of a program.
struct ScheduleProof {
  int ranks = 0;
  size_t ops = 0;
  /// Per rank; empty when the program names no pipeline (no tensors to
  /// count).
  std::vector<int64_t> peakBytes;
};

/// zb-verify-schedule on one program, for tools that report the figures
/// (`zbc verify`, `zbc check`): errors go to the program's diagnostics.
/// `memoryLimit` (bytes per rank, 0: none) overrides the program's own.
mlir::LogicalResult verifyScheduleProgram(zb::ProgramOp program,
                                          ScheduleProof *proof = nullptr,
                                          int64_t memoryLimit = 0);

} // namespace zbc

#endif // ZBC_PASSES_PASSES_H
