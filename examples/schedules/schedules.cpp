//===- schedules.cpp - two schedules of one's own, as a zbc plugin --------===//
//
// Written with zbc's schedule DSL (zbc/DSL/Schedule.h) and built against
// the installed package (CMakeLists.txt beside this file). Loaded with
//
//   zbc schedule --schedule-plugin libzbc-example-schedules.so \
//       --schedule deferred-w-1f1b --ranks 4 --microbatches 8
//   zbc run model.mlir --schedule-plugin libzbc-example-schedules.so \
//       --schedule looped-bfs --ranks 2 --microbatches 4 --steps 10
//
// they are schedules like zbc's own: simulated, drawn, exported as CSV,
// compiled, proven and trained.
//
//===----------------------------------------------------------------------===//

#include "zbc/DSL/Schedule.h"

using zbc::dsl::ScheduleBuilder;
using zbc::dsl::ScheduleDefinition;

namespace {

/// 1F1B with the backward split into B and W and every W deferred into the
/// cool-down: a variant of an existing schedule. It keeps 1F1B's order of
/// F and B, so its activations are 1F1B's, but each rank's W wait at the
/// end, where they fill the cool-down bubble of the ranks that finish
/// their B early; and the weight gradients stay alive until then.
void writeDeferredW(ScheduleBuilder &s) {
  for (int r = 0; r < s.ranks(); ++r) {
    s.warmUp(r, s.ranks() - r - 1); // F of the first p - r - 1 microbatches
    s.steady(r);                    // then one F, one B, until every F
    s.coolDown(r);                  // the B left
    s.fillW(r);                     // every W, deferred to the end
  }
}

/// Breadth-first pipeline parallelism (Lamy-Poirier, "Breadth-First
/// Pipeline Parallelism", MLSys 2023; PyTorch's ScheduleLoopedBFS): on the
/// interleaved placement, each rank runs every microbatch through its first
/// stage, then its next, ..., then the fused backwards in reverse: one
/// loop over the stages, the whole batch at a time.
void writeLoopedBFS(ScheduleBuilder &s) {
  for (int r = 0; r < s.ranks(); ++r) {
    std::vector<int> stages = s.stagesOf(r);
    for (int stage : stages)
      for (int j = 0; j < s.microbatches(); ++j)
        s.F(r, stage, j);
    for (auto it = stages.rbegin(); it != stages.rend(); ++it)
      for (int j = 0; j < s.microbatches(); ++j)
        s.BW(r, *it, j);
  }
}

} // namespace

ZBC_SCHEDULE_PLUGIN {
  if (llvm::Error e = zbc::dsl::registerSchedule(
          {"deferred-w-1f1b",
           "1F1B with the backward split and every W deferred into the "
           "cool-down",
           "a variant of Narayanan et al.'s 1F1B (examples/schedules)",
           zbc::sched::Placement::Linear, writeDeferredW}))
    return e;
  return zbc::dsl::registerSchedule(
      {"looped-bfs",
       "breadth-first: every microbatch through each local stage in turn, "
       "then the backwards in reverse",
       "Lamy-Poirier, Breadth-First Pipeline Parallelism, MLSys 2023 "
       "(PyTorch's ScheduleLoopedBFS)",
       zbc::sched::Placement::Interleaved, writeLoopedBFS});
}
