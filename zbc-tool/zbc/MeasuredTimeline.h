//===- MeasuredTimeline.h - what a run's ranks recorded, merged ---*- C++ -*-===//
//
// The ranks' trace files (Note [Timelines] in runtime/src/Timeline.h) read
// back and put side by side: one Chrome/Perfetto trace with three tracks
// per rank (computes, transfers, copies of offloaded stashes), the measured bubble rate by the simulator's
// definition ((span - busiest rank's compute time) / span, per step, the
// mean over the recorded steps after the run's first), and the last step
// as a SimResult, so that the schedule's picture can be drawn of it.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_MEASUREDTIMELINE_H
#define ZBC_TOOL_MEASUREDTIMELINE_H

#include "zbc/Schedule/Simulator.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace zbc {

struct TraceEvent {
  std::string name, what; // what: F, B, W, BW, R, send, recv, group,
                          // offload, reload, all-reduce, reduce-scatter,
                          // all-gather
  int stage = 0, microbatch = 0;
  double begin = 0, end = 0; // seconds since the start-up barrier
  // A collective's: each member's bytes and its group ("replicas", ...).
  int64_t bytes = 0;
  std::string over;
};

struct MeasuredRun {
  /// Per recorded step (oldest first), per rank, its events.
  std::vector<int64_t> steps;
  std::vector<std::vector<std::vector<TraceEvent>>> events;
  /// The measured bubble rate: the mean over the steps used, and per step.
  double bubbleRate = 0;
  std::vector<double> bubbleRates;
  int stepsUsed = 0;
  /// The last step's computes as a timeline in milliseconds from its start.
  sched::SimResult lastStep;
};

/// Reads DIR/rank0.json ... DIR/rank{ranks-1}.json.
llvm::Expected<MeasuredRun> readMeasuredRun(const std::string &dir, int ranks);

/// Every recorded event, one track for computes, one for transfers and one
/// for copies per rank, in Chrome's trace-event JSON (Perfetto and chrome://tracing read it).
void writeMeasuredTrace(const MeasuredRun &run, llvm::raw_ostream &os);

} // namespace zbc

#endif // ZBC_TOOL_MEASUREDTIMELINE_H
