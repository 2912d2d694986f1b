//===- Launch.cpp - running a job's launcher and reading how it ended ----===//
//
// The launcher runs in a process group of its own, so that a Ctrl-C at the
// terminal reaches zbc alone and is passed on once (mpirun stops the ranks
// on the first SIGINT or SIGTERM it gets). If the launcher has not ended
// 20 s after that, its whole group is killed.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"

#include "zbc/contracts/CheckpointLayout.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <optional>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

using namespace llvm;
using namespace zbc;

namespace {

volatile sig_atomic_t gForwarded = 0;
volatile pid_t gChild = 0;

void forward(int signal) {
  gForwarded = signal;
  if (gChild > 0)
    ::kill(gChild, signal);
}

std::string signalName(int signal) {
  switch (signal) {
  case SIGTERM:
    return "SIGTERM";
  case SIGINT:
    return "SIGINT";
  case SIGKILL:
    return "SIGKILL";
  case SIGHUP:
    return "SIGHUP";
  case SIGSEGV:
    return "SIGSEGV";
  case SIGABRT:
    return "SIGABRT";
  default:
    return formatv("signal {0}", signal).str();
  }
}

/// How one process of the job ended, from its status file.
struct RankStatus {
  enum State { Missing, Running, Done, Failed, Stopped } state = Missing;
  std::string message;
  int waitsFor = -1;       // the job rank it gave up waiting for
  bool waitedForAll = false; // it gave up waiting in a collective
  bool frozen = false;     // it found that it was itself stopped
};

RankStatus readStatus(const std::string &path) {
  RankStatus status;
  ErrorOr<std::unique_ptr<MemoryBuffer>> file = MemoryBuffer::getFile(path);
  if (!file)
    return status;
  StringRef text = (*file)->getBuffer();
  auto [first, rest] = text.split('\n');
  first = first.trim();
  if (first.empty() || first == "running")
    status.state = RankStatus::Running;
  else if (first == "done")
    status.state = RankStatus::Done;
  else if (first.consume_front("failed: "))
    status.state = RankStatus::Failed;
  else if (first.consume_front("stopped: "))
    status.state = RankStatus::Stopped;
  status.message = first.str();
  while (!rest.empty()) {
    StringRef line;
    std::tie(line, rest) = rest.split('\n');
    int peer;
    if (line.trim() == "waits-for: all")
      status.waitedForAll = true;
    else if (line.consume_front("waits-for: ") &&
             !line.trim().getAsInteger(10, peer))
      status.waitsFor = peer;
    else if (line.trim() == "frozen: yes")
      status.frozen = true;
  }
  return status;
}

} // namespace

JobEnd zbc::runLauncher(const std::vector<std::string> &argv) {
  JobEnd end;
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  struct sigaction action, oldTerm, oldInt;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = forward;
  sigemptyset(&action.sa_mask);
  gForwarded = 0;
  ::sigaction(SIGTERM, &action, &oldTerm);
  ::sigaction(SIGINT, &action, &oldInt);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = 0;
  int spawned = ::posix_spawn(&pid, args[0], nullptr, &attributes, args.data(),
                              environ);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    end.error = formatv("cannot start '{0}': {1}", argv[0],
                        std::strerror(spawned))
                    .str();
  } else {
    gChild = pid;
    if (gForwarded) // a signal came while it was being started
      ::kill(pid, gForwarded);
    std::optional<std::chrono::steady_clock::time_point> forwardedAt;
    int status = 0;
    while (true) {
      pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid || (done < 0 && errno != EINTR))
        break;
      if (gForwarded && !forwardedAt)
        forwardedAt = std::chrono::steady_clock::now();
      if (forwardedAt &&
          std::chrono::steady_clock::now() - *forwardedAt >
              std::chrono::seconds(20)) {
        ::kill(-pid, SIGKILL); // the launcher's group: it and its ranks
        ::kill(pid, SIGKILL);
        forwardedAt = std::chrono::steady_clock::now() + std::chrono::hours(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    gChild = 0;
    if (WIFEXITED(status))
      end.exitCode = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
      end.launcherSignal = WTERMSIG(status);
  }
  ::sigaction(SIGTERM, &oldTerm, nullptr);
  ::sigaction(SIGINT, &oldInt, nullptr);
  end.forwardedSignal = gForwarded;
  return end;
}

void zbc::explainJobFailure(const JobEnd &end, const std::string &statusDir,
                            int processes, int ranks,
                            const std::optional<ResumeHint> &training) {
  std::vector<RankStatus> statuses;
  for (int w = 0; w < processes; ++w)
    statuses.push_back(
        readStatus(formatv("{0}/rank{1}.status", statusDir, w).str()));
  auto name = [&](int w) {
    return formatv("rank {0}{1}", w % ranks,
                   processes > ranks ? formatv(" of replica {0}", w / ranks).str()
                                     : std::string())
        .str();
  };
  bool anyStarted = false;
  for (const RankStatus &s : statuses)
    anyStarted |= s.state != RankStatus::Missing;

  if (!end.error.empty()) {
    errs() << "zbc: error: " << end.error << "\n";
  } else if (end.forwardedSignal) {
    errs() << "zbc: stopped by " << signalName(end.forwardedSignal)
           << ": passed on to the launcher, which stopped the ranks (their "
              "messages above)\n";
  } else if (end.launcherSignal) {
    // Not sent by zbc: the launcher itself was killed.
    errs() << "zbc: error: the launcher (mpirun) was killed by "
           << signalName(end.launcherSignal)
           << "; the ranks ended with it\n";
  } else if (!anyStarted) {
    errs() << "zbc: error: no rank started (the launcher's message above)\n";
  } else {
    // The verdict: the rank that stopped answering, if ranks timed out
    // waiting: one that found it was frozen itself; else follow who waited
    // for whom to a rank that waited for no one; else, when ranks gave up
    // in a collective, the ranks that never reached it. Otherwise the first
    // rank that failed with a message of its own.
    std::optional<int> culprit, witness;
    for (int w = 0; w < processes && !culprit; ++w)
      if (statuses[w].frozen)
        culprit = w;
    for (int w = 0; w < processes && !culprit; ++w) {
      if (statuses[w].waitsFor < 0)
        continue;
      int at = w, hops = 0;
      while (statuses[at].waitsFor >= 0 && statuses[at].waitsFor < processes &&
             hops++ < processes) {
        witness = at;
        at = statuses[at].waitsFor;
      }
      culprit = at;
    }
    std::vector<int> absent; // from the collective the others waited in
    std::optional<int> waiter;
    for (int w = 0; w < processes; ++w)
      if (statuses[w].waitedForAll && !waiter)
        waiter = w;
    if (!culprit && waiter)
      for (int w = 0; w < processes; ++w)
        if (!statuses[w].waitedForAll && statuses[w].state != RankStatus::Failed)
          absent.push_back(w);
    if (culprit && witness && statuses[*culprit].state != RankStatus::Failed) {
      errs() << "zbc: error: " << name(*culprit)
             << " stopped answering (hung, stopped or too slow): "
             << statuses[*witness].message << "\n";
    } else if (!absent.empty() && absent.size() < static_cast<size_t>(processes)) {
      std::string who;
      for (int w : absent)
        who += (who.empty() ? "" : ", ") + name(w);
      errs() << "zbc: error: " << who << " stopped answering (hung, stopped "
             << "or too slow): the other ranks gave up waiting for "
             << (absent.size() == 1 ? "it" : "them")
             << " in a collective: " << statuses[*waiter].message << "\n";
    } else {
      const RankStatus *failure = culprit ? &statuses[*culprit] : nullptr;
      for (const RankStatus &s : statuses)
        if (!failure && s.state == RankStatus::Failed)
          failure = &s;
      if (failure)
        errs() << "zbc: error: " << failure->message << "\n";
    }
    for (int w = 0; w < processes; ++w) {
      if ((culprit && w == *culprit) ||
          std::find(absent.begin(), absent.end(), w) != absent.end())
        continue;
      if (statuses[w].state == RankStatus::Running)
        errs() << "zbc: error: " << name(w)
               << " was lost: it ended without a word (killed, or it "
                  "crashed)\n";
      else if (statuses[w].state == RankStatus::Missing)
        errs() << "zbc: error: " << name(w)
               << " ended before it started (its message, if any, above)\n";
    }
  }
  if (!training)
    return;
  std::string latest = training->checkpointRoot.empty()
                           ? std::string()
                           : rt::latestCheckpoint(training->checkpointRoot);
  if (latest.empty() && !training->resumedFrom.empty())
    latest = rt::latestCheckpoint(training->resumedFrom);
  if (!latest.empty())
    errs() << "zbc: the last checkpoint is '" << latest
           << "': add --resume " << latest << " to continue from it\n";
  else
    errs() << "zbc: no checkpoint to resume from (--checkpoint-every N "
              "writes them)\n";
}
