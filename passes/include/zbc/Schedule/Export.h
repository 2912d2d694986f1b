//===- Export.h - schedules out: table, JSON, SVG, traces, CSV ----*- C++ -*-===//
//
// The formats `zbc schedule` writes:
//   table   a human-readable summary and the per-rank order
//   json    makespan, bubble_rate, peak_memory (per rank), and per rank the
//           ordered actions with start and end times
//   svg     the timeline as the papers draw it: ranks as rows, F/B/W
//           coloured, microbatch numbers inside
//   chrome  a Chrome trace (chrome://tracing, Perfetto): one track per rank
//   csv     the per-rank action lists in PyTorch torch.distributed.pipelining's
//           schedule CSV format (one row per rank; "0F3" is stage 0, forward,
//           microbatch 3; I = input gradient (our B), W = weight gradient,
//           B = full backward (our BW)); declared in TorchCSV.h, with the
//           reader (bring your own schedule)
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_EXPORT_H
#define ZBC_SCHEDULE_EXPORT_H

#include "zbc/Schedule/Registry.h"
#include "zbc/Schedule/TorchCSV.h"

#include "llvm/Support/raw_ostream.h"

namespace zbc::sched {

/// `budgetOrigin` (BuiltSchedule::budgetOrigin) says where a limit came
/// from; the table prints it beside a default, the JSON always.
void writeTable(const Problem &problem, const ScheduleTable &table,
                const SimResult &sim, llvm::raw_ostream &os,
                llvm::StringRef budgetOrigin = {});
void writeJSON(const Problem &problem, const ScheduleTable &table,
               const SimResult &sim, llvm::raw_ostream &os,
               llvm::StringRef budgetOrigin = {});
/// `title`, when given, heads the picture's caption (the schedule's name
/// or the file it came from); `timeUnit` labels the time axis ("ms" for a
/// cost file's or a measured run's times, "FLOPs" for the cost model's;
/// none: the costs' own unit, as given).
void writeSVG(const Problem &problem, const ScheduleTable &table,
              const SimResult &sim, llvm::raw_ostream &os,
              llvm::StringRef title = {}, llvm::StringRef timeUnit = {});
void writeChromeTrace(const Problem &problem, const ScheduleTable &table,
                      const SimResult &sim, llvm::raw_ostream &os);
} // namespace zbc::sched

#endif // ZBC_SCHEDULE_EXPORT_H
