//===- broken.cpp - schedules that zbc must refuse, as a plugin -----------===//
//
// Built out of tree against the installed package by out-of-tree.sh: each
// must stop before code generation with a diagnostic naming the rank, the
// action and the microbatch.
//
//===----------------------------------------------------------------------===//

#include "zbc/DSL/Schedule.h"

using zbc::dsl::ScheduleBuilder;

namespace {

/// Rank 1 runs a backward before its forward (the table's rules).
void writeBackwardFirst(ScheduleBuilder &s) {
  for (int r = 0; r < s.ranks(); ++r) {
    int stage = s.stagesOf(r).front();
    for (int j = 0; j < s.microbatches(); ++j) {
      if (r == 1) {
        s.BW(r, stage, j).F(r, stage, j);
      } else {
        s.F(r, stage, j).BW(r, stage, j);
      }
    }
  }
}

/// Each rank's order is legal alone, but rank 1 starts with microbatch 1
/// while rank 0 finishes microbatch 0 first: they wait for each other.
void writeCrossedWaits(ScheduleBuilder &s) {
  s.F(0, 0, 0).BW(0, 0, 0).F(0, 0, 1).BW(0, 0, 1);
  s.F(1, 1, 1).F(1, 1, 0).BW(1, 1, 0).BW(1, 1, 1);
}

} // namespace

ZBC_SCHEDULE_PLUGIN {
  if (llvm::Error e = zbc::dsl::registerSchedule(
          {"backward-first", "a backward before its forward", "a test",
           zbc::sched::Placement::Linear, writeBackwardFirst}))
    return e;
  return zbc::dsl::registerSchedule({"crossed-waits",
                                     "two ranks waiting for each other",
                                     "a test", zbc::sched::Placement::Linear,
                                     writeCrossedWaits});
}
