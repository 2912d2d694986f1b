//===- CostFile.h - the JSON cost file of `zbc schedule` ----------*- C++ -*-===//
//
// A cost file describes a scheduling problem (Problem.h) in JSON:
//
//   {"ranks": 4, "microbatches": 8, "virtual": 1, "comm": 0.1,
//    "activation_budget": 8, "F": [1, 1, 1, 1.2], "B": 1, "W": 0.5,
//    "M_B": 1, "M_W": 0.5}
//
// Every key is optional; an unknown key is an error. `model` and
// `model_hash` (strings; zbc profile writes them) name the model the costs
// were measured on. `ranks`, `microbatches`
// and `virtual` are integers in [1, 2^12], [1, 2^20] and [1, 2^13]
// (zbc/Support/Limits.h); `comm` a number in [0, 1e30];
// `activation_budget` (Note [Two memory limits]) one too (0: none), or
// "none" or "default" (the schedule's own, as when left out); the key's
// old name `mem_limit` is refused with its new one; `F`, `B`, `W`, `R`
// (recomputation's time; left out: F's), `M_B`, `M_W` and `M_keep` (what a
// recomputed F keeps; left out: 0) and `M_offload` (what O moves to host
// memory; left out: all of M_B) one number (every stage) or a list with
// one per stage (Note [Recomputation as an action], Note [Offload as
// actions], Problem.h); `copy_bandwidth` one number in [0, 1e30] (memory
// units per time unit, each way; left out: 0, no link);
// `collective_bandwidth` one number in [0, 1e30] (bytes a collective moves
// per time unit on each rank: Note [Collectives in the simulator],
// Problem.h; left out: 0, collectives not timed). A field of the
// wrong type is an error
// naming the key, the type found and the type expected; the document may nest
// at most limits::kMaxJSONDepth deep (the reader recurses). Ranges of costs
// against each other (F > 0, the list length) are Problem::validate's and
// the command line's, since flags may override the file.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_COSTFILE_H
#define ZBC_SCHEDULE_COSTFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zbc::sched {

struct CostFile {
  std::optional<int64_t> ranks, microbatches, virtualStages;
  std::optional<double> comm, activationBudget, copyBandwidth,
      collectiveBandwidth;
  /// Empty: not given; one value: every stage; else one per stage.
  std::vector<double> F, B, W, R, memB, memW, memKeep, memOffload;
  /// Measured costs (zbc profile) name the model they were measured on:
  /// its name and zb::modelHashOf; a pipeline of another model refuses
  /// them.
  std::optional<std::string> model, modelHash;
};

/// Parses `text`; `name` (the file's path) starts every message.
llvm::Expected<CostFile> parseCostFile(llvm::StringRef text,
                                       llvm::StringRef name);

/// Fails with "NAME:LINE:COL: ..." if `text` nests arrays and objects deeper
/// than `maxDepth` (strings are skipped), before a recursive reader sees it.
llvm::Error checkJSONDepth(llvm::StringRef text, llvm::StringRef name,
                           int maxDepth);

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_COSTFILE_H
