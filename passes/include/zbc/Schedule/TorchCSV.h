//===- TorchCSV.h - PyTorch's schedule CSV, written and read ------*- C++ -*-===//
//
// torch.distributed.pipelining's schedule CSV (`_dump_csv`/`_load_csv`):
// one row per rank, one action per cell, "[stage][type][microbatch]" with
// global stage indices; type F (forward), I (input gradient: zbc's B), W
// (weight gradient), B (full backward: zbc's BW). Both directions live in
// TorchCSV.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_TORCHCSV_H
#define ZBC_SCHEDULE_TORCHCSV_H

#include "zbc/Schedule/Program.h"
#include "zbc/Schedule/ScheduleTable.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace zbc::sched {

/// One row per rank, one cell per action, no empty cells; rows end with
/// "\n" (Python's csv module writes "\r\n"; both read the same).
/// A table PyTorch's format cannot express (one with recomputation, R, or
/// offload, O and L: PyTorch has no such computation types) is an error,
/// before anything is written.
llvm::Error writeCSV(const ScheduleTable &table, llvm::raw_ostream &os);
/// The same check alone (for the compute+comms format, written from the
/// table's program): the first action PyTorch's format cannot express.
llvm::Error checkCSVExpressible(const ScheduleTable &table);

/// What a CSV's cells say about the problem it was written for, so that
/// `zbc schedule --import` needs no --ranks or --microbatches: the number
/// of rows (trailing blank lines are not rows), and one past the largest
/// stage and microbatch that any well-formed cell names (0 when none).
struct CSVShape {
  int64_t rows = 0, stages = 0, microbatches = 0;
};
CSVShape scanCSV(llvm::StringRef text);

/// Reads a schedule CSV in either of PyTorch's formats: compute only (what
/// writeCSV writes, `_dump_csv(..., "compute_only")`) or compute+comms
/// (`_dump_csv(..., "compute_comms")`: SEND_F, RECV_F, SEND_B and RECV_B
/// cells between the computes; UNSHARD, RESHARD and REDUCE_GRAD are accepted
/// and ignored). This reads the compute order; parseCSVProgram reads the
/// transfers too. Stages are placed by `placement` over `ranks` ranks
/// (PyTorch infers the placement from the file; here a cell whose stage sits
/// on another rank is an error); the microbatch count is the problem's.
/// Empty cells (PyTorch's idle steps) are skipped, and so are blank lines
/// after the last row; "(0F7;7B3)OVERLAP_F_B" pairs are read as their
/// sub-actions in order (the simulator does not model the overlap).
/// Malformed cells, unknown types, out-of-range stages or microbatches,
/// duplicates and row-count mismatches are errors naming the line (rank)
/// and cell; the returned table has passed ScheduleTable::verify and names
/// actions in the CSV's notation (ScheduleTable::Notation::CSV).
llvm::Expected<ScheduleTable> parseCSV(llvm::StringRef text, int ranks,
                                       int numStages, int microbatches,
                                       Placement placement);

/// A CSV as a per-rank program for the proof (Program.h): its computes and,
/// in the compute+comms format, its transfers in the file's order, with the
/// waits PyTorch's runtime has (a compute waits for the recvs its rank posted
/// of what it needs, a send for the compute that made its data). `cells`
/// names, per rank and op, the cell it came from ("line 2 (rank 1), cell 4
/// '1RECV_F0'"), for messages, and `positions` its line and cell (1-based),
/// for locations in the file.
struct CSVProgram {
  Program program;
  std::vector<std::vector<std::string>> cells;
  std::vector<std::vector<std::pair<int, int>>> positions;
  bool hasComms = false;
};
llvm::Expected<CSVProgram> parseCSVProgram(llvm::StringRef text, int ranks,
                                           int numStages, int microbatches,
                                           Placement placement);

/// The compute+comms format: every op of `program` as a cell, in order.
void writeCSVComms(const Program &program, llvm::raw_ostream &os);

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_TORCHCSV_H
