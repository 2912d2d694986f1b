//===- ScheduleFile.h - a schedule of one's own, compiled -------*- C++ -*-===//
//
// `zbc compile --schedule-file FILE` (and `zbc run`): the order comes from a
// file instead of the registry:
//  - a PyTorch schedule CSV (torch.distributed.pipelining's `_dump_csv`,
//    TorchCSV.h) in the compute-only format: its compute order, the
//    transfers inserted as for any schedule (zb-insert-p2p);
//  - the same in the compute+comms format: its computes and its own
//    transfer order, kept (each SEND/RECV carrying every message of its
//    stage boundary, several as one group), then proven like any program:
//    a deadlocking order is refused with the verifier's diagnostic;
//  - a .mlir file holding a zb.program (hand-written, or an earlier
//    compile's program.mlir), taken as it is.
// The model decides the stages: a model without cuts is cut into as many as
// the file places. The file's ranks and microbatches are the run's (options
// that contradict them are refused); a CSV's placement is read from its
// cells (linear, interleaved or V: the one under which every cell's stage
// sits on its row's rank). Computes read from a CSV carry their cell's
// location (FILE:line:cell), so the verifier's diagnostics point into the
// file.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_SCHEDULEFILE_H
#define ZBC_TOOL_SCHEDULEFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace zbc {
namespace zb {
class PipelineOp;
} // namespace zb

struct ScheduleFile {
  enum class Format { CSV, Program };
  Format format = Format::CSV;
  std::string path;
  std::string text; // a CSV's
  /// What the file says of the problem.
  int64_t ranks = 0, stages = 0, microbatches = 0;
  std::optional<std::string> optimizer; // a program's, if it names one
  /// A CSV's: whether it holds transfers (set once it is read whole).
  bool hasComms = false;

  /// "PyTorch CSV (compute only)", "PyTorch CSV (compute+comms)",
  /// "zb.program".
  std::string formatName() const;
};

/// Reads `path` far enough to know the problem it describes (ranks,
/// stages, microbatches, a program's optimizer). Errors name the file.
llvm::Expected<ScheduleFile> readScheduleFile(const std::string &path);

/// Adds `file`'s schedule to `module` as the zb.program of `pipeline`
/// (after it), its optimizer `optimizer`, its `schedule` attribute the
/// file's name. A CSV's cells are checked here (located errors naming the
/// line and cell); every program is proven later, by zb-plan-memory.
llvm::Error addScheduleProgram(mlir::ModuleOp module, zb::PipelineOp pipeline,
                               ScheduleFile &file,
                               llvm::StringRef optimizer);

} // namespace zbc

#endif // ZBC_TOOL_SCHEDULEFILE_H
