//===- Watchdog.h - no rank waits forever, and every stop is told -*- C++ -*-===//
//
// Note [Lost ranks]
// A rank that dies (SIGKILL, a crash) says nothing; a rank that hangs says
// nothing either. The ranks around it learn of it in one of two ways:
//  - the launcher (mpirun, srun) sees a process of the job end and
//    terminates the others (SIGTERM): the handler installed here prints,
//    with async-signal-safe writes only, what the rank was doing (its step
//    and the op it was waiting for or running) and exits 1;
//  - a rank waits in one MPI call (a transfer's wait, a collective) longer
//    than --timeout seconds: the watchdog thread prints what it waits for
//    and on which rank, and exits 1, and the launcher then stops the rest.
// Start-up is watched too: a step of it that blocks (a collective whose
// peer never came, a file system that does not answer) ends the rank after
// --timeout seconds, naming the step. A --timeout too large to count in
// nanoseconds means "never".
// The launcher's own death (kill -9 of mpirun) reaches each rank as SIGTERM
// (PR_SET_PDEATHSIG), and the rank says that the launcher died. A SIGTERM or
// SIGINT that another process sent to one rank alone (`kill PID`: the
// sender is not the launcher) is that rank's failure: it says so, naming
// itself and the sender, and the others are then stopped by the launcher.
// With --status-dir DIR each process keeps DIR/rankR.status (R its rank in
// the job: with data parallelism, replica d's pipeline rank r is d P + r):
// "running" from start-up, then "done", "failed: MESSAGE" or "stopped:
// ..." (by the launcher, by another rank's failure). A rank that gave up
// waiting adds a line "waits-for: W" (W the peer's rank in the job, or
// "all" in a collective), and one that finds it was frozen itself (its
// watchdog slept far longer than it asked; or, when the launcher's SIGCONT
// and SIGTERM wake it before its watchdog could say so, the SIGTERM handler
// finds the gap) "frozen: yes", so that `zbc run`
// can follow who waited for whom to the rank that stopped answering
// (Launch.cpp: explainJobFailure). A rank whose status still says
// "running" after the job ended died or hung without a word: `zbc run`
// names it (and the last checkpoint).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_WATCHDOG_H
#define ZBC_RUNTIME_WATCHDOG_H

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

struct zbc_rt_rank;

namespace zbc::rt {

class Watchdog {
public:
  /// Starts the thread and the SIGTERM handler for `rank`, process
  /// `jobRank` of the job (its status file's number).
  void start(zbc_rt_rank *rank, int jobRank);
  /// Stops the thread (at the end of the run).
  void stop();

  /// What the rank waits for now.
  struct Snapshot {
    bool waiting = false;
    int64_t sinceNs = 0;
    int32_t op = -1;
    const char *what = nullptr;
  };

  /// The rank enters a call that may block on a peer (or, at start-up, a
  /// step that may block: a file, a collective); `what` (a static string)
  /// names it when no op of the order does. Returns what it waited for
  /// before, which `leave` restores (waits nest).
  Snapshot enter(const char *what);
  void leave(const Snapshot &outer);

  /// Writes how the rank ends ("done", "failed: ...") to the status file,
  /// if there is one.
  void status(const std::string &text);

  Snapshot snapshot() const;

private:
  void run();

  zbc_rt_rank *rank_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> waitingSinceNs_{0}; // 0: not waiting
  std::atomic<const char *> waitingWhat_{nullptr};
  std::atomic<int32_t> waitingOp_{-1};
};

} // namespace zbc::rt

#endif // ZBC_RUNTIME_WATCHDOG_H
