//===- Export.h - schedules in and out: table, JSON, SVG, traces, CSV -----===//
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
//           B = full backward (our BW))
// and reading a CSV back (bring your own schedule) for simulation.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_EXPORT_H
#define ZBC_SCHEDULE_EXPORT_H

#include "zbc/Schedule/Registry.h"

#include "llvm/Support/raw_ostream.h"

namespace zbc::sched {

void writeTable(const Problem &problem, const ScheduleTable &table,
                const SimResult &sim, llvm::raw_ostream &os);
void writeJSON(const Problem &problem, const ScheduleTable &table,
               const SimResult &sim, llvm::raw_ostream &os);
void writeSVG(const Problem &problem, const ScheduleTable &table,
              const SimResult &sim, llvm::raw_ostream &os);
void writeChromeTrace(const Problem &problem, const ScheduleTable &table,
                      const SimResult &sim, llvm::raw_ostream &os);
/// One row per rank, one cell per action ("0F3", "1I2", "1W2", "1B2"), no
/// empty cells; rows end with "\n" (Python's csv module writes "\r\n";
/// both read the same).
void writeCSV(const ScheduleTable &table, llvm::raw_ostream &os);

/// Reads a schedule CSV (the format writeCSV writes, and what PyTorch's
/// _dump_csv writes for compute-only schedules). Stages are placed by
/// `placement` over `ranks` ranks (PyTorch infers the placement from the
/// file; here a cell whose stage sits on another rank is an error); the
/// microbatch count is the problem's. Empty cells (PyTorch's idle steps) are
/// skipped; "(0F7;7B3)OVERLAP_F_B" pairs are read as their sub-actions in
/// order (the simulator does not model the overlap). Malformed cells,
/// unknown types, communication or FSDP ops, out-of-range stages or
/// microbatches, duplicates and row-count mismatches are errors naming the
/// line (rank) and cell; the returned table has passed ScheduleTable::verify.
llvm::Expected<ScheduleTable> parseCSV(llvm::StringRef text, int ranks,
                                       int numStages, int microbatches,
                                       Placement placement);

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_EXPORT_H
