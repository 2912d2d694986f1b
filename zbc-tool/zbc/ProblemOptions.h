//===- ProblemOptions.h - the scheduling problem from the command line -*- C++ -*-===//
//
// Shared by `zbc schedule` and `zbc verify` (ProblemOptions.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_PROBLEMOPTIONS_H
#define ZBC_TOOL_PROBLEMOPTIONS_H

#include "zbc/Schedule/Problem.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>

namespace zbc {

/// What an imported CSV says of the problem, for the sizes the command line
/// and the cost file leave out.
struct ImportShape {
  std::optional<int64_t> ranks, microbatches, virtualStages;
};
/// The rows and cells of a CSV (and --placement) as sizes.
ImportShape inferImportShape(llvm::StringRef csv);

/// The problem from --cost-file, then the command line, then `inferred`;
/// validated (Problem::validate).
llvm::Expected<sched::Problem> readProblem(const ImportShape &inferred = {});

/// The unit of readProblem's times, for a picture's axis: "ms" when they
/// come from a cost file (zbc profile writes milliseconds), else "" (--cost
/// and the defaults are in the user's own unit).
llvm::StringRef problemTimeUnit();

/// The placement of an imported CSV: --placement, or linear (interleaved
/// with several stages per rank).
llvm::Expected<sched::Placement> importPlacement(const sched::Problem &problem);

} // namespace zbc

#endif // ZBC_TOOL_PROBLEMOPTIONS_H
