//===- Deadline.h - a computation under a hard wall-clock deadline -*- C++ -*-===//
//
// Private to passes/lib/Schedule. Some solvers check their clock only
// between phases (CBC 2.10 can run a root-node phase for seconds past its
// limit), so a limit the user gives in seconds cannot be left to them.
// runWithDeadline runs the computation in a child process (fork) that
// writes its result to a pipe, and the parent waits for it until the
// deadline at most: then it kills the child (SIGKILL) and says so. The
// child only computes and writes; it never returns into the caller's code.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_DEADLINE_H
#define ZBC_SCHEDULE_DEADLINE_H

#include <chrono>
#include <functional>
#include <string>

namespace zbc::sched {

enum class DeadlineOutcome {
  Done,   // the child finished in time; `result` holds what it wrote
  Killed, // the deadline passed first: the child was killed, no result
  Failed  // no child (fork or pipe failed) or it died; `result` says why
};

/// Runs `compute` in a child process, whose returned bytes become `result`,
/// waiting until `deadline` at most.
DeadlineOutcome runWithDeadline(std::chrono::steady_clock::time_point deadline,
                                const std::function<std::string()> &compute,
                                std::string &result);

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_DEADLINE_H
