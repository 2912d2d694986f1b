//===- Watchdog.cpp - no rank waits forever, and every stop is told -------===//
//
// Note [Lost ranks] (Watchdog.h).
//
//===----------------------------------------------------------------------===//

#include "Watchdog.h"

#include "Rank.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <limits>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace zbc::rt {
namespace {

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What the SIGTERM handler reads: set once at start-up.
zbc_rt_rank *gRank = nullptr;
Watchdog *gWatchdog = nullptr;
char gStatusPath[4096] = {};

/// Appends to a fixed buffer with no allocation (async-signal-safe).
struct Message {
  char text[1024] = {}; // stays terminated: add stops one short
  size_t size = 0;
  void add(const char *s) {
    while (s && *s && size + 1 < sizeof text)
      text[size++] = *s++;
  }
  void add(int64_t v) {
    char digits[24];
    int n = 0;
    bool negative = v < 0;
    uint64_t u = negative ? uint64_t(-(v + 1)) + 1 : uint64_t(v);
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u);
    if (negative)
      add("-");
    while (n)
      if (size + 1 < sizeof text)
        text[size++] = digits[--n];
      else
        --n;
  }
};

void writeAll(int fd, const char *text, size_t size) {
  while (size) {
    ssize_t n = ::write(fd, text, size);
    if (n <= 0)
      return;
    text += n;
    size -= static_cast<size_t>(n);
  }
}

void writeStatus(const char *text, size_t size) {
  if (!gStatusPath[0])
    return;
  int fd = ::open(gStatusPath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return;
  writeAll(fd, text, size);
  ::close(fd);
}

/// Where the rank is: " in step N while waiting for OP (with rank P)".
void describePlace(Message &m, const zbc_rt_rank *rank, int32_t waitingOp,
                   const char *waitingWhat, bool waiting) {
  const zbc_rt_program &p = *rank->program;
  if (rank->startingUp) {
    m.add(" at start-up");
  } else {
    m.add(rank->evaluating ? " in the evaluation after step " : " in step ");
    m.add(rank->step + 1);
  }
  int32_t op = waiting ? waitingOp : rank->op;
  if (waiting && op < 0 && waitingWhat) {
    m.add(" while waiting in ");
    m.add(waitingWhat);
  } else if (op >= 0 && op < p.op_count) {
    m.add(waiting ? " while waiting for " : " while running ");
    m.add(p.ops[op].name);
    if (p.ops[op].peer >= 0) {
      m.add(" (with rank ");
      m.add(static_cast<int64_t>(p.ops[op].peer));
      m.add(")");
    }
  }
}

/// Says, async-signal-safely, that `by` stopped the rank where it was.
void tellStop(const char *by, const char *why) {
  Watchdog::Snapshot s = gWatchdog->snapshot();
  Message place;
  describePlace(place, gRank, s.op, s.what, s.waiting);
  place.add(why);
  place.add("\n");
  Message m;
  m.add("zbc rank ");
  m.add(static_cast<int64_t>(gRank->program->rank));
  m.add(": error: stopped by ");
  m.add(by);
  m.add(place.text);
  writeAll(2, m.text, m.size);
  Message status;
  status.add("stopped: by ");
  status.add(by);
  status.add(place.text);
  writeStatus(status.text, status.size);
}

/// Says, async-signal-safely, that this rank failed as `m` words it (Note
/// [Lost ranks]): on stderr, and in its status file, with "frozen: yes"
/// where it did not run.
void tellFailed(const Message &m, bool frozen) {
  Message err;
  err.add("zbc rank ");
  err.add(static_cast<int64_t>(gRank->program->rank));
  err.add(": error: ");
  err.add(m.text);
  err.add("\n");
  writeAll(2, err.text, err.size);
  Message status;
  status.add("failed: ");
  status.add(m.text);
  status.add(frozen ? "\nfrozen: yes\n" : "\n");
  writeStatus(status.text, status.size);
}

// When the watchdog thread last woke (it wakes every 100 ms), and how long
// a sleep must last to mean that the process itself did not run: read by
// the SIGTERM handler, so atomics.
std::atomic<int64_t> gWatchdogWokeNs{0};
std::atomic<int64_t> gFrozenAfterNs{0};
// The last gap the watchdog itself woke from, and when it woke: a SIGTERM
// that comes right after (the thread ran first after SIGCONT) still finds it.
std::atomic<int64_t> gGapNs{0}, gGapEndNs{0};

/// A launcher stopping a job sends SIGCONT before SIGTERM (Open MPI does),
/// so a rank frozen by SIGSTOP gets its SIGTERM the moment it runs again,
/// before its watchdog thread has seen the gap. The handler sees it
/// instead: the watchdog has not woken for longer than a frozen process
/// sleeps. Says so (Note [Lost ranks]: "frozen: yes") and returns true.
bool tellIfFrozen() {
  int64_t woke = gWatchdogWokeNs.load(), after = gFrozenAfterNs.load();
  int64_t now = nowNs(), asleep = now - woke;
  if (!woke || !after)
    return false;
  if (asleep <= after) {
    int64_t gapEnd = gGapEndNs.load();
    if (!gapEnd || now - gapEnd >= after)
      return false;
    asleep = gGapNs.load();
  }
  Watchdog::Snapshot s = gWatchdog->snapshot();
  Message m;
  m.add("rank ");
  m.add(static_cast<int64_t>(gRank->program->rank));
  m.add(": this process did not run for ");
  m.add(asleep / 1000000000);
  m.add(".");
  m.add((asleep / 100000000) % 10);
  m.add(" s (stopped by a signal such as SIGSTOP, or starved of CPU)");
  describePlace(m, gRank, s.op, s.what, s.waiting);
  m.add(": its peers will have given up waiting for it");
  tellFailed(m, /*frozen=*/true);
  return true;
}

// The rank's parent when it started (the launcher): a SIGTERM that comes
// when the parent is another process is PR_SET_PDEATHSIG's.
pid_t gLauncher = 0;

/// Whether the launcher is gone (the rank was re-parented).
bool launcherGone() { return gLauncher && ::getppid() != gLauncher; }

void tellLauncherDied() {
  tellStop("its launcher's death",
           ": the launcher (mpirun, srun) was killed, and the job with it");
}

/// A signal sent to this process by a process other than its launcher
/// (`kill PID`, a user's or a supervisor's): this rank was stopped itself,
/// and its peers are stopped because of it (by the launcher, once this
/// rank exits). Says so as a failure naming this rank and the sender (Note
/// [Lost ranks]), so that `zbc run` names it; returns true. The launcher's
/// signals (its pid is the parent's) and the kernel's (a terminal's ^C to
/// the whole process group, si_pid 0) are not this rank's alone.
bool tellIfSignalledAlone(int signal, const siginfo_t *info) {
  if (!info || (info->si_code != SI_USER && info->si_code != SI_QUEUE) ||
      info->si_pid <= 0 || info->si_pid == ::getppid() ||
      info->si_pid == ::getpid())
    return false;
  Watchdog::Snapshot s = gWatchdog->snapshot();
  Message m;
  m.add("rank ");
  m.add(static_cast<int64_t>(gRank->program->rank));
  m.add(" was sent ");
  m.add(signal == SIGTERM  ? "SIGTERM"
        : signal == SIGINT ? "SIGINT"
                           : "a signal");
  m.add(" by process ");
  m.add(static_cast<int64_t>(info->si_pid));
  m.add(" (not the launcher)");
  describePlace(m, gRank, s.op, s.what, s.waiting);
  m.add(": the launcher stops the other ranks");
  tellFailed(m, /*frozen=*/false);
  return true;
}

void onTerminate(int signal, siginfo_t *info, void *) {
  if (launcherGone()) {
    tellLauncherDied();
    ::_exit(1);
  }
  if (tellIfFrozen() || tellIfSignalledAlone(signal, info))
    ::_exit(1);
  // Said at once: a launcher stopping the job follows its SIGTERM with a
  // SIGKILL soon after.
  tellStop("the launcher", ": the job is being stopped (another rank "
                           "failed or was lost, or the job was cancelled)");
  // A launcher killed outright closes its connections before the kernel
  // re-parents its children, so MPI's own SIGTERM (or a SIGPIPE on the
  // rank's output) can come a moment before the parent changes: look for
  // up to 100 ms, and if it went, say so instead.
  for (int i = 0; i < 10; ++i) {
    struct timespec pause = {0, 10 * 1000 * 1000};
    ::nanosleep(&pause, nullptr);
    if (launcherGone()) {
      tellLauncherDied();
      break;
    }
  }
  ::_exit(1);
}

/// MPI may end a rank itself when a peer's connection breaks (exit() from
/// inside a call); unless the rank said how it ended, say where it was.
std::atomic<bool> gEndTold{false};
void onExit() {
  if (!gEndTold.exchange(true))
    tellStop("MPI", ": MPI ended the process (a peer's connection broke)");
}

} // namespace

Watchdog::Snapshot Watchdog::snapshot() const {
  Snapshot s;
  s.sinceNs = waitingSinceNs_.load();
  s.waiting = s.sinceNs != 0;
  s.op = waitingOp_.load();
  s.what = waitingWhat_.load();
  return s;
}

void Watchdog::start(zbc_rt_rank *rank, int jobRank) {
  rank_ = rank;
  gRank = rank;
  gWatchdog = this;
  const std::string &dir = rank->options.statusDir;
  if (!dir.empty()) {
    std::string path = fmt::format("{}/rank{}.status", dir, jobRank);
    if (path.size() < sizeof gStatusPath)
      std::memcpy(gStatusPath, path.c_str(), path.size() + 1);
  }
  writeStatus("running\n", 8);
  std::atexit(onExit);
#ifdef __linux__
  // If the launcher dies (kill -9 of mpirun), the rank hears of it as a
  // SIGTERM instead of training on alone; unless it is dead already.
  gLauncher = ::getppid();
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != gLauncher)
    onTerminate(SIGTERM, nullptr, nullptr);
#endif
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_sigaction = onTerminate; // the sender's pid: tellIfSignalledAlone
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
  // The rank's output goes through the launcher: a write after it died.
  ::sigaction(SIGPIPE, &action, nullptr);
  thread_ = std::thread([this] { run(); });
}

void Watchdog::stop() {
  stopping_ = true;
  if (thread_.joinable())
    thread_.join();
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGPIPE, SIG_DFL);
}

Watchdog::Snapshot Watchdog::enter(const char *what) {
  Snapshot outer = snapshot();
  waitingOp_ = rank_ ? rank_->op : -1;
  waitingWhat_ = what;
  waitingSinceNs_ = nowNs();
  return outer;
}

void Watchdog::leave(const Snapshot &outer) {
  waitingSinceNs_ = 0; // first: the thread never sees a half-restored wait
  waitingOp_ = outer.op;
  waitingWhat_ = outer.what;
  waitingSinceNs_ = outer.waiting ? outer.sinceNs : 0;
}

void Watchdog::status(const std::string &text) {
  gEndTold = true; // the rank tells how it ends: onExit has nothing to add
  writeStatus(text.data(), text.size());
}

void Watchdog::run() {
  // 1e9 s (31 years) or more is "never" (int64 nanoseconds end at 292).
  double seconds = rank_->options.timeoutSeconds;
  int64_t limitNs = seconds >= 1e9 ? std::numeric_limits<int64_t>::max()
                                   : static_cast<int64_t>(seconds * 1e9);
  int64_t lastWake = nowNs();
  gFrozenAfterNs = std::max<int64_t>(limitNs / 2, 1000000000);
  gWatchdogWokeNs = lastWake;
  while (!stopping_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    int64_t now = nowNs(), asleep = now - lastWake;
    lastWake = now;
    // What the SIGTERM handler reads (tellIfFrozen).
    if (asleep > gFrozenAfterNs.load()) {
      gGapNs = asleep;
      gGapEndNs = now;
    }
    gWatchdogWokeNs = now;
    Snapshot s = snapshot();
    if (!s.waiting || now - s.sinceNs < limitNs)
      continue;
    const zbc_rt_program &p = *rank_->program;
    Message place;
    describePlace(place, rank_, s.op, s.what, true);
    // This thread slept 100 ms but woke far later: the process itself did
    // not run (SIGSTOP, a frozen container, a starved machine) for most of
    // the wait. The peer is not to blame: this rank is the one that stopped
    // answering, and its peers will have given up on it.
    if (asleep > gFrozenAfterNs.load()) {
      std::string message = fmt::format(
          "rank {}: this process did not run for {:.1f} s (stopped by a "
          "signal such as SIGSTOP, or starved of CPU){}: its peers will have "
          "given up waiting for it (--timeout {:g})",
          p.rank, double(asleep) / 1e9, std::string(place.text, place.size),
          rank_->options.timeoutSeconds);
      fmt::print(stderr, "zbc rank {}: error: {}\n", p.rank, message);
      std::fflush(stderr);
      status("failed: " + message + "\nfrozen: yes\n");
      ::_exit(1);
    }
    bool hasPeer = s.op >= 0 && p.ops[s.op].peer >= 0;
    std::string who =
        hasPeer ? fmt::format("rank {} is lost or hung", p.ops[s.op].peer)
        : rank_->startingUp ? std::string("a peer or the file system does not "
                                          "answer")
                            : std::string("a peer is lost or hung");
    std::string message = fmt::format(
        "rank {}: waited {:.0f} s{}: {} (--timeout {:g})", p.rank,
        double(nowNs() - s.sinceNs) / 1e9, std::string(place.text, place.size),
        who, rank_->options.timeoutSeconds);
    fmt::print(stderr, "zbc rank {}: error: {}\n", p.rank, message);
    std::fflush(stderr);
    // Whom it waited for, for zbc run to follow (Note [Lost ranks]): the
    // peer's rank in the job, or every rank (a collective).
    std::string waitsFor =
        hasPeer ? fmt::format("waits-for: {}\n",
                              rank_->transport
                                  ? rank_->transport->replica() * p.ranks +
                                        p.ops[s.op].peer
                                  : p.ops[s.op].peer)
                : std::string("waits-for: all\n");
    status("failed: " + message + "\n" + waitsFor);
    ::_exit(1);
  }
}

} // namespace zbc::rt
