//===- ProgramTable.h - a zb.program's compute order as a table --*- C++ -*-===//
//
// The bridge between the schedule level of the IR and the schedule library,
// both ways. Into the IR: a ScheduleTable as a compute-only zb.program
// (`zb-schedule`, and `zbc compile --schedule-file` for a compute-only CSV),
// and a sched::Program, transfers and groups included, as each rank's body
// (`zb-insert-p2p`, and a compute+comms CSV). Out of it: a program's
// zb.compute ops as a ScheduleTable, so the library's checks
// (ScheduleTable::verify, simulate) run on hand-written programs too (`zbc
// check`); and the whole program as a sched::Program for the proof
// (Program.h, zb-verify-schedule).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_ANALYSIS_PROGRAMTABLE_H
#define ZBC_ANALYSIS_PROGRAMTABLE_H

#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Schedule/Program.h"
#include "zbc/Schedule/ScheduleTable.h"

#include "llvm/ADT/StringMap.h"

namespace zbc {

/// The one conversion between the IR's and the library's F/B/W/BW/R kind.
zb::ComputeKind toComputeKind(sched::Kind kind);
sched::Kind toScheduleKind(zb::ComputeKind kind);

/// The schedule action `op` stands for: a zb.compute's kind, or O for a
/// zb.offload and L for a zb.reload; none for a transfer or a group.
std::optional<sched::Action> actionOf(mlir::Operation *op);

/// Each rank's zb.compute ops and stash copies, in order (an O at the first
/// op that waits for it: Note [Offload in the IR]), with the program's placement and
/// microbatch count (transfers are not part of a table).
sched::ScheduleTable tableOfProgram(zb::ProgramOp program);

/// A zb.program as the schedule library sees it, and the op behind each of
/// its ops, for located diagnostics.
struct ProgramModel {
  sched::Program program;
  std::vector<std::vector<mlir::Operation *>> ops; // [rank][index]
  /// The IR type behind each type the program spells.
  llvm::StringMap<mlir::Type> types;
};

/// The messages each stage boundary carries, from the pipeline's stage
/// interface: the `out.*` keys F yields and the `d_in.*` keys B (or BW)
/// yields, with their types.
void setMessagesFromPipeline(ProgramModel &model, zb::PipelineOp pipeline);

/// Reads `program`. The messages of each boundary come from `pipeline` when
/// given, else from the keys its transfers name.
ProgramModel modelOfProgram(zb::ProgramOp program, zb::PipelineOp pipeline);

/// Whether `op` is a collective (zb.all_reduce, zb.reduce_scatter,
/// zb.all_gather, and the value collectives).
bool isCollective(mlir::Operation *op);
/// Whether `op` is a collective of a microbatch's values (zb.broadcast,
/// zb.reduce: Note [Value collectives] in zbc/Schedule/Program.h).
bool isValueCollective(mlir::Operation *op);
/// The parameters collective `op` moves (none for another op).
llvm::SmallVector<llvm::StringRef> collectiveParamsOf(mlir::Operation *op);

/// The ranks of `program` holding each parameter that stages on more than
/// one rank hold (a tied embedding and head), by its "tied:NAME" group
/// (Note [Collective groups]), ascending.
std::map<std::string, std::vector<int>> tiedHoldersOf(zb::PipelineOp pipeline,
                                                      zb::ProgramOp program);

/// The zb.pipeline a program names in its `pipeline` attribute, or null.
zb::PipelineOp pipelineOfProgram(zb::ProgramOp program);
/// The program scheduled for `pipeline` in its module (a user's, or an
/// earlier run's), or null.
zb::ProgramOp programOfPipeline(zb::PipelineOp pipeline);

/// A compute-only zb.program of `table` for `pipeline`, built after it: one
/// zb.rank per row, the computes in order, each waiting for the products
/// its rank made that it needs (Dependences.h; a product of another rank is
/// zb-insert-p2p's to bring). `schedule` names where the order came from (a
/// registered schedule, a file), `optimizer` the update the ranks run.
zb::ProgramOp buildComputeProgram(zb::PipelineOp pipeline,
                                  const sched::ScheduleTable &table,
                                  llvm::StringRef name,
                                  llvm::StringRef schedule,
                                  llvm::StringRef optimizer);

/// Rewrites each rank's body of `program` as `model.program` orders it:
/// its computes (the same, in the same order: they keep their locations),
/// sends, recvs and groups, with their dependences as tokens; a transfer
/// takes the location of the compute it serves. `model.types` gives the
/// IR type of each message type.
void writeRankBodies(zb::ProgramOp program, const ProgramModel &model);

} // namespace zbc

#endif // ZBC_ANALYSIS_PROGRAMTABLE_H
