//===- ProgramTable.h - a zb.program's compute order as a table --*- C++ -*-===//
//
// The bridge between the schedule level of the IR and the schedule library,
// in both directions of the F/B/W kind: `zb-schedule` turns a ScheduleTable
// into a zb.program, and this reads a program's zb.compute ops back into a
// ScheduleTable, so the library's checks (ScheduleTable::verify, simulate)
// run on hand-written programs too (`zbc check`).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_ANALYSIS_PROGRAMTABLE_H
#define ZBC_ANALYSIS_PROGRAMTABLE_H

#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Schedule/ScheduleTable.h"

namespace zbc {

/// The one conversion between the IR's and the library's F/B/W/BW kind.
zb::ComputeKind toComputeKind(sched::Kind kind);
sched::Kind toScheduleKind(zb::ComputeKind kind);

/// Each rank's zb.compute ops, in order, with the program's placement and
/// microbatch count (transfers are not part of a table).
sched::ScheduleTable tableOfProgram(zb::ProgramOp program);

} // namespace zbc

#endif // ZBC_ANALYSIS_PROGRAMTABLE_H
