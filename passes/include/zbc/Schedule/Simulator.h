//===- Simulator.h - event-driven timing of a schedule ------------*- C++ -*-===//
//
// Runs a ScheduleTable against a Problem's costs: every rank executes its
// actions in order; an action starts once its rank is free and its
// dependencies are done (plus `comm` when they ran on another rank), by the
// one rule of Dependences.h: F(s, j) after F(s-1, j); B or BW(s, j) after
// F(s, j) (or its R, when recomputed) and the input gradient of stage s+1;
// W(s, j) after B(s, j); R(s, j) after F(s, j), taking its rank as long as
// the stage's recompute time (Note [Recomputation as an action]); O and L
// on the rank's copy queues beside its compute (Note [Offload as actions]:
// an O fences the compute action after it, a restored backward waits for
// its L); the vocabulary passes S and T meet at their barriers (Note
// [Vocabulary passes], Problem.h). A data-parallel or tied problem's gradient sums run after the
// last W of their stages, beside the compute (Note [Collectives in the
// simulator], Problem.h).
// It reports the makespan (the longest rank's span, first start to last
// end), two bubble rates and per-rank peak memory and idle time. The
// bubble rate is the busiest rank's, (makespan - m * busiest rank's F+B+W
// per microbatch) / makespan (the Zero Bubble paper's definition, so time
// spent recomputing counts as bubble: it is not the step's work); with
// uneven stages it can be 0 while the other ranks wait, so beside it come
// each rank's idle share, 1 - m * its F+B+W / makespan, and their mean,
// the pipeline's bubble rate: idle over p x makespan, the rate the
// pipeline papers quote against the whole pipeline's time (equal to the
// busiest rank's when the stages are even). A schedule that breaks an invariant, deadlocks (no
// rank can start its next action) or exceeds the activation budget is an error
// that names the rank, the action and the microbatch.
//
// `simulate` checks its inputs itself (Problem::validate, the table's shape
// against the problem, ScheduleTable::verify), since imported schedules
// (parseCSV) reach it without buildSchedule. Memory is a running total per
// rank in that rank's order, so it does not depend on timing; it is checked
// before timing, with a relative tolerance of 1e-9 on the limit for
// round-off. Cost: linear in the number of actions (Simulator.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_SIMULATOR_H
#define ZBC_SCHEDULE_SIMULATOR_H

#include "zbc/Schedule/ScheduleTable.h"

namespace zbc::sched {

struct TimedAction {
  Action action;
  double start, end;
};

struct SimResult {
  std::vector<std::vector<TimedAction>> timeline; // per rank, in order
  double makespan = 0;
  double bubbleRate = 0;          // the busiest rank's
  double pipelineBubbleRate = 0;  // idle over p x makespan
  std::vector<double> idleShare;  // per rank: 1 - its work / makespan
  std::vector<double> peakMemory; // per rank, on the device
  /// Per rank, what offloaded microbatches hold in host memory at most;
  /// empty when nothing is offloaded (Note [Offload as actions]).
  std::vector<double> peakHostMemory;
  std::vector<double> idle;       // per rank: span minus busy time
  /// Note [Collectives in the simulator]: how much later the step ends
  /// because of collectives the cool-down does not hide, and per rank the
  /// time its collectives take.
  double exposedCommunication = 0;
  std::vector<double> communication;
};

llvm::Expected<SimResult> simulate(const Problem &problem,
                                   const ScheduleTable &table);

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_SIMULATOR_H
