//===- Launch.h - running a job's launcher and reading how it ended -*- C++ -*-===//
//
// `zbc run` and `zbc profile` start DIR/launch.sh (which execs mpirun) and
// wait for it. A SIGTERM or SIGINT to zbc (kill, timeout, a job scheduler,
// Ctrl-C) is passed on to the launcher, which stops the ranks, and zbc
// waits for it to end: no rank outlives the zbc that started it. Afterwards
// the ranks' status files (Note [Lost ranks] in runtime/src/Watchdog.h)
// say how each ended, and explainJobFailure turns them into one verdict:
// the rank that failed and why, the rank that stopped answering (following
// who waited for whom), ranks lost without a word, a launcher that died,
// and where to resume.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_LAUNCH_H
#define ZBC_TOOL_LAUNCH_H

#include <optional>
#include <string>
#include <vector>

namespace zbc {

/// How a launched job ended.
struct JobEnd {
  int exitCode = 0;       // the launcher's, if it exited
  int launcherSignal = 0; // the signal that killed the launcher, or 0
  int forwardedSignal = 0; // a SIGTERM/SIGINT zbc received and passed on
  std::string error;      // the launcher could not be started
  bool succeeded() const {
    return error.empty() && exitCode == 0 && !launcherSignal &&
           !forwardedSignal;
  }
};

/// Runs argv[0] with `argv`, passing SIGTERM and SIGINT on, until it ends.
JobEnd runLauncher(const std::vector<std::string> &argv);

/// Where a failed training run can resume from: the latest complete
/// checkpoint under its checkpoint directory, else the one it resumed from.
struct ResumeHint {
  std::string checkpointRoot, resumedFrom;
};

/// After a failed job of `processes` processes (`ranks` per replica), whose
/// ranks kept DIR/rankW.status in `statusDir`: prints the verdict to
/// stderr, then, for a training run, the checkpoint to resume from.
void explainJobFailure(const JobEnd &end, const std::string &statusDir,
                       int processes, int ranks,
                       const std::optional<ResumeHint> &training = {});

} // namespace zbc

#endif // ZBC_TOOL_LAUNCH_H
